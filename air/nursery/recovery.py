"""Crash recovery on every start and on ``air resume`` (SDD §16.3 steps 1-8).

Owns: ``recover_session`` and ``RecoveryReport``. Steps:

1. load running / interrupted tasks and active agents and workspaces (the ledger's fold of the
   log, ``Ledger.state``, which the Scheduler goes on from);
2. check each active agent's process by PID *and* start time; a live one cannot be
   reconnected (its stdio belonged to the dead runtime), so its process group is reaped with
   the injected ``reap`` function (the WorkerManager's orphan reaper); either way
   ``agent.lost`` is recorded; a sandboxed command the dead runtime started in one of the
   session's workspaces and that outlived it is killed (IMPL-SBX-7);
3. every task the log still shows running is marked ``task.interrupted`` (resumable: it runs
   again from pending; a completed task is never touched, so it never runs twice) — but one
   whose worker had returned its result (``agent.completed`` holds it) stays running: its
   outcome is collected from there (``air.nursery.outcomes.collect_returned``), never run
   again, for its change may be in the project already: a merge the crash cut short is
   settled first (``WorkspaceManager.settle_merge``: landed, or air's own stopped merge
   ended, a copy back's temporary files dropped); one that cannot be (no manager, a tampered
   worktree) is interrupted, as is one that ran on another host and had not begun its merge
   (its files reach the local workspace after its end);
4. workspaces are preserved until a merge or cleanup decision (nothing is deleted here); an
   interrupted attempt's own workspace is abandoned (its retry gets a new one), and what
   another session's GC cleaned meanwhile is recorded in this session's log;
5. the orphan-artifact scan runs when a scanner is given;
6. the FK-off orphan scan runs when a checker is given (its report is kept);
7. workspace GC applies retention (merged 7 days, abandoned 3 days), at most
   ``GC_PER_START`` workspaces a start, the oldest first;
8. the scheduler queue is rebuilt: the report lists pending tasks and failed tasks that the
   RetryPlanner will look at again.

Idempotent: every step either records an event that makes the step a no-op next time, or
changes nothing; a crash in the middle and a second run converge on the same state.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from air.contracts.error import ErrorKind, make_air_error
from air.contracts.task import TaskStatus
from air.ipc.procs import kill_sandboxes
from air.nursery.ledger import Ledger, LedgerState, StoredAgent, ledger_view
from air.supervision.monitor import process_alive
from air.workspace.manager import GC_PER_START, WorkspaceManager

__all__ = ["Reaper", "RecoveryReport", "recover_session", "returned_result"]

log = logging.getLogger(__name__)

Reaper = Callable[[StoredAgent], Awaitable[bool]]
"""``await reap(agent)`` kills a live orphan's process group; True when it is gone."""


@dataclass(eq=False)
class RecoveryReport:
    """What ``recover_session`` found and did, step by step."""

    lost_agents: list[str] = field(default_factory=list)
    reaped_agents: list[str] = field(default_factory=list)
    reaped_commands: list[int] = field(default_factory=list)
    interrupted_tasks: list[str] = field(default_factory=list)
    returned_tasks: list[str] = field(default_factory=list)
    """Left running: their workers' results are collected, never run again (step 3)."""
    kept_workspaces: list[str] = field(default_factory=list)
    cleaned_workspaces: list[str] = field(default_factory=list)
    artifact_scan: Any = None
    orphan_report: Any = None
    pending_tasks: list[str] = field(default_factory=list)
    retry_candidates: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.lost_agents or self.interrupted_tasks or self.cleaned_workspaces)


