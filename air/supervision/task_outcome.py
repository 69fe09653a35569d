"""``TaskOutcome``: how one supervised attempt ended (the value a ``TaskRunner`` returns).

A module of its own, beside the seam (``air.supervision.seams``), so
that a process builds the model (and imports ``WorkerResult``, which its ``result`` field needs
when pydantic builds it) only when an attempt ends, not when it imports the seam (IMPL-BOOT-12).
"""

from typing import Literal

from air.contracts.error import AirError
from air.contracts.ids import AgentID, Contract
from air.contracts.worker_result import WorkerResult
from air.supervision.deadline import TimeoutPhase

__all__ = ["OutcomeKind", "TaskOutcome"]

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
    timeout_phase: TimeoutPhase | None = None
    """Where the task's deadline passed (``hard_timeout`` only; invariants 14-15)."""
