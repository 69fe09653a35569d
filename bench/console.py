"""The console in tmux: time to the first drawn frame, and redraws under an event storm.

Runs the real console (``python -m air.testing.console_driver``: ProjectionStore + TuiApp on
urwid's TrioEventLoop, scripted runtime) in a private tmux server and measures, in the same
run:

* time from starting the process to the first frame being on screen (polled with
  ``capture-pane``), median of several starts, against the baseline of the same interpreter
  printing one line (``python -c print(...)``) in the same tmux: the ratio is what air adds to
  a bare Python start. Measured twice: the real ``air run PROJECT --cassette DIR`` (the whole
  runtime: session DB, recovery, the Main Agent, the ProjectionStore; on a copy of
  examples/calc) and the scripted driver (the console alone). Goal: <= 300 ms for ``air``.
* an event storm: 10,000 ephemeral events/s for 10 s into the ProjectionStore while the
  console runs; redraw interval p50/p99, render time p99, peak RSS and RSS growth after the
  first second. Goal: redraw p99 <= 50 ms.

Usage: ``python bench/console.py [--starts N] [--storm-seconds S]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).parents[1]


class _Tmux:
    def __init__(self) -> None:
        tmux = shutil.which("tmux")
        if tmux is None:
            sys.exit("bench/console.py needs tmux")
        self.tmux = tmux
        self.socket = f"air-bench-{uuid.uuid4().hex[:10]}"

    def run(self, *args: str) -> str:
        return subprocess.run(
            [self.tmux, "-L", self.socket, *args], capture_output=True, text=True, timeout=10
        ).stdout

    def start(self, argv: list[str], done_file: Path) -> float:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TMUX")}
        env["TERM"] = "xterm-256color"
        command = " ".join(f"'{a}'" for a in argv)
        shell = f"cd '{REPO}' && {command}; echo $? > '{done_file}'; sleep 600"
        started = time.monotonic()
        subprocess.run(
            [self.tmux, "-L", self.socket, "-f", "/dev/null", "new-session", "-d", "-s", "b",
             "-x", "140", "-y", "45", "sh", "-c", shell],
            check=True, env=env, timeout=10,
        )  # fmt: skip
        return started

    def wait_for(self, text: str, timeout: float = 30.0) -> float:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.run("capture-pane", "-p", "-t", "b"):
                return time.monotonic()
            time.sleep(0.002)
        raise SystemExit(f"never saw {text!r}")

    def close(self) -> None:
        self.run("kill-server")


def _first_screen(argv: list[str], marker: str, tmp: Path, quit_keys: list[str]) -> float:
    tmux = _Tmux()
    done = tmp / f"{tmux.socket}.done"
    try:
        started = tmux.start(argv, done)
        seen = tmux.wait_for(marker)
        for key in quit_keys:
            tmux.run("send-keys", "-t", "b", key)
        return seen - started
    finally:
        tmux.close()


def _driver(*args: str) -> list[str]:
    return [sys.executable, "-m", "air.testing.console_driver", *args]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--storm-seconds", type=float, default=10.0)
    parser.add_argument("--storm-rate", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        project = tmp / "calc"
        shutil.copytree(REPO / "examples" / "calc", project)
        air = [sys.executable, "-m", "air", "run", str(project), "--cassette"]
        air.append(str(project / "cassettes"))
        baseline, console, real = [], [], []
        for i in range(args.starts):
            baseline.append(
                _first_screen([sys.executable, "-c", "print(7 * 111111)"], "777777", tmp, [])
            )
            real.append(_first_screen(air, "· IDLE ·", tmp, ["C-d"]))
            log = tmp / f"start{i}.jsonl"
            console.append(
                _first_screen(_driver("--log", str(log)), "air · ses_console", tmp, ["C-d"])
            )
        base, first = statistics.median(baseline), statistics.median(console)
        opened = statistics.median(real)
        print(
            f"`air run PROJECT --cassette DIR` start -> first drawn frame in tmux: median "
            f"{opened * 1000:.0f} ms over {args.starts} starts (goal 300 ms: {opened / 0.3:.2f}x)"
        )
        print(f"  ratio air / baseline: {opened / base:.2f}x")
        print(f"scripted console driver, first frame: median {first * 1000:.0f} ms")
        print(f"  baseline (python -c print in tmux): {base * 1000:.0f} ms")
        print(f"  ratio console / baseline: {first / base:.2f}x; goal 300 ms: {first / 0.3:.2f}x")

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
        after_first = next(kib for t, kib in samples if t >= 1.0)
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
