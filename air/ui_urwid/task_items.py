"""What the detail pane shows of one task, indexed by task once per projection snapshot.

Owns ``TaskItems`` (a task's tool runs, command runs, diffs, evidence and blockers) and
``TaskIndex``: ``items(snapshot, task_id)`` groups the snapshot's lists by task the first time
a snapshot is asked about, and answers from that grouping until the snapshot changes (the
projection builds a new one only when it changed). A frame, a scroll or the elapsed-time tick
then costs what the selected task holds, not what the whole session holds.
"""

from __future__ import annotations

from typing import NamedTuple

from air.contracts.ui import (
    BlockerProjection,
    CommandRunProjection,
    DiffProjection,
    EvidenceProjection,
    ProjectionSnapshot,
    ToolRunProjection,
)

__all__ = ["TaskIndex", "TaskItems"]


class TaskItems(NamedTuple):
    """One task's rows of the snapshot's lists, in their order."""

    tool_runs: tuple[ToolRunProjection, ...] = ()
    command_runs: tuple[CommandRunProjection, ...] = ()
    diffs: tuple[DiffProjection, ...] = ()
    evidence: tuple[EvidenceProjection, ...] = ()
    blockers: tuple[BlockerProjection, ...] = ()


_NONE = TaskItems()


def group_by_task(snapshot: ProjectionSnapshot) -> dict[str, TaskItems]:
    """Every task's items, in one pass over each list."""
    tools: dict[str, list[ToolRunProjection]] = {}
    commands: dict[str, list[CommandRunProjection]] = {}
    diffs: dict[str, list[DiffProjection]] = {}
    evidence: dict[str, list[EvidenceProjection]] = {}
    blockers: dict[str, list[BlockerProjection]] = {}
    for run in snapshot.tool_runs:
        if run.task_id is not None:
            tools.setdefault(run.task_id, []).append(run)
    for cmd in snapshot.command_runs:
        if cmd.task_id is not None:
            commands.setdefault(cmd.task_id, []).append(cmd)
    for diff in snapshot.diffs:
        if diff.task_id is not None:
            diffs.setdefault(diff.task_id, []).append(diff)
    for ev in snapshot.evidence:
        if ev.task_id is not None:
            evidence.setdefault(ev.task_id, []).append(ev)
    for blocker in snapshot.blockers:
        blockers.setdefault(blocker.task_id, []).append(blocker)
    tasks = {*tools, *commands, *diffs, *evidence, *blockers}
    return {
        t: TaskItems(
            tuple(tools.get(t, ())),
            tuple(commands.get(t, ())),
            tuple(diffs.get(t, ())),
            tuple(evidence.get(t, ())),
            tuple(blockers.get(t, ())),
        )
        for t in tasks
    }


class TaskIndex:
    """``group_by_task`` of the last snapshot asked about."""

    def __init__(self) -> None:
        self._snapshot: ProjectionSnapshot | None = None
        self._groups: dict[str, TaskItems] = {}

    def items(self, snapshot: ProjectionSnapshot, task_id: str | None) -> TaskItems:
        if snapshot is not self._snapshot:
            self._snapshot = snapshot
            self._groups = group_by_task(snapshot)
        return self._groups.get(task_id, _NONE) if task_id is not None else _NONE
