"""The console in tmux: time to the first drawn frame, and redraws under an event storm.

Runs the real console in a private tmux server and measures, in the same run:

* time from starting the process to the first frame being on screen, median of ``--starts``
  starts, next to two baselines measured in the same rounds: ``python -c pass`` (a bare
  interpreter, no terminal) and the same interpreter printing one line in the same tmux
  (``python -c print(...)``): the ratio is what air adds to a bare Python start. Measured for
  the real ``air run PROJECT --cassette DIR`` (on a copy of examples/calc) twice: to its first
  frame (the HUD ``air · ...``: since IMPL-FRAME-5 drawn before the runtime's imports) and to the
  ready console (``· IDLE ·``: runtime, recovery, Main Agent, ProjectionStore); and for the
  scripted driver (``python -m air.testing.console_driver``: the console alone). With
  ``--compare TREE`` another checkout's ``air`` (its ``.venv/bin/python``, e.g. main) is timed
  in the same rounds. Goal: <= 300 ms to the first frame of ``air``.
* an event storm: 10,000 ephemeral events/s for 10 s into the ProjectionStore while the
  console runs; redraw interval p50/p99, render time p99, peak RSS and RSS growth after the
  first second. Goal: redraw p99 <= 50 ms.

How a frame is detected: one tmux control-mode client (``tmux -C``) follows the pane (its
attach block read first: a capture's answer is never mistaken for it); after
each ``%output`` notification (bytes the process wrote reached tmux's terminal) it asks for
``capture-pane`` through the same client and looks for the marker on the rendered screen. No
polling process is forked, so the measurement does not compete with the console for the CPU,
and the time is when the text was on tmux's screen (at most one capture late). The process
under test writes nothing extra.

Usage: ``python bench/console.py [--starts N] [--storm-seconds S] [--compare TREE]``.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO

REPO = Path(__file__).parents[1]
sys.path.insert(0, str(REPO))

from bench.procstat import TICK_MS, children, cpu_ticks  # noqa: E402


class _Tmux:
    def __init__(self) -> None:
        tmux = shutil.which("tmux")
        if tmux is None:
            sys.exit("bench/console.py needs tmux")
        self.tmux = tmux
        self.socket = f"air-bench-{uuid.uuid4().hex[:10]}"
        self.control: subprocess.Popen[bytes] | None = None
        self._buffer = b""

    def run(self, *args: str) -> str:
        return subprocess.run(
            [self.tmux, "-L", self.socket, *args], capture_output=True, text=True, timeout=10
        ).stdout

    def start(self, argv: list[str], done_file: Path, cwd: Path = REPO) -> float:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TMUX")}
        env["TERM"] = "xterm-256color"
        command = " ".join(f"'{a}'" for a in argv)
        shell = f"cd '{cwd}' && {command}; echo $? > '{done_file}'; sleep 600"
        started = time.monotonic()
        subprocess.run(
            [self.tmux, "-L", self.socket, "-f", "/dev/null", "new-session", "-d", "-s", "b",
             "-x", "140", "-y", "45", "sh", "-c", shell,
             ";", "set", "-g", "window-size", "manual"],  # the control client keeps 140x45
            check=True, env=env, timeout=10,
        )  # fmt: skip
        return started

    def _pipes(self) -> tuple[IO[bytes], IO[bytes]]:
        if self.control is None:
            self.control = subprocess.Popen(
                [self.tmux, "-L", self.socket, "-C", "attach", "-t", "b"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            )  # fmt: skip
            # The attach command's own %begin/%end block comes first: read past it, or the
            # first capture would take it for its answer ("" on screen) and, when the program
            # had printed everything before the attach, wait for an %output that never comes.
            for line in self._lines(time.monotonic() + 10):
                if line.startswith((b"%end", b"%error")):
                    break
        if self.control.stdin is None or self.control.stdout is None:
            raise SystemExit("no pipes to the tmux control client")
        return self.control.stdin, self.control.stdout

    def _lines(self, deadline: float) -> Iterator[bytes]:
        stdout = self._pipes()[1]
        while True:
            while b"\n" in self._buffer:
                line, self._buffer = self._buffer.split(b"\n", 1)
                yield line
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([stdout], [], [], left)[0]:
                screen = self.run("capture-pane", "-p", "-t", "b")
                raise SystemExit(f"bench/console.py: timed out; the screen:\n{screen}")
            chunk = os.read(stdout.fileno(), 65536)
            if not chunk:
                raise SystemExit("the tmux control client ended")
            self._buffer += chunk

    def _capture(self, lines: Iterator[bytes]) -> str:
        stdin = self._pipes()[0]
        stdin.write(b"capture-pane -p -t b\n")
        stdin.flush()
        out: list[bytes] = []
        inside = False
        for line in lines:
            if line.startswith(b"%begin"):
                inside = True
            elif inside and line.startswith((b"%end", b"%error")):
                return b"\n".join(out).decode("utf-8", "replace")
            elif inside:
                out.append(line)
        return ""

    def wait_for(self, text: str, timeout: float = 60.0) -> float:
        """The monotonic time ``text`` was first seen on the pane's screen."""
        lines = self._lines(time.monotonic() + timeout)
        while text not in self._capture(lines):
            for line in lines:  # the next output of the process
                if line.startswith(b"%output"):
                    break
        return time.monotonic()

    def close(self) -> None:
        self.run("kill-server")
        if self.control is not None:
            self.control.kill()
            self.control.wait()


