"""A long task: turns per second by quarter of one task of N ``fs.read`` turns (issue 28 item 3).

``air run --headless`` runs one review task whose model (a strict local Anthropic server, in a
process of its own: ``air.testing.strict_servers.StrictServer``, every request checked the way
the real API checks it) answers N turns each calling ``fs.read`` on a small file, then the
review's result. The server stamps each request as it arrives; the turns of each quarter of the
task, over the time that quarter took, are its rate. It also prints the CPU time per turn of the
air parent and its worker (``/proc``, 10 ms ticks) and of the server, by quarter: the server
decodes and checks only the messages new to it, but still reads and compares the whole body at
every request, a cost that grows with the conversation. So it also prints air's own wall time
per turn (from the end of the server's reply to the next request: the parent taking the reply
in, the worker's call, the next request) beside the server's (handling one request). The
baseline is the task's own first quarter: goal, the last quarter >= 0.8x the first (turn 600
costs what turn 10 costs).

Run: ``.venv/bin/python bench/turns.py [--turns 600] [--rounds 3] [--profile OUT.prof]``
(``--profile``: the air parent runs under cProfile and writes its stats to OUT.prof).
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.procstat import TICK_MS, children, cpu_ticks  # noqa: E402

KEY = "zq81-bench-turns-key-5b7e2c9d0a1f"
MODEL = "claude-turns"
NOTES = "".join(f"line {i}: the notes say ship it, nothing more to add.\n" for i in range(8))


def _batch(turns: int) -> str:
    return (
        "version: 1\ntasks:\n  - id: long-review\n    type: review\n    title: Read notes\n"
        "    description: Read notes.txt again and again, then say whether it ships.\n"
        f"    constraints: {{max_turns: {min(1000, turns + 50)}, soft_timeout_ms: 3600000,"
        " hard_timeout_ms: 3600000}\n"
    )


def _models_yaml(url: str) -> str:
    return (
        f"default: local/{MODEL}\nproviders:\n  local:\n    kind: anthropic\n"
        f"    base_url: {url}\n    auth_ref: AIR_BENCH_KEY\n    models:\n"
        f"      {MODEL}: {{context_window: 1000000, max_output_tokens: 4096}}\n"
    )


def _answered(messages: list[Any]) -> int:
    """How many turns the model answered: the number in its last ``tool_use`` id (read from the
    end, so that this script's own time per request does not grow with the conversation)."""
    for message in reversed(messages):
        if message["role"] == "assistant":
            for block in message["content"]:
                if block.get("type") == "tool_use":
                    return int(block["id"].removeprefix("toolu_")) + 1
    return 0


def serve(turns: int, stamps: str, ready: str) -> None:
    """The server process: answer ``turns`` fs.read turns, then the verdict; append each
    request's arrival time (``time.monotonic``) to ``stamps``; write the URL to ``ready``."""
    from air.testing.strict_servers import StrictServer
    from air.testing.wire_replies import Reply, blocks_sse

    verdict = json.dumps(
        {"status": "completed", "summary": "ships", "result": {"verdict": "approved"}}
    )
    out = open(stamps, "a", buffering=1)  # open for the process's life
    pids: list[int] = []

    def model(wire: str, body: dict[str, Any]) -> Reply:
        if not pids:
            pids.append(int(Path(ready).with_name("pid").read_text()))
            pids.extend(children(pids[0]))
        cpu = f"{cpu_ticks(pids[0])} {sum(cpu_ticks(pid) for pid in pids[1:])}"
        cpu += f" {time.process_time()}"
        out.write(f"{time.monotonic()} {cpu}\n")
        number = _answered(body["messages"])
        offered = [t["name"] for t in body.get("tools") or []]
        if number < turns:
            name = next(n for n in offered if n in ("fs.read", "fs_read"))
            args = json.dumps({"path": "notes.txt"})
            blocks: list[Any] = [("tool_use", (f"toolu_{number}", name, [args]))]
            stop = "tool_use"
        else:
            blocks = [("text", [f"Fine.\n```json:result\n{verdict}\n```\n"])]
            stop = "end_turn"
        return Reply(
            chunks=blocks_sse(
                wire,
                blocks,
                stop,
                input_tokens=11,
                output_tokens=7,
                model=MODEL,
                message_id=f"msg_{number}",
            )
        )

    # when each request's handling began and ended: air's own time per turn is the gap from one
    # reply's end to the next request. Air keeps its connection, so a handler waits for the next
    # request line: the handling begins when it arrives (the request is being sent).
    spans = open(stamps + ".spans", "a", buffering=1)
    handle = http.server.BaseHTTPRequestHandler.handle_one_request
    parse = http.server.BaseHTTPRequestHandler.parse_request
    began: list[float] = []

    def arrived(self: http.server.BaseHTTPRequestHandler) -> bool:
        began.append(time.monotonic())
        return parse(self)

    def timed(self: http.server.BaseHTTPRequestHandler) -> None:
        began.clear()
        handle(self)
        if began and getattr(self, "command", None) == "POST":
            spans.write(f"{began[0]} {time.monotonic()}\n")

    http.server.BaseHTTPRequestHandler.parse_request = arrived  # type: ignore[method-assign]
    http.server.BaseHTTPRequestHandler.handle_one_request = timed  # type: ignore[method-assign]
    server = StrictServer(api_key=KEY, model=model)
    with server:
        Path(ready).write_text(server.url)
        while True:
            time.sleep(3600)


def one_run(turns: int, tmp: Path, profile: str | None) -> list[list[float]]:
    """One task of ``turns`` turns; the arrival times of its model requests."""
    from tests.trusted import trust_project

    root, home = tmp / "proj", tmp / "home"
    (root / ".air" / "shared").mkdir(parents=True)
    home.mkdir()
    (root / "notes.txt").write_text(NOTES)
    (root / "batch.yaml").write_text(_batch(turns))
    stamps, ready = tmp / "stamps", tmp / "ready"
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(turns), str(stamps), str(ready)]
    )
    try:
        while not ready.exists() or not ready.read_text():
            time.sleep(0.02)
        (root / ".air" / "shared" / "models.yaml").write_text(_models_yaml(ready.read_text()))
        trust_project(root, home)
        env = {**os.environ, "HOME": str(home), "AIR_BENCH_KEY": KEY}
        air = [sys.executable, "-m", "air.cli"]
        if profile:
            air = [sys.executable, "-m", "cProfile", "-o", profile, "-m", "air.cli"]
        proc = subprocess.Popen(
            [*air, "run", "--headless", "batch.yaml", "--json"],
            cwd=root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        (tmp / "pid").write_text(str(proc.pid))
        _, stderr = proc.communicate(timeout=3600)
    finally:
        server.terminate()
        server.wait()
    if proc.returncode != 0 or "done 1/1" not in stderr:
        raise SystemExit(f"the run failed ({proc.returncode}):\n{stderr[-3000:]}")
    rows = [[float(x) for x in line.split()] for line in stamps.read_text().splitlines()]
    spans = [
        [float(x) for x in line.split()]
        for line in Path(f"{stamps}.spans").read_text().splitlines()
    ]
    if len(rows) != turns + 1 or len(spans) != turns + 1:
        raise SystemExit(f"{len(rows)} requests ({len(spans)} spans) for {turns} turns + verdict")
    return [row + span for row, span in zip(rows, spans, strict=True)]


def quarters(rows: list[list[float]]) -> list[tuple[float, float, float, float, float, float]]:
    """Each quarter of the task (a turn ends at the next request): turns per second; the CPU ms
    per turn of the air parent, of its worker and of the server; the wall ms per turn of air
    (from the server's reply to the next request) and of the server (handling a request)."""
    gaps = len(rows) - 1
    out = []
    for q in range(4):
        first, last = q * gaps // 4, (q + 1) * gaps // 4
        a, b = rows[first], rows[last]
        n = last - first
        air = sum(rows[k + 1][4] - rows[k][5] for k in range(first, last))
        served = sum(rows[k][5] - rows[k][4] for k in range(first, last))
        out.append(
            (
                n / (b[0] - a[0]),
                (b[1] - a[1]) * TICK_MS / n,
                (b[2] - a[2]) * TICK_MS / n,
                (b[3] - a[3]) * 1000 / n,
                air * 1000 / n,
                served * 1000 / n,
            )
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", help="write the air parent's cProfile stats here")
    parser.add_argument("--serve", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(int(args.serve[0]), args.serve[1], args.serve[2])
        return
    ratios: list[float] = []
    cpu_ratios: list[float] = []
    air_ratios: list[float] = []
    print(f"cores: {os.cpu_count()}  turns: {args.turns}  load: {os.getloadavg()[0]:.1f}")
    for number in range(args.rounds):
        with tempfile.TemporaryDirectory() as tmp:
            qs = quarters(one_run(args.turns, Path(tmp), args.profile))
        ratios.append(qs[3][0] / qs[0][0])
        air_ratios.append(qs[0][4] / qs[3][4])
        cpu_ratios.append(qs[0][1] / qs[3][1] if qs[3][1] else float("nan"))
        print(
            f"run {number + 1}: turns/s by quarter "
            + " -> ".join(f"{q[0]:5.1f}" for q in qs)
            + f"  last/first {ratios[-1]:4.2f}x  load {os.getloadavg()[0]:.1f}"
        )
        print(
            "  CPU ms per turn, parent: "
            + " -> ".join(f"{q[1]:5.2f}" for q in qs)
            + "  worker: "
            + " -> ".join(f"{q[2]:5.2f}" for q in qs)
            + "  server: "
            + " -> ".join(f"{q[3]:5.2f}" for q in qs)
        )
        print(
            "  wall ms per turn, air (reply to next request): "
            + " -> ".join(f"{q[4]:5.2f}" for q in qs)
            + f"  ({air_ratios[-1]:4.2f}x)  server (handling): "
            + " -> ".join(f"{q[5]:5.2f}" for q in qs)
        )
    print(
        f"median last/first: turns/s {statistics.median(ratios):4.2f}x (goal >= 0.8x);"
        f" air's own turns/s (without the server's handling) {statistics.median(air_ratios):4.2f}x;"
        f" parent CPU per turn, first/last {statistics.median(cpu_ratios):4.2f}x"
    )


if __name__ == "__main__":
    main()
