"""The seam between the Scheduler and worker supervision.

Owns: ``SuperviseRequest``, ``TaskOutcome`` and the ``TaskRunner`` protocol. The Scheduler runs
``await runner.supervise(request)`` for each task of a wave, inside that task's own cancel
scope; the real runner (``WorkerManager``) spawns a worker subprocess, the fake one
(``air.testing``) plays a script over memory streams under virtual time.
"""

from __future__ import annotations

from typing import Literal, Protocol

from air.contracts import (
    AgentID,
    AirError,
    Contract,
    SessionID,
    TaskSpec,
    WorkerResult,
    WorkspaceRef,
)

__all__ = ["OutcomeKind", "SuperviseRequest", "TaskOutcome", "TaskRunner"]


class SuperviseRequest(Contract):
    session_id: SessionID
    project_id: str
    project_root: str
    task_spec: TaskSpec
    agent_id: AgentID
    attempt_index: int
    workspace: WorkspaceRef
    headless: bool = True


OutcomeKind = Literal[
    "result",
    "crashed",
    "protocol_error",
    "spawn_error",
    "stalled",
    "hard_timeout",
    "permission_error",
]


class TaskOutcome(Contract):
    """How one supervised attempt ended. Failures are values, never exceptions."""

    task_id: str
    agent_id: AgentID
    kind: OutcomeKind
    result: WorkerResult | None = None
    error: AirError | None = None
    exit_code: int | None = None
    transient: bool = False
    """Runner-contract invariant 21: a retry of the same spec may succeed."""


class TaskRunner(Protocol):
    async def supervise(self, request: SuperviseRequest) -> TaskOutcome:
        """Run one attempt of a task to its end and return the outcome.

        Expected failures (crash, protocol error, stall, hard timeout, non-zero exit) are
        returned as a ``TaskOutcome``. If the caller's scope is cancelled, the worker's whole
        process group is killed under a bounded shield, ``agent.cancelled`` is recorded, and
        ``trio.Cancelled`` propagates.
        """
        ...
