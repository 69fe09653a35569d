"""A task's whole-task deadline as supervision reports it (runner-contract invariants 14, 15,
31; IMPL-DEADLINE-1).

Owns: ``TimeoutPhase`` (``queued | starting | running``: where the deadline passed) and
``deadline_error`` (the ``timeout`` AirError that names the phase in its metadata, which the
``task.failed`` payload keeps and the RetryPlanner reads: no time is left for a retry), and
``phase_of``. No Trio, no I/O: the nursery and supervision both build this error.
"""

from __future__ import annotations

from typing import Literal, cast

from air.contracts.error import AirError, ErrorKind, Retryability, make_air_error

__all__ = ["PHASE_KEY", "TIMEOUT_PHASES", "TimeoutPhase", "deadline_error", "phase_of"]

TimeoutPhase = Literal["queued", "starting", "running"]
TIMEOUT_PHASES: tuple[TimeoutPhase, ...] = ("queued", "starting", "running")
PHASE_KEY = "timeout_phase"
"""The key of the phase in the error's metadata (and so in ``task.failed``)."""

_WHILE: dict[TimeoutPhase, str] = {
    "queued": "while it waited for a wave or a worker slot",
    "starting": "while its worker was starting",
    "running": "while its worker was running",
}


def deadline_error(phase: TimeoutPhase, timeout_s: float) -> AirError:
    """The error of a task whose deadline (``timeout_s`` from its creation) passed in ``phase``."""
    return make_air_error(
        kind=ErrorKind.TIMEOUT,
        message=f"the task reached its {timeout_s:g} s deadline {_WHILE[phase]}",
        retryability=Retryability.NEVER,
        user_action="Raise the task's hard_timeout_ms (it covers queueing, start-up, running "
        "and every retry), or lower --max-workers contention.",
        metadata={PHASE_KEY: phase, "timeout_s": timeout_s},
    )


def phase_of(error: AirError | None) -> TimeoutPhase | None:
    """The phase a deadline error names (None: not a deadline error)."""
    if error is None or error.kind != ErrorKind.TIMEOUT:
        return None
    phase = (error.metadata or {}).get(PHASE_KEY)
    return cast("TimeoutPhase", phase) if phase in TIMEOUT_PHASES else None
