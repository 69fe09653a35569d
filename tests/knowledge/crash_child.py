"""The child process of the crash test: runs the scenario and SIGKILLs itself at one point.

Kill points are numbered in order over the run: after each external write (a debug-records.db
insert, a learned-memory.db promotion/archival transaction, a rule file rename) and before and
after each knowledge event (``debug.*`` / ``memory.*``). ``kill_at`` = 0 never kills (the
parent may then kill at a random delay instead).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import trio
from pydantic import BaseModel

from air.artifacts.knowledge import DebugKnowledgeStore, LearnedMemoryStore, OutboxRow
from air.contracts.artifact_records import DebugRecord, LearnedMemory
from air.contracts.event import RuntimeEvent
from air.contracts.task import TaskSpec
from air.contracts.worker_result import WorkerResult
from air.events.payloads import PAYLOADS
from tests.knowledge import scenario as sc

# built once in the forkserver, so a forked child does not pay for the deferred schema builds
_MODELS: list[type[BaseModel]] = [*PAYLOADS.values(), RuntimeEvent, TaskSpec, WorkerResult]
_MODELS += [DebugRecord, LearnedMemory, OutboxRow]
for _model in _MODELS:
    _model.model_rebuild(force=True)


def run_child(root: str, kill_at: int, ready: Any = None) -> None:
    points = 0

    def point() -> None:
        nonlocal points
        points += 1
        if points == kill_at:
            sc.kill_self()

    def after(fn: Any) -> Any:
        def wrapped(*args: Any, **kw: Any) -> Any:
            out = fn(*args, **kw)
            point()
            return out

        return wrapped

    DebugKnowledgeStore.insert_if_absent = after(DebugKnowledgeStore.insert_if_absent)  # type: ignore[method-assign]
    LearnedMemoryStore.record_action = after(LearnedMemoryStore.record_action)  # type: ignore[method-assign]
    real_replace = os.replace

    def replace(src: Any, dst: Any) -> None:
        real_replace(src, dst)
        point()

    os.replace = replace  # type: ignore[assignment]
    db, inner = sc.open_ledger(Path(root))
    ledger = sc.HookedLedger(inner, lambda _type, _payload, _stored: point())
    if ready is not None:
        ready.set()
    trio.run(sc.run_scenario, sc.service_for(Path(root), ledger))
    db.close()
    if kill_at < 0:
        # the reference run reports how many kill points there are
        raise SystemExit(min(points, 200))
