"""Costs a project's history adds to what air does at every start and every second, against
the same with no history, in the same run. Goal (issue #28: costs flat as things grow): every
ratio <= 3x.

Run: ``.venv/bin/python bench/history.py [--runs N]``.

1. The workspace retention every start runs (``WorkspaceManager.gc``, from recovery), with
   1,000, 10,000 and 100,000 cleaned workspaces (each task that wrote in a worktree leaves
   one record) plus 10 kept ones, by a new ``WorkspaceManager`` (as a new process has). The
   first start after an upgrade moves records written beside the live ones into ``cleaned/``
   once; that start is not measured.
2. The console's poll of background runs (``Notifier.poll``, once a second), with 1,000 and
   10,000 finished, announced runs (``air run --detach`` leaves one record each) and one
   running: once the directory just changed (it is listed: the 2 s after a run starts, ends
   or is announced), and once it has been settled for a while (its mtime says nothing
   changed; the goal applies to this steady state).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).parents[1]))

from air.cli.background import Notifier, background_dir
from air.ipc.procs import read_identity
from air.workspace.manager import WorkspaceManager
from air.workspace.records import WorkspaceRecord

KEPT = 10
STAMP = "2026-01-01T00:00:00.000000Z"


async def _no_events(kind: str, payload: dict[str, object]) -> None:
    return None


def _project(tmp: str, cleaned: int) -> str:
    root = tempfile.mkdtemp(dir=tmp)
    area = os.path.join(root, ".air", "local", "workspaces")
    os.makedirs(area)
    for i in range(cleaned + KEPT):
        wid = f"ws_{i:08d}"
        rec = WorkspaceRecord(
            workspace_id=wid,
            strategy="worktree",
            path=os.path.join(area, wid),
            status="cleaned" if i >= KEPT else "active",
            task_id=f"t{i}",
            branch=f"air/ws/{wid}",
            base_commit="0" * 40,
            created_at=STAMP,
            merged_at=STAMP if i >= KEPT else None,
        )
        with open(os.path.join(area, f"{wid}.json"), "w", encoding="utf-8") as handle:
            json.dump(asdict(rec), handle)
    trio.run(WorkspaceManager(root, _no_events).gc)  # the first start after an upgrade
    return root


def _start(root: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        manager = WorkspaceManager(root, _no_events)  # what a new process starts with
        start = time.perf_counter()
        trio.run(manager.gc)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _background(tmp: str, finished: int) -> str:
    local = tempfile.mkdtemp(dir=tmp)
    directory = background_dir(local)
    directory.mkdir(parents=True)
    me = read_identity(os.getpid())
    runs = [(f"ses_{i:08d}", i < finished) for i in range(finished + 1)]
    for sid, done in runs:
        record = {"session_id": sid, "pid": me.pid, "pid_start_time": me.start_time}
        (directory / f"{sid}.json").write_text(json.dumps(record))
        if done:
            end = {"exit_code": 0, "word": "completed", "done": 1, "total": 1}
            (directory / f"{sid}.end.json").write_text(json.dumps(end))
            (directory / f"{sid}.notified").write_text("")
    return local


def _poll(local: str, runs: int, settled: bool) -> float:
    notifier = Notifier(local)
    notifier.poll(0.0)
    if settled:
        past = time.time_ns() - 10 * 10**9
        os.utime(background_dir(local), ns=(past, past))
    times = []
    for i in range(runs):
        start = time.perf_counter()
        notifier.poll(float(i + 1))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def background(runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        print(f"the console's poll of background runs, one running (median of {runs})")
        for settled in (False, True):
            base = _poll(_background(tmp, 0), runs, settled)
            label = "settled directory" if settled else "just changed     "
            print(f"  {label}, no finished run (baseline): {base * 1000:7.3f} ms")
            for finished in (1_000, 10_000):
                took = _poll(_background(tmp, finished), runs, settled)
                goal = "goal <= 3x" if settled else "a listing: the 2 s after a change only"
                print(
                    f"  {label}, {finished:6,d} finished: {took * 1000:7.3f} ms  ratio "
                    f"{took / base:6.2f}x  ({goal})"
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = _start(_project(tmp, 0), args.runs)
        print(f"retention at a start, {KEPT} kept workspaces (median of {args.runs})")
        print(f"  no cleaned workspace (baseline): {base * 1000:7.2f} ms")
        for cleaned in (1_000, 10_000, 100_000):
            took = _start(_project(tmp, cleaned), args.runs)
            print(
                f"  {cleaned:7,d} cleaned: {took * 1000:7.2f} ms  ratio {took / base:5.2f}x"
                "  (goal <= 3x)"
            )
    background(args.runs)


if __name__ == "__main__":
    main()
