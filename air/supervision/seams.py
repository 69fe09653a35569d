"""The seam between the Scheduler and worker supervision.

Owns: ``SuperviseRequest`` and the ``TaskRunner`` protocol. What a runner returns,
``TaskOutcome``, lives in ``air.supervision.task_outcome`` (imported by who builds or reads one:
a parent builds no outcome, and no ``WorkerResult``, before its first model request;
IMPL-BOOT-12). The Scheduler runs
``await runner.supervise(request)`` for each task of a wave, inside that task's own cancel
scope; the real runner (``WorkerManager``) spawns a worker subprocess, the fake one
(``air.testing``) plays a script over memory streams under virtual time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from air.contracts.ids import AgentID, Contract, JsonObject, SessionID
from air.contracts.task import TaskSpec, WorkspaceRef

if TYPE_CHECKING:
    from air.supervision.task_outcome import TaskOutcome

__all__ = ["SuperviseRequest", "TaskRunner"]


class SuperviseRequest(Contract):
    session_id: SessionID
    project_id: str
    project_root: str
    task_spec: TaskSpec
    agent_id: AgentID
    attempt_index: int
    workspace: WorkspaceRef
    headless: bool = True
    deadline_at: float | None = None
    """The task's whole-task deadline on this process's Trio clock (IMPL-DEADLINE-1): waiting
    for a slot, the start and the running phase end by it; None: the hard timeout counts from
    the handshake."""
    timeout_s: float | None = None
    """The task's whole timeout the deadline was made from (for the error's message)."""
    depth: int = 0
    """How deep the task sits under top-level tasks (its machine-wide slot tier)."""
    resume_from: JsonObject | None = None
    """The last checkpoint of the attempt before, which ended without a result (IMPL-CKPT-1)."""


class TaskRunner(Protocol):
    async def supervise(self, request: SuperviseRequest) -> TaskOutcome:
        """Run one attempt of a task to its end and return the outcome.

        Expected failures (crash, protocol error, stall, hard timeout, non-zero exit) are
        returned as a ``TaskOutcome``. If the caller's scope is cancelled, the worker's whole
        process group is killed under a bounded shield, ``agent.cancelled`` is recorded, and
        ``trio.Cancelled`` propagates.
        """
        ...
