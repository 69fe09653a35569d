"""The Main Agent's state machine (SDD §20.1): states, triggers, the transition table, the reducer.

Owns ``MainAgentState`` (the twelve states of baselines §A.16), ``MainAgentTrigger``,
``TRANSITIONS`` — the only legal ``(state, trigger) -> state`` moves — and ``next_state``, the
pure reducer that refuses every other move with an ``AirException`` (``system_error``: an
illegal transition is a bug of the caller, never user input). Every transition the MainAgent
takes is recorded as one durable ``main_agent.state.changed`` event (IMPL-AGENT-1). The edges
the SDD diagram leaves implicit (a failed or interrupted model turn, a rejected revision while
work runs, the Architecture Designer's silent_continue) are listed in IMPL-AGENT-2 and
IMPL-ARCH-2.
"""

from __future__ import annotations

from enum import StrEnum

from air.contracts.error import AirException, ErrorKind

__all__ = [
    "STATE_EVENT",
    "TRANSITIONS",
    "MainAgentState",
    "MainAgentTrigger",
    "next_state",
    "transition_payload",
]

STATE_EVENT = "main_agent.state.changed"
"""The durable event recorded for every transition."""


class MainAgentState(StrEnum):
    IDLE = "IDLE"
    CLASSIFYING = "CLASSIFYING"
    ANSWERING = "ANSWERING"
    DELEGATING = "DELEGATING"
    DIRECT_MODE = "DIRECT_MODE"
    SCHEDULING = "SCHEDULING"
    ARCHITECTURE_DESIGNING = "ARCHITECTURE_DESIGNING"
    CONFIRMING = "CONFIRMING"
    EXECUTING = "EXECUTING"
    INTERRUPTING = "INTERRUPTING"
    ARCHITECTURE_REVISING = "ARCHITECTURE_REVISING"
    SUMMARIZING = "SUMMARIZING"


class MainAgentTrigger(StrEnum):
    USER_MESSAGE = "user_message"
    """user.message.created while idle."""
    CHAT = "chat"
    TASK = "task"
    DIRECT = "direct"
    ANSWERED = "answered"
    """The chat answer ended (complete, failed or interrupted)."""
    DONE = "done"
    """``/done`` leaves direct mode."""
    SIMPLE = "simple"
    """An implementation-only plan (or one the Architecture Designer let through silently):
    to the Scheduler."""
    NEEDS_PLAN = "needs_plan"
    """An architecture-level plan: the Architecture Designer designs it."""
    PLAN_SHOWN = "plan_shown"
    """The plan is shown for confirmation (after the Architecture Designer's review, or a
    re-planned requirement change)."""
    SCHEDULED = "scheduled"
    CONFIRM = "confirm"
    REJECT = "reject"
    REQUIREMENT_CHANGE = "requirement_change"
    EXEC_ONLY = "exec_only"
    """An execution-only requirement change: resume."""
    DESIGN_CHANGE = "design_change"
    RESUME = "resume"
    """A revision was interrupted or rejected while work still runs: back to executing."""
    ALL_DONE = "all_done"
    SUMMARIZED = "summarized"
    FAILED = "failed"
    """The model turn failed or produced no valid result (a clear failure was shown)."""
    INTERRUPTED = "interrupted"
    """Esc: the current model turn was interrupted."""


S = MainAgentState
T = MainAgentTrigger

TRANSITIONS: dict[tuple[MainAgentState, MainAgentTrigger], MainAgentState] = {
    (S.IDLE, T.USER_MESSAGE): S.CLASSIFYING,
    (S.CLASSIFYING, T.CHAT): S.ANSWERING,
    (S.CLASSIFYING, T.TASK): S.DELEGATING,
    (S.CLASSIFYING, T.DIRECT): S.DIRECT_MODE,
    (S.CLASSIFYING, T.FAILED): S.IDLE,
    (S.CLASSIFYING, T.INTERRUPTED): S.IDLE,
    (S.ANSWERING, T.ANSWERED): S.IDLE,
    (S.DIRECT_MODE, T.DONE): S.IDLE,
    (S.DELEGATING, T.SIMPLE): S.SCHEDULING,
    (S.DELEGATING, T.NEEDS_PLAN): S.ARCHITECTURE_DESIGNING,
    (S.DELEGATING, T.FAILED): S.IDLE,
    (S.DELEGATING, T.INTERRUPTED): S.IDLE,
    (S.ARCHITECTURE_DESIGNING, T.PLAN_SHOWN): S.CONFIRMING,
    (S.ARCHITECTURE_DESIGNING, T.SIMPLE): S.SCHEDULING,
    (S.ARCHITECTURE_DESIGNING, T.FAILED): S.IDLE,
    (S.SCHEDULING, T.SCHEDULED): S.EXECUTING,
    (S.SCHEDULING, T.FAILED): S.IDLE,
    (S.CONFIRMING, T.CONFIRM): S.EXECUTING,
    (S.CONFIRMING, T.REJECT): S.IDLE,
    (S.CONFIRMING, T.RESUME): S.EXECUTING,
    (S.CONFIRMING, T.FAILED): S.IDLE,
    (S.EXECUTING, T.REQUIREMENT_CHANGE): S.INTERRUPTING,
    (S.EXECUTING, T.ALL_DONE): S.SUMMARIZING,
    (S.INTERRUPTING, T.EXEC_ONLY): S.EXECUTING,
    (S.INTERRUPTING, T.DESIGN_CHANGE): S.ARCHITECTURE_REVISING,
    (S.INTERRUPTING, T.RESUME): S.EXECUTING,
    (S.ARCHITECTURE_REVISING, T.PLAN_SHOWN): S.CONFIRMING,
    (S.ARCHITECTURE_REVISING, T.RESUME): S.EXECUTING,
    (S.SUMMARIZING, T.SUMMARIZED): S.IDLE,
}
"""Every legal move; anything else is refused by ``next_state``."""


def next_state(state: MainAgentState, trigger: MainAgentTrigger) -> MainAgentState:
    """The state ``trigger`` leads to from ``state``.

    Raises:
        AirException: ``system_error`` when the move is not in ``TRANSITIONS``.
    """
    target = TRANSITIONS.get((state, trigger))
    if target is None:
        raise AirException.of(
            kind=ErrorKind.SYSTEM_ERROR,
            message=f"illegal Main Agent transition: {state.value} --{trigger.value}-->",
            user_action="Report this as a bug in air (the Main Agent state machine, SDD §20.1).",
            metadata={"state": state.value, "trigger": trigger.value},
        )
    return target


def transition_payload(
    state: MainAgentState,
    trigger: MainAgentTrigger,
    *,
    message_id: str | None = None,
    reason: str | None = None,
) -> dict[str, str]:
    """The ``main_agent.state.changed`` payload of a legal move (checked with ``next_state``)."""
    payload = {
        "from_state": state.value,
        "to_state": next_state(state, trigger).value,
        "trigger": trigger.value,
    }
    if message_id is not None:
        payload["message_id"] = message_id
    if reason is not None:
        payload["reason"] = reason
    return payload
