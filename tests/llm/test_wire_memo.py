"""Request bodies whose messages are encoded once per conversation (``air.llm.wire_memo``) are
the bodies the whole conversation converts to: for both wires, over random conversations that
grow, are cut back, join same-role turns, hold blank text, and change their tools (issue 28)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from air.contracts.error import AirException
from air.contracts.provider import CanonicalMessage, ProviderCompletionInput, ToolSpec
from air.llm.anthropic_wire import anthropic_body, request_to_anthropic
from air.llm.convert import AnthropicCanonicalConverter
from air.llm.tool_names import ToolNameMap
from air.llm.wire_memo import EncodedTurns

texts = st.sampled_from(["", " ", "a", "b\n", "ü"])
text_block = st.builds(lambda t: {"type": "text", "text": t}, texts)
tool_use = st.builds(
    lambda i, n: {"type": "tool_use", "id": f"tu{i}", "name": n, "input": {"i": i}},
    st.integers(0, 3),
    st.sampled_from(["fs.read", "a.b"]),
)
tool_result = st.builds(
    lambda i, t: {"type": "tool_result", "tool_use_id": f"tu{i}", "content": t},
    st.integers(0, 3),
    texts,
)
user = st.builds(
    lambda b: CanonicalMessage.model_validate({"role": "user", "content": b}),
    st.lists(st.one_of(text_block, tool_result), max_size=3),
)
assistant = st.builds(
    lambda texts_, uses: CanonicalMessage.model_validate(
        {"role": "assistant", "content": texts_ + uses}
    ),
    st.lists(text_block, max_size=2),
    st.lists(tool_use, max_size=2),
)
tool_sets = st.sampled_from(
    [(), ("fs.read",), ("fs.read", "a.b"), ("a_b", "a.b")]  # the last maps a.b elsewhere
)


@st.composite
def conversations(draw: st.DrawFn) -> list[tuple[list[CanonicalMessage], tuple[str, ...]]]:
    """Successive turns of one conversation: each keeps some of the last turn's message
    objects, then adds new ones."""
    turns = []
    messages: list[CanonicalMessage] = []
    for _ in range(draw(st.integers(1, 6))):
        keep = draw(st.integers(0, len(messages)))
        keep = max(keep, len(messages) - 1) if draw(st.booleans()) else keep
        messages = messages[:keep] + draw(st.lists(st.one_of(user, assistant), max_size=3))
        turns.append((list(messages), draw(tool_sets)))
    return turns


def _request(messages: list[CanonicalMessage], tools: tuple[str, ...]) -> ProviderCompletionInput:
    return ProviderCompletionInput(
        provider_id="p",
        model_id="m",
        messages=messages,
        system="sys",
        tools=[ToolSpec(name=n, input_schema={"type": "object"}) for n in tools],
    )


@settings(max_examples=120, deadline=None)
@given(conversations())
def test_encoded_bodies_equal_whole_conversions(
    turns: list[tuple[list[CanonicalMessage], tuple[str, ...]]],
) -> None:
    anthropic, openai = EncodedTurns(), EncodedTurns()
    converter = AnthropicCanonicalConverter()
    for messages, tools in turns:
        request = _request(messages, tools)
        names = ToolNameMap(tools)
        got = json.loads(anthropic_body(request, "api-m", names, anthropic))
        assert got == request_to_anthropic(request, "api-m", names)
        try:
            whole: Any = converter.request_to_openai(request, "api-m", names)
        except AirException as exc:  # the same refusal either way
            refusal = str(exc)
            with pytest.raises(AirException, match=re.escape(refusal)):
                converter.request_to_openai_body(request, "api-m", names, openai)
            continue
        assert (
            json.loads(converter.request_to_openai_body(request, "api-m", names, openai)) == whole
        )


def test_a_turn_encodes_only_its_new_messages() -> None:
    """The second turn converts the two messages it added, not the first one again."""
    memo = EncodedTurns()
    encoded: list[str] = []

    def encode(role: str, blocks: list[Any]) -> bytes:
        encoded.append(role)
        return json.dumps({"role": role, "n": len(blocks)}).encode()

    first = CanonicalMessage.model_validate(
        {"role": "user", "content": [{"type": "text", "text": "a"}]}
    )
    memo.pieces([first], encode, ())
    reply = CanonicalMessage.model_validate(
        {"role": "assistant", "content": [{"type": "text", "text": "b"}]}
    )
    more = CanonicalMessage.model_validate(
        {"role": "user", "content": [{"type": "text", "text": "c"}]}
    )
    pieces = memo.pieces([first, reply, more], encode, ())
    assert encoded == ["user", "assistant", "user"]
    assert len(pieces) == 3


def test_conversations_past_the_limit_are_dropped() -> None:
    memo = EncodedTurns(limit=2)
    firsts = [
        CanonicalMessage.model_validate({"role": "user", "content": [{"type": "text", "text": t}]})
        for t in "abc"
    ]
    for message in firsts:
        memo.pieces([message], lambda role, blocks: b"{}", ())
    assert len(memo) == 2