async def recover_session(
    ledger: Ledger,
    *,
    workspaces: WorkspaceManager | None = None,
    reap: Reaper | None = None,
    artifact_scan: Callable[[], Any] | None = None,
    referential_check: Callable[[], Any] | None = None,
    alive: Callable[[StoredAgent], bool] | None = None,
    live_runtimes: Collection[int] = (),
) -> RecoveryReport:
    """Bring a session's log back to a consistent, resumable state (SDD §16.3).

    Args:
        ledger: the session's event log.
        workspaces: the project's WorkspaceManager (for step 7 GC); optional.
        reap: kills a live orphan worker's process group (step 2); optional.
        artifact_scan: the orphan-artifact scanner (step 5); optional.
        referential_check: the FK-off checker (step 6); optional.
        alive: liveness probe (default: PID + start time through ``/proc``).
        live_runtimes: pids of the project's live air processes, whose sandboxes step 2 spares
            (the project itself is every session's ``main`` workspace).

    Returns:
        What was found and done.
    """
    report = RecoveryReport()
    probe = alive or (lambda a: process_alive(a.pid, _start_time(a.pid_start_time)))
    # step 1, from the ledger's incremental fold: each event is read and folded once for the
    # recovery and the Scheduler after it, not again per step (IMPL-BOOT-13)
    state = ledger_view(ledger.state())

    # step 2: agents the log says are alive
    for agent in state.active_agents():
        if agent.pid is not None and probe(agent):
            gone = await reap(agent) if reap is not None else False
            if gone:
                report.reaped_agents.append(agent.agent_id)
            else:
                log.warning(
                    "orphan worker %s (pid %s) could not be reaped", agent.agent_id, agent.pid
                )
        await ledger.record(
            "agent.lost",
            {
                "agent_id": agent.agent_id,
                "task_id": agent.task_id,
                "error": make_air_error(
                    kind=ErrorKind.WORKER_CRASHED,
                    message="the runtime stopped while the agent ran",
                    user_action="Nothing: `air resume` re-runs the task.",
                ).model_dump(mode="json"),
            },
        )
        report.lost_agents.append(agent.agent_id)

    # step 2, the sandboxes: this process claimed the session, so a bwrap still running in one
    # of its workspaces lost its runtime (IMPL-SBX-7) — unless a live air process of the
    # project started it: the project itself is every session's `main` workspace
    paths = [str(rec["path"]) for rec in state.workspaces.values() if rec.get("path")]
    report.reaped_commands = kill_sandboxes(paths, spare_parents=live_runtimes)
    for pid in report.reaped_commands:
        log.warning("killed sandboxed command %s that outlived its runtime", pid)

    # step 3: tasks the log says are running
    returned = await _returned(ledger, state, workspaces)
    for task in state.tasks.values():
        if task.status != TaskStatus.RUNNING:
            continue
        if task.task_id in returned:
            report.returned_tasks.append(task.task_id)
            continue
        payload: dict[str, Any] = {
            "task_id": task.task_id,
            "agent_id": task.last_agent_id,
            "attempt_index": task.started_attempts,
            "reason": "the runtime stopped while the task ran",
            "resumable": True,
        }
        await ledger.record("task.interrupted", payload)
        report.interrupted_tasks.append(task.task_id)

    # step 4: keep every workspace that is not merged or cleaned; an interrupted attempt's
    # own workspace is set aside (abandoned: its files kept for the retention, which commits
    # its work to its branch), as its retry gets a new one; what another session's GC cleaned
    # meanwhile is recorded here, in this session's own log
    if workspaces is not None:
        for wid, rec in state.workspaces.items():
            if rec.get("status") == "active" and rec.get("strategy") != "main":
                if rec.get("task_id") not in returned:
                    await workspaces.set_aside(wid, "its attempt was interrupted")
        await workspaces.record_cleaned_elsewhere(
            {wid: str(rec.get("status")) for wid, rec in state.workspaces.items()}
        )
    report.kept_workspaces = sorted(
        wid
        for wid, rec in state.workspaces.items()
        if rec.get("last_event") not in ("workspace.merge.completed", "workspace.cleaned")
    )

    # steps 5 and 6
    if artifact_scan is not None:
        report.artifact_scan = artifact_scan()
    if referential_check is not None:
        report.orphan_report = referential_check()

    # step 7
    if workspaces is not None:
        report.cleaned_workspaces = await workspaces.gc(
            own=state.workspaces.keys(), limit=GC_PER_START
        )

    # step 8
    final = ledger_view(ledger.state())  # caught up with what steps 2-7 recorded
    report.pending_tasks = sorted(
        t.task_id
        for t in final.tasks.values()
        if t.status in (TaskStatus.PENDING, TaskStatus.INTERRUPTED)
    )
    report.retry_candidates = sorted(
        t.task_id for t in final.tasks.values() if t.status == TaskStatus.FAILED
    )
    return report


async def _returned(
    ledger: Ledger, state: LedgerState, workspaces: WorkspaceManager | None
) -> set[str]:
    """The running tasks whose last attempt's worker returned its result (step 3), with the
    merge of each settled: one whose workspace is merged, not yet merging, or whose stopped
    merge ``settle_merge`` could settle. Read by event type, only after a crash left some."""
    waiting = {
        t.task_id: t
        for t in state.tasks.values()
        if t.status == TaskStatus.RUNNING
        and t.last_agent_id in state.agents
        and state.agents[t.last_agent_id].status == "completed"
    }
    if not waiting:
        return set()
    merging = {e.payload.get("workspace_id") for e in ledger.history_of("workspace.merge.started")}
    found: set[str] = set()
    for task_id, task in waiting.items():
        result = returned_result(ledger, task_id, task.last_agent_id)
        workspace = state.workspaces.get(task.last_workspace_id or "")
        if result is None or workspace is None:
            continue
        wid, status = str(task.last_workspace_id), workspace.get("status")
        began = status == "merged" or wid in merging
        if not began and _remote(ledger, task_id, task.last_agent_id):
            continue  # its files may not have reached the local workspace
        if status == "merged" or (
            status == "active" and (workspace.get("strategy") == "main" or not began)
        ):
            found.add(task_id)  # landed, or not merging yet: its outcome goes on from there
        elif status == "active" and workspaces is not None:
            wrote = result.get("changed_files") or []
            if await workspaces.settle_merge(wid, wrote=wrote) is not None:
                found.add(task_id)  # landed now, or its stopped merge ended
    return found


def _remote(ledger: Ledger, task_id: str, agent_id: str | None) -> bool:
    """Whether ``agent_id`` worked on another host: its result's files are laid into the local
    workspace after its end (``air.nursery.remote_tasks``), before its merge begins: a task
    whose merge had not begun runs again."""
    return any(
        e.payload.get("agent_id") == agent_id and e.payload.get("remote")
        for e in ledger.history_of("agent.started", task_id=task_id)
    )


def returned_result(ledger: Ledger, task_id: str, agent_id: str | None) -> dict[str, Any] | None:
    """The result ``agent_id``'s worker returned for ``task_id`` (its ``agent.completed``), or
    None (a log of before it was kept there)."""
    for event in reversed(ledger.history_of("agent.completed", task_id=task_id)):
        if event.payload.get("agent_id") == agent_id:
            result = event.payload.get("worker_result")
            return result if isinstance(result, dict) else None
    return None


def _start_time(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None
