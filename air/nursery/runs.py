"""Durable worker run records and orphan reaping (runner-contract invariant 9; IMPL-WRK-2).

Owns: ``RunRecordStore`` — one JSON file per worker run under ``.air/local/state/runs/``
({agent_id, task_id, session_id, pid, pid_start_time, boot_id, marker, state, started_at,
updated_at}), written to a temporary file and renamed — and ``reap_orphans``, which a later start
(recovery) calls to kill what a crashed parent left behind without ever signalling a recycled
PID.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Protocol

import trio

from air.contracts.ids import utc_now_iso
from air.ipc.procs import ProcessIdentity, find_marked, is_same_process, kill_tree

__all__ = ["ReapResult", "RunRecordStore", "reap_orphans"]


class _RunLike(Protocol):
    @property
    def marker(self) -> str: ...


@dataclass(frozen=True)
class ReapResult:
    agent_id: str
    state: str
    """``orphaned-dead`` (nothing was alive) or ``orphaned-killed``."""


class RunRecordStore:
    def __init__(self, root: str) -> None:
        self.root = root

    def _path(self, agent_id: str) -> str:
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in agent_id)
        return os.path.join(self.root, f"{safe}.json")

    def write(self, record: dict[str, Any]) -> None:
        os.makedirs(self.root, exist_ok=True)
        path = self._path(str(record["agent_id"]))
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(record, fh)
        os.replace(tmp, path)

    def read(self, agent_id: str) -> dict[str, Any] | None:
        try:
            with open(self._path(agent_id), encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def list(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        try:
            names = sorted(os.listdir(self.root))
        except OSError:
            return out
        for name in names:
            if name.endswith(".json"):
                rec = self.read(name[:-5])
                if rec is not None:
                    out.append(rec)
        return out

    def begin(self, run: Any) -> None:
        """Record a freshly spawned worker (``run`` has ``request``, ``marker`` and ``proc``)."""
        ident = run.proc.identity
        now = utc_now_iso()
        self.write(
            {
                "agent_id": run.request.agent_id,
                "task_id": run.request.task_spec.id,
                "session_id": run.request.session_id,
                "pid": ident.pid,
                "pid_start_time": ident.start_time,
                "boot_id": ident.boot_id,
                "marker": run.marker,
                "state": "running",
                "started_at": now,
                "updated_at": now,
            }
        )

    def finish(self, agent_id: str, state: str) -> None:
        rec = self.read(agent_id)
        if rec is None:
            return
        rec.update(state="terminal", terminal_state=state, updated_at=utc_now_iso())
        self.write(rec)


async def reap_orphans(
    root: str, *, live_agent_ids: frozenset[str] = frozenset(), grace_s: float = 3.0
) -> list[ReapResult]:
    """Kill the process trees of runs still marked ``running`` (their parent died).

    The group is signalled only if its leader is provably the recorded process (same boot id
    and ``/proc`` start time); descendants are found by their run marker. Each record is then
    marked terminal (``orphaned-dead`` / ``orphaned-killed``).
    """
    store = RunRecordStore(root)
    results: list[ReapResult] = []
    for rec in store.list():
        agent_id = str(rec.get("agent_id"))
        if rec.get("state") != "running" or agent_id in live_agent_ids:
            continue
        ident = ProcessIdentity(
            pid=int(rec.get("pid") or 0),
            start_time=rec.get("pid_start_time"),
            boot_id=rec.get("boot_id"),
        )
        marker = rec.get("marker")
        alive = (ident.pid > 0 and is_same_process(ident)) or bool(marker and find_marked(marker))
        if alive:
            await kill_tree(ident if ident.pid > 0 else None, marker=marker, grace_s=grace_s)
        state = "orphaned-killed" if alive else "orphaned-dead"
        rec.update(state="terminal", terminal_state=state, updated_at=utc_now_iso())
        store.write(rec)
        results.append(ReapResult(agent_id=agent_id, state=state))
        await trio.lowlevel.checkpoint()
    return results