def _first_screen(
    argv: list[str],
    markers: list[str],
    tmp: Path,
    quit_keys: list[str],
    cwd: Path = REPO,
    cpu: list[float] | None = None,
) -> list[float]:
    """Seconds from the start to each marker on screen (in order); ``cpu`` gets the CPU time
    (user + system, seconds) the process had used when each marker was seen."""
    tmux = _Tmux()
    done = tmp / f"{tmux.socket}.done"
    try:
        started = tmux.start(argv, done, cwd)
        shell = int(tmux.run("display", "-p", "-t", "b", "#{pane_pid}").strip() or 0)
        seen = []
        for marker in markers:
            seen.append(tmux.wait_for(marker) - started)
            if cpu is not None:
                cpu.append(sum(cpu_ticks(pid) for pid in children(shell)) * TICK_MS / 1000)
        for key in quit_keys:
            tmux.run("send-keys", "-t", "b", key)
        deadline = time.monotonic() + 30
        while quit_keys and not done.exists() and time.monotonic() < deadline:
            time.sleep(0.02)  # the next start does not overlap this one's shutdown
        return seen
    finally:
        tmux.close()


def _bare_start() -> float:
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.monotonic() - started


def _driver(*args: str) -> list[str]:
    return [sys.executable, "-m", "air.testing.console_driver", *args]


