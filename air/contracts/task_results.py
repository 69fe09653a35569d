"""The results of the Scheduler's steps (SDD §3 merges them into ``air.contracts.task``):
``SchedulerRunResult`` (a run), ``RetryDecision`` (a failed attempt), ``MergeResult`` (a
workspace merged back).

Its users import it where they use one of its models (IMPL-BOOT-12).
"""

from typing import Literal

from pydantic import Field

from air.contracts.ids import Contract, SessionID, TaskID, WorkspaceID, empty_list
from air.contracts.task import RetryAction

__all__ = ["LEFT_OUT_NAMES", "MergeResult", "RetryDecision", "SchedulerRunResult"]

LEFT_OUT_NAMES = 20
"""How many of the entries a merge left out because git ignores them are named (all are
counted)."""


class MergeResult(Contract):
    workspace_id: WorkspaceID
    status: Literal["merged", "conflicted", "nothing_to_merge"]
    merge_commit: str | None = None
    kept_branch: str | None = None
    conflicted_paths: list[str] = Field(default_factory=empty_list)
    left_out: list[str] = Field(default_factory=empty_list, max_length=LEFT_OUT_NAMES)
    """The files the task's tools wrote that git ignores, so nothing merged them (a ``.env``,
    a local settings file): the first ``LEFT_OUT_NAMES``."""
    left_out_count: int = 0
    left_out_dir: str | None = None
    """Where a copy of them is kept (``air.workspace.left_out``)."""


class SchedulerRunResult(Contract):
    session_id: SessionID
    status: Literal["completed", "blocked", "cancelled"]
    completed_task_ids: list[TaskID] = Field(default_factory=empty_list)
    failed_task_ids: list[TaskID] = Field(default_factory=empty_list)
    blocked_task_ids: list[TaskID] = Field(default_factory=empty_list)
    cancelled_task_ids: list[TaskID] = Field(default_factory=empty_list)
    waves: int = 0


class RetryDecision(Contract):
    action: RetryAction
    reason: str
    changed_dimension: Literal[
        "none", "model", "context", "command", "serialization", "debugger"
    ] = "none"
