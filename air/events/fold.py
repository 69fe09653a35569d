"""The fold of a session's durable events: one pure ``apply(state, event) -> state`` (issue #11).

Owns ``apply``, ``replay``, ``FoldCursor`` (a state kept incrementally over a growing log), the
dispatch of each event type to its step (``FOLDED_TYPES``), the validation of a payload into
its model and the session record's own steps. Its parts:

- ``air.events.fold_state``: ``SessionState`` and its facts, ``FoldStep``, ``fold_error``;
- ``air.events.fold_tasks``: the task graph's steps (tasks, dependencies, attempts, compaction);
- ``air.events.fold_agents``: agents, tool runs, command runs, workspaces, evidence attribution;
- ``air.events.transitions``: the status tables ``air.events.projection`` enforces on the SQL
  rows too, so every status rule exists once.

The state is built from persistent maps (``immutables.Map``, a HAMT; IMPL-CORE-1): ``apply``
returns a new state sharing everything it did not touch, so one event costs O(log n) and an
old state stays valid (a reader may keep it while the fold moves on). Payloads are validated
once per event into their typed model (``air.events.payloads``), or passed in already
validated. An event that does not fit the state (an unknown task, an illegal transition, a
duplicate id) raises ``AirException(system_error)``, exactly where the projection refuses it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from air.contracts.error import AirException
from air.contracts.event import RuntimeEvent
from air.events.fold_agents import AGENT_STEPS, EVIDENCE_TYPES, agent_of
from air.events.fold_state import FoldStep, SessionFact, SessionState, fold_error
from air.events.fold_tasks import TASK_STEPS
from air.events.payloads import payload_model
from air.events.transitions import TASK_ENDS

if TYPE_CHECKING:
    from air.events.payloads.start import SessionCreatedPayload

__all__ = ["FOLDED_TYPES", "FoldCursor", "apply", "replay"]


def _session_created(
    state: SessionState, event: RuntimeEvent, x: SessionCreatedPayload
) -> SessionState:
    if state.session is not None:
        raise fold_error(event, f"session {x.session_id} already exists")
    fact = SessionFact(x.session_id, x.project_id, "active", x.mode, x.title)
    return state._replace(session=fact)


def _session_status(status: str) -> FoldStep:
    def fold(state: SessionState, event: RuntimeEvent, x: Any) -> SessionState:
        if state.session is None or state.session.session_id != x.session_id:
            raise fold_error(event, f"session {x.session_id} does not exist")
        return state._replace(session=state.session._replace(status=status))

    return fold


_STEPS: dict[str, FoldStep] = {
    "session.created": _session_created,
    "session.archived": _session_status("archived"),
    "session.deleted": _session_status("deleted"),
    **TASK_STEPS,
    **AGENT_STEPS,
}

FOLDED_TYPES: frozenset[str] = frozenset(_STEPS) | EVIDENCE_TYPES
"""The event types ``apply`` reads; every other type leaves the state as it is."""


def apply(
    state: SessionState, event: RuntimeEvent, payload: BaseModel | None = None
) -> SessionState:
    """The state after one event. Pure: ``state`` is left as it was.

    Args:
        state: the state before the event.
        event: the durable event (ephemeral and unfolded types leave the state unchanged).
        payload: the event's payload already validated into its model (validated here when
            None).

    Returns:
        The new state.

    Raises:
        AirException: ``system_error`` when the event does not fit the state (unknown task,
            illegal transition, duplicate id) or its type is unknown; ``validation_error``
            when its payload does not match its model.
    """
    if event.type not in FOLDED_TYPES:
        return state._replace(applied=state.applied + 1)
    x = payload if payload is not None else _validate(event)
    handler = _STEPS.get(event.type)
    if handler is not None:
        state = handler(state, event, x)
    if event.type in EVIDENCE_TYPES:
        agent_id = agent_of(state, event, x)
        if agent_id is not None:
            log = state.agent_events.get(agent_id, ())
            state = state._replace(agent_events=state.agent_events.set(agent_id, (*log, event)))
    elif event.type in TASK_ENDS:
        # the attempt's outcome is recorded: nothing reads its agent's evidence again (IMPL-READ-4);
        # the end names that agent, or the task still does (a cancel names none)
        task = state.tasks.get(str(getattr(x, "task_id", "")))
        for ended in (getattr(x, "agent_id", None), task.agent_id if task else None):
            if ended is not None and ended in state.agent_events:
                state = state._replace(agent_events=state.agent_events.delete(ended))
    return state._replace(applied=state.applied + 1)


def _validate(event: RuntimeEvent) -> BaseModel:
    model = payload_model(event.type, event.version)
    if model is None:
        raise fold_error(event, f"unknown event type {event.type} v{event.version}")
    try:
        return model.model_validate(event.payload)
    except ValueError as exc:
        raise AirException.of(
            kind="validation_error",
            message=f"invalid payload for event {event.type} v{event.version}",
            detail=str(exc),
            user_action="Fix the producer of this event so its payload matches its model.",
            metadata={"event_type": event.type, "event_id": event.id},
        ) from exc


def replay(events: Iterable[RuntimeEvent]) -> SessionState:
    """The state after every event of ``events``, oldest first, from an empty session."""
    state = SessionState()
    for event in events:
        state = apply(state, event)
    return state


class FoldCursor:
    """A ``SessionState`` kept incrementally: feed it each new event once, read ``state``.

    Args:
        state: the state to start from (default: an empty session).
    """

    __slots__ = ("state",)

    def __init__(self, state: SessionState | None = None) -> None:
        self.state = state or SessionState()

    def feed(self, event: RuntimeEvent, payload: BaseModel | None = None) -> SessionState:
        """Apply one event; returns the new state."""
        self.state = apply(self.state, event, payload)
        return self.state

    def feed_all(self, events: Iterable[RuntimeEvent]) -> SessionState:
        for event in events:
            self.state = apply(self.state, event)
        return self.state