def _ms(values: list[float]) -> str:
    return f"median {statistics.median(values) * 1000:.0f} ms (min {min(values) * 1000:.0f})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--starts", type=int, default=10)
    parser.add_argument("--storm-seconds", type=float, default=10.0)
    parser.add_argument("--storm-rate", type=int, default=10_000)
    parser.add_argument("--compare", type=Path, help="another checkout (e.g. main) to time")
    args = parser.parse_args()
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        project = tmp / "calc"
        shutil.copytree(REPO / "examples" / "calc", project)
        cassettes = str(project / "cassettes")
        air = [sys.executable, "-m", "air", "run", str(project), "--cassette", cassettes]
        other: list[str] = []
        if args.compare is not None:
            other_project = tmp / "calc-other"
            shutil.copytree(REPO / "examples" / "calc", other_project)
            other = [str(args.compare / ".venv" / "bin" / "python"), "-m", "air", "run"]
            other += [str(other_project), "--cassette", str(other_project / "cassettes")]
        bare: list[float] = []
        baseline: list[float] = []
        first: list[float] = []
        ready: list[float] = []
        cpu_first: list[float] = []
        cpu_ready: list[float] = []
        console: list[float] = []
        other_first: list[float] = []
        other_ready: list[float] = []
        other_cpu: list[float] = []
        for i in range(args.starts):
            bare.append(_bare_start())
            (seen,) = _first_screen(
                [sys.executable, "-c", "print(7 * 111111)"], ["777777"], tmp, []
            )
            baseline.append(seen)
            cpu: list[float] = []
            frame, idle = _first_screen(air, ["air · ", "· IDLE ·"], tmp, ["C-d"], cpu=cpu)
            first.append(frame)
            ready.append(idle)
            cpu_first.append(cpu[0])
            cpu_ready.append(cpu[1])
            if other:
                cpu = []
                frame, idle = _first_screen(
                    other, ["air · ", "· IDLE ·"], tmp, ["C-d"], cwd=args.compare, cpu=cpu
                )
                other_cpu.append(cpu[0])
                other_first.append(frame)
                other_ready.append(idle)
            log = tmp / f"start{i}.jsonl"
            (seen,) = _first_screen(_driver("--log", str(log)), ["air · ses_console"], tmp, ["C-d"])
            console.append(seen)
            loads.append(os.getloadavg()[0])
        base = statistics.median(baseline)
        opened = statistics.median(first)
        print(f"start -> first drawn frame in tmux, {args.starts} starts each, same rounds:")
        print(f"  `python -c pass` (no terminal): {_ms(bare)}")
        print(f"  baseline `python -c print` in tmux: {_ms(baseline)}")
        print(
            f"  `air run PROJECT --cassette DIR` first frame: {_ms(first)}; "
            f"{opened / base:.2f}x baseline; goal 300 ms: {opened / 0.3:.2f}x"
        )
        print(
            f"  `air run PROJECT --cassette DIR` ready (· IDLE ·): {_ms(ready)}; "
            f"{statistics.median(ready) / base:.2f}x baseline; goal 600 ms: "
            f"{statistics.median(ready) / 0.6:.2f}x"
        )
        print(
            f"  CPU time of `air` (user + system) at its first frame: {_ms(cpu_first)}; "
            f"at ready: {_ms(cpu_ready)} (the clock tick is {TICK_MS:.0f} ms)"
        )
        if other:
            print(f"  {args.compare} air first frame: {_ms(other_first)}")
            print(f"  {args.compare} air ready (· IDLE ·): {_ms(other_ready)}")
            print(f"  {args.compare} air CPU time at its first frame: {_ms(other_cpu)}")
            print(
                f"  first frame this tree / {args.compare}: "
                f"{opened / statistics.median(other_first):.2f}x"
            )
        print(f"  scripted console driver, first frame: {_ms(console)}")
        print(
            f"  load average (1 min) during the starts: median {statistics.median(loads):.1f}, "
            f"max {max(loads):.1f} on {os.cpu_count()} cores"
        )

        stats_file = tmp / "storm.json"
        tmux = _Tmux()
        try:
            tmux.start(
                _driver("--log", str(tmp / "storm.jsonl"), "--stats", str(stats_file),
                        "--storm-rate", str(args.storm_rate),
                        "--storm-seconds", str(args.storm_seconds)),
                tmp / "storm.done",
            )  # fmt: skip
            deadline = time.monotonic() + args.storm_seconds * 10 + 30
            while not (tmp / "storm.done").exists() and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            tmux.close()
        stats = json.loads(stats_file.read_text())
        samples = stats["rss_samples_kib"]
        after_first = next((kib for t, kib in samples if t >= 1.0), samples[-1][1])
        growth = max(kib for _, kib in samples) - after_first
        rate = stats["storm_events"] / stats["storm_seconds"]
        p99 = stats["redraw_interval_p99_ms"]
        cpu = stats["first_frame_cpu_s"]
        print(f"  CPU time of the console process at its first frame: {cpu:.3f} s")
        print(
            f"storm: {stats['storm_events']} ephemeral events in {stats['storm_seconds']:.1f} s "
            f"({rate:.0f}/s), {stats['frames']} frames"
        )
        print(
            f"  redraw interval p50 {stats['redraw_interval_p50_ms']:.1f} ms, p99 {p99:.1f} ms "
            f"(goal 50 ms: {p99 / 50:.2f}x); render p99 {stats['render_p99_ms']:.1f} ms"
        )
        print(
            f"  peak RSS {stats['peak_rss_kib'] / 1024:.1f} MiB, growth after the first second "
            f"{growth / 1024:.2f} MiB; frames per event "
            f"{stats['frames'] / stats['storm_events']:.4f}"
        )
        print(f"  load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
