"""The Main Agent state machine (SDD §20.1): every legal transition, every other one refused."""

from __future__ import annotations

import pytest

from air.agents.state import (
    STATE_EVENT,
    TRANSITIONS,
    MainAgentState,
    MainAgentTrigger,
    next_state,
    transition_payload,
)
from air.contracts.error import AirException
from air.events.payloads import DURABLE_TYPES
from air.events.registry import default_registry

S = MainAgentState
T = MainAgentTrigger

# The SDD §20.1 diagram, edge by edge, plus the IMPL-AGENT-2 edges (failure, Esc, resume) and
# IMPL-ARCH-2's silent_continue edge.
EXPECTED = {
    (S.IDLE, T.USER_MESSAGE): S.CLASSIFYING,
    (S.CLASSIFYING, T.CHAT): S.ANSWERING,
    (S.CLASSIFYING, T.TASK): S.DELEGATING,
    (S.CLASSIFYING, T.DIRECT): S.DIRECT_MODE,
    (S.ANSWERING, T.ANSWERED): S.IDLE,
    (S.DIRECT_MODE, T.DONE): S.IDLE,
    (S.DELEGATING, T.SIMPLE): S.SCHEDULING,
    (S.DELEGATING, T.NEEDS_PLAN): S.ARCHITECTURE_DESIGNING,
    (S.ARCHITECTURE_DESIGNING, T.PLAN_SHOWN): S.CONFIRMING,
    (S.SCHEDULING, T.SCHEDULED): S.EXECUTING,
    (S.CONFIRMING, T.CONFIRM): S.EXECUTING,
    (S.CONFIRMING, T.REJECT): S.IDLE,
    (S.EXECUTING, T.REQUIREMENT_CHANGE): S.INTERRUPTING,
    (S.EXECUTING, T.ALL_DONE): S.SUMMARIZING,
    (S.INTERRUPTING, T.EXEC_ONLY): S.EXECUTING,
    (S.INTERRUPTING, T.DESIGN_CHANGE): S.ARCHITECTURE_REVISING,
    (S.ARCHITECTURE_REVISING, T.PLAN_SHOWN): S.CONFIRMING,
    (S.SUMMARIZING, T.SUMMARIZED): S.IDLE,
    # IMPL-AGENT-2
    (S.CLASSIFYING, T.FAILED): S.IDLE,
    (S.CLASSIFYING, T.INTERRUPTED): S.IDLE,
    (S.DELEGATING, T.FAILED): S.IDLE,
    (S.DELEGATING, T.INTERRUPTED): S.IDLE,
    (S.ARCHITECTURE_DESIGNING, T.FAILED): S.IDLE,
    (S.SCHEDULING, T.FAILED): S.IDLE,
    (S.CONFIRMING, T.RESUME): S.EXECUTING,
    (S.CONFIRMING, T.FAILED): S.IDLE,
    (S.INTERRUPTING, T.RESUME): S.EXECUTING,
    (S.ARCHITECTURE_REVISING, T.RESUME): S.EXECUTING,
    # IMPL-ARCH-2
    (S.ARCHITECTURE_DESIGNING, T.SIMPLE): S.SCHEDULING,
}


def test_the_table_is_exactly_the_designed_one() -> None:
    assert TRANSITIONS == EXPECTED
    assert {s for s, _ in TRANSITIONS} | set(TRANSITIONS.values()) == set(MainAgentState)


@pytest.mark.parametrize(("move", "target"), sorted(EXPECTED.items()))
def test_every_legal_transition(
    move: tuple[MainAgentState, MainAgentTrigger], target: MainAgentState
) -> None:
    state, trigger = move
    assert next_state(state, trigger) is target
    payload = transition_payload(state, trigger, message_id="msg_1")
    assert payload == {
        "from_state": state.value,
        "to_state": target.value,
        "trigger": trigger.value,
        "message_id": "msg_1",
    }
    model = default_registry().get_model(STATE_EVENT)
    assert model is not None
    model.model_validate(payload)


ILLEGAL = [(s, t) for s in MainAgentState for t in MainAgentTrigger if (s, t) not in EXPECTED]


@pytest.mark.parametrize(("state", "trigger"), ILLEGAL)
def test_every_other_transition_is_refused(
    state: MainAgentState, trigger: MainAgentTrigger
) -> None:
    with pytest.raises(AirException) as caught:
        next_state(state, trigger)
    assert caught.value.kind == "system_error"
    assert caught.value.user_action
    with pytest.raises(AirException):
        transition_payload(state, trigger)


def test_illegal_examples_named_by_the_sdd() -> None:
    for state, trigger in [
        (S.IDLE, T.ANSWERED),  # no answer without classifying
        (S.ANSWERING, T.TASK),
        (S.EXECUTING, T.USER_MESSAGE),  # a message while executing is a requirement change
        (S.DIRECT_MODE, T.TASK),
        (S.SUMMARIZING, T.REQUIREMENT_CHANGE),
        (S.CONFIRMING, T.ALL_DONE),
    ]:
        assert (state, trigger) in ILLEGAL


def test_the_transition_event_is_a_registered_durable_type() -> None:
    assert STATE_EVENT in DURABLE_TYPES
    assert default_registry().is_durable(STATE_EVENT)
