"""The parent's incremental conversation (``air.supervision.conversation``) against a full
validation of the same messages: a worker's turns, sent as deltas (``air.ipc.turn_delta``), give
exactly the request a whole conversation validated in one go gives, and a bad turn changes
nothing (issue 28 item 3)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from air.contracts.provider import ProviderCompletionInput
from air.ipc.turn_delta import TurnDelta
from air.supervision.conversation import Conversation, ConversationError

FIXED = {"provider_id": "p", "model_id": "m", "session_id": "ses_1", "agent_id": "agt_1"}

texts = st.text(alphabet="ab \n", max_size=4)
text_block = st.builds(lambda t: {"type": "text", "text": t}, texts)
tool_use = st.builds(
    lambda i, n: {"type": "tool_use", "id": f"tu{i}", "name": n, "input": {"i": i}},
    st.integers(0, 9),
    st.sampled_from(["fs.read", "shell.run"]),
)
tool_result = st.builds(
    lambda i, t, e: {"type": "tool_result", "tool_use_id": f"tu{i}", "content": t, "is_error": e},
    st.integers(0, 9),
    texts,
    st.booleans(),
)
bad_block = st.sampled_from(
    [{"type": "image"}, {"type": "text"}, {"type": "tool_use", "id": 3}, "plain"]
)
message = st.builds(
    lambda role, blocks: {"role": role, "content": blocks},
    st.sampled_from(["user", "assistant"]),
    st.lists(st.one_of(text_block, tool_use, tool_result), max_size=3),
)
bad_message = st.one_of(
    st.builds(lambda b: {"role": "user", "content": [b]}, bad_block),
    st.just({"role": "system", "content": []}),
    st.just({"role": "user"}),
)
systems = st.one_of(st.none(), texts, st.just([{"type": "text", "text": "sys"}]), st.just(7))
tools: st.SearchStrategy[list[dict[str, Any]]] = st.one_of(
    st.just([]),
    st.just([{"name": "fs.read", "input_schema": {"type": "object"}}]),
    st.just([{"name": "x"}]),  # no input_schema: invalid
)


@st.composite
def turns(draw: st.DrawFn) -> list[tuple[str, int, list[Any], Any, Any]]:
    """Each step: ``keep`` messages of the worker's list kept, new ones appended (sometimes a
    bad one), then a turn; or a turn in the whole form."""
    out = []
    for _ in range(draw(st.integers(1, 8))):
        form = draw(st.sampled_from(["delta", "delta", "delta", "whole"]))
        keep = draw(st.integers(0, 12))
        new = draw(st.lists(st.one_of(message, message, message, bad_message), max_size=3))
        out.append((form, keep, new, draw(systems), draw(tools)))
    return out


def _full(messages: list[Any], system: Any, tools: Any) -> ProviderCompletionInput:
    return ProviderCompletionInput.model_validate(
        {"system": system, "tools": tools, "messages": messages, **FIXED}
    )


@settings(max_examples=120, deadline=None)
@given(turns())
def test_incremental_conversation_equals_full_validation(
    steps: list[tuple[str, int, list[Any], Any, Any]],
) -> None:
    conversation = Conversation(dict(FIXED))
    delta = TurnDelta()
    sent: list[Any] = []  # what the worker holds
    held: list[Any] = []  # what the parent holds (the last turn it accepted)
    for form, keep, new, system, tool_specs in steps:
        sent = sent[: min(keep, len(sent))] + new
        if form == "whole":
            delta.forget()
            input: dict[str, Any] = {"system": system, "tools": tool_specs, "messages": sent}
        else:
            input = delta.input(system, sent, tool_specs)
        try:
            expected = _full(sent, system, tool_specs)
        except ValidationError as exc:
            problem = exc.errors()[0]["msg"]
            with pytest.raises(ValidationError) as got:
                conversation.turn(input)
            assert got.value.errors()[0]["msg"] == problem
            assert [m.model_dump() for m in conversation.messages] == held  # unchanged
            delta.forget()  # as WorkerRuntime.complete does after a failed call
            continue
        request = conversation.turn(input)
        assert request == expected
        assert request.model_fields_set >= {"messages", "provider_id", "model_id"}
        held = [m.model_dump() for m in request.messages]


def test_kept_messages_are_the_same_objects_turn_after_turn() -> None:
    """Validated once: a later turn's request holds the very objects of the earlier one."""
    conversation = Conversation(dict(FIXED))
    delta = TurnDelta()
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": "go"}]}]
    tools: list[dict[str, Any]] = []
    first = conversation.turn(delta.input("sys", messages, tools))
    messages.append({"role": "assistant", "content": [{"type": "text", "text": "ok"}]})
    messages.append({"role": "user", "content": [{"type": "text", "text": "more"}]})
    input = delta.input("sys", messages, tools)
    assert input == {"prefix": 1, "messages": messages[1:]}  # system and tools unchanged
    second = conversation.turn(input)
    assert second.messages[0] is first.messages[0]
    assert len(first.messages) == 1  # the earlier request kept its own list
    assert second.system == "sys"


@pytest.mark.parametrize("prefix", [2, -1, "1", 1.0, True])
def test_a_prefix_beyond_the_messages_held_is_refused(prefix: Any) -> None:
    conversation = Conversation(dict(FIXED))
    conversation.turn({"messages": [{"role": "user", "content": []}]})
    with pytest.raises(ConversationError, match="prefix"):
        conversation.turn({"prefix": prefix, "messages": []})
    assert len(conversation.messages) == 1
