"""Command output benchmark: ``shell.run`` vs the same command in bare bwrap, same run.

Run: ``.venv/bin/python bench/output.py [--sizes 2M,100M,1G] [--rounds R] [--command CMD]``.

For each size N, the command (default: ``base64 -w 100 /dev/urandom | head -c N``: log-like
lines, random text) runs

- bare: in the same bubblewrap sandbox (``open_sandboxed``: same flags, limits and
  environment), its stdout piped to a plain reader that writes it to a file, what any capture
  of a command's output needs at least;
- through air: ``shell.run`` through the real ToolRegistry, PermissionEngine and sandbox, into a
  real session (events in SQLite, the log artifact), with two registered secret values, as a
  task's command would.

Prints each side's median seconds and MB/s, the ratio (air's throughput over bare's; goal
>= 0.5x at every size), and air's peak RSS while the command ran (sampled every 20 ms from
``/proc/self/status``; goal: bounded, the same for 1 GB as for 100 MB), with the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import trio

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from air.contracts.tool_runs import ToolExecutionContext  # noqa: E402
from air.security.engine import PermissionEngine  # noqa: E402
from air.security.paths import PathClassifier  # noqa: E402
from air.security.redact import SecretRedactor  # noqa: E402
from air.session.manager import SessionManager  # noqa: E402
from air.session.project import ProjectStore  # noqa: E402
from air.tools import ToolRegistry, register_builtin_tools  # noqa: E402
from air.tools.sandbox import sandbox_environment  # noqa: E402
from air.tools.sandbox_spawn import open_sandboxed  # noqa: E402

DEFAULT_COMMAND = "base64 -w 100 /dev/urandom | head -c {size}"
UNITS = {"K": 1000, "M": 1000**2, "G": 1000**3}


def parse_size(text: str) -> int:
    text = text.strip().upper()
    if text[-1:] in UNITS:
        return int(float(text[:-1]) * UNITS[text[-1]])
    return int(text)


def rss_kib() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class PeakRss:
    """The largest RSS of this process while it is entered."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, rss_kib())

    def __enter__(self) -> PeakRss:
        self.peak = rss_kib()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_kib())


class Rig:
    def __init__(self, base: Path) -> None:
        self.root = base / "proj"
        self.root.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=self.root, check=True)
        home = base / "home"
        home.mkdir()
        self.out = base / "bare.log"
        project = ProjectStore().initialize(self.root)
        self.session = SessionManager().open_session(project)
        redactor = SecretRedactor(["bench-secret-value-1", "another-bench-secret-2"])
        engine = PermissionEngine(
            classifier=PathClassifier(home=str(home)),
            redactor=redactor,
            sink=self.session.ingestor.ingest,
        )
        engine.headless_allow_ask = True
        self.registry = ToolRegistry(
            engine=engine,
            recorder=self.session.ingestor,
            artifacts=self.session.artifacts,
            redactor=redactor,
        )
        self.runner = register_builtin_tools(self.registry)
        self.ctx = ToolExecutionContext(
            session_id=self.session.session_id,
            task_id="bench",
            agent_id="ag_bench",
            project_root=str(self.root),
            workspace_root=str(self.root),
            headless=True,
        )

    def bare(self, command: str) -> tuple[float, int]:
        """Seconds and bytes of ``command`` in the sandbox, its stdout read into a file."""
        root = str(self.root)
        read, write = os.pipe()
        started = time.perf_counter()
        try:
            proc = open_sandboxed(
                self.runner,
                command,
                workspace=root,
                cwd=root,
                network=False,
                env=sandbox_environment(os.environ),
                stdout=write,
                stderr=subprocess.DEVNULL,
            )
        finally:
            os.close(write)
        total = 0
        with open(self.out, "wb") as sink:
            while chunk := os.read(read, 1 << 20):
                sink.write(chunk)
                total += len(chunk)
        os.close(read)
        proc.wait()
        took = time.perf_counter() - started
        os.unlink(self.out)
        return took, total

    def air(self, command: str) -> tuple[float, int, int]:
        """Seconds, stored bytes and peak RSS (KiB) of ``command`` through ``shell.run``."""

        async def call() -> tuple[float, int]:
            started = time.perf_counter()
            result = await self.registry.call(
                "shell.run", {"command": command, "timeout_s": 3600}, self.ctx
            )
            took = time.perf_counter() - started
            assert result.status == "ok", result.error
            assert isinstance(result.output, dict)
            stored = 0
            for log in [a for a in result.artifacts if a.path.endswith("-stdout.log")]:
                os.unlink(log.path)
                stored += log.size_bytes or 0
            return took, stored

        with PeakRss() as rss:
            took, size = trio.run(call)
        return took, size, rss.peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2M,100M,1G", help="output sizes, e.g. 2M,100M,1G")
    parser.add_argument("--rounds", type=int, default=0, help="runs per side (0: by size)")
    parser.add_argument("--command", default=DEFAULT_COMMAND, help="{size} is replaced")
    args = parser.parse_args()
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        rig = Rig(Path(tmp))
        try:
            rig.runner.check_available()
            print(f"command: {args.command}")
            print(f"load average at start: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)")
            print(f"air's RSS before the first run: {rss_kib() / 1024:.0f} MiB")
            for size in sizes:
                command = args.command.format(size=size)
                rounds = args.rounds or (
                    5 if size <= 10 * UNITS["M"] else 3 if size <= UNITS["G"] // 2 else 1
                )
                bare: list[float] = []
                air: list[float] = []
                peaks: list[int] = []
                for _ in range(rounds):
                    took, total = rig.bare(command)
                    bare.append(took)
                    took, stored, peak = rig.air(command)
                    air.append(took)
                    peaks.append(peak)
                b, a = statistics.median(bare), statistics.median(air)
                mb = total / 1e6
                print(
                    f"{mb:8.1f} MB x{rounds}: bare {b:7.3f} s ({mb / b:6.1f} MB/s)  "
                    f"air {a:7.3f} s ({mb / a:6.1f} MB/s)  ratio {b / a:5.2f}x (goal >= 0.5x)  "
                    f"air peak RSS {max(peaks) / 1024:5.0f} MiB  stored {stored / 1e6:.1f} MB  "
                    f"load {os.getloadavg()[0]:.2f}"
                )
        finally:
            rig.session.close()


if __name__ == "__main__":
    main()
