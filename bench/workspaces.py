"""Cost of the workspace retention every start runs (``WorkspaceManager.gc``, from recovery)
as a project's history of workspaces grows, against a project with none, in the same run.

Run: ``.venv/bin/python bench/workspaces.py [--runs N]``. For 1,000, 10,000 and 100,000
cleaned workspaces (each task that wrote in a worktree leaves one record) plus 10 kept ones,
a new ``WorkspaceManager`` (as a new process has) runs the retention; the median of N runs is
printed with its ratio to the same with no cleaned workspace. Goal (issue #28: costs flat as
things grow): every ratio <= 3x. The first start after an upgrade moves records written beside
the live ones into ``cleaned/`` once; that start is not measured.
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


if __name__ == "__main__":
    main()
