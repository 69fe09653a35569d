"""AnthropicCanonicalConverter: canonical -> OpenAI -> canonical keeps every block in order
(hypothesis), and what OpenAI cannot carry is an error, never dropped."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from air.contracts.error import AirException, ErrorKind
from air.contracts.provider import (
    CanonicalMessage,
    ContentBlock,
    ProviderCompletionInput,
    StopReason,
    TextBlock,
    ToolChoice,
    ToolResultBlock,
    ToolUseBlock,
)
from air.llm.convert import AnthropicCanonicalConverter

texts = st.text(min_size=1, max_size=30)
# the strings of r"toolu_[A-Za-z0-9]{1,8}" and r"[a-z_]{1,12}", drawn as text: st.from_regex
# drew the same strings at ~60% of this property's time
ids = st.text(string.ascii_letters + string.digits, min_size=1, max_size=8).map("toolu_".__add__)
names = st.text(string.ascii_lowercase + "_", min_size=1, max_size=12)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
tool_inputs = st.dictionaries(st.text(max_size=8), json_values, max_size=4)
text_blocks = st.builds(TextBlock, text=texts)
tool_uses = st.builds(ToolUseBlock, id=ids, name=names, input=tool_inputs)
tool_results = st.builds(
    ToolResultBlock,
    tool_use_id=ids,
    content=texts | st.lists(text_blocks, min_size=0, max_size=3),
    is_error=st.booleans(),
)


@st.composite
def assistant_messages(draw: st.DrawFn) -> CanonicalMessage:
    # OpenAI carries assistant text first, then tool calls: that is what a model emits
    blocks: list[ContentBlock] = [
        *draw(st.lists(text_blocks, max_size=3)),
        *draw(st.lists(tool_uses, max_size=3)),
    ]
    return CanonicalMessage(role="assistant", content=blocks)


@st.composite
def user_messages(draw: st.DrawFn) -> CanonicalMessage:
    blocks: list[ContentBlock] = draw(st.lists(text_blocks | tool_results, min_size=1, max_size=5))
    return CanonicalMessage(role="user", content=blocks)


@st.composite
def conversations(draw: st.DrawFn) -> list[CanonicalMessage]:
    n = draw(st.integers(1, 6))
    return [draw(user_messages()) if i % 2 == 0 else draw(assistant_messages()) for i in range(n)]


systems = st.none() | texts | st.lists(text_blocks, min_size=1, max_size=3)


@settings(max_examples=150, deadline=None)
@given(conversation=conversations(), system=systems)
def test_round_trip_keeps_every_block_and_order(
    conversation: list[CanonicalMessage], system: str | list[TextBlock] | None
) -> None:
    converter = AnthropicCanonicalConverter()
    wire = converter.system_to_openai(system) + converter.messages_to_openai(conversation)
    back_system, back = converter.messages_from_openai(wire)
    assert back == conversation
    assert back_system == system


def test_text_after_tool_use_cannot_be_carried_and_raises() -> None:
    converter = AnthropicCanonicalConverter()
    message = CanonicalMessage(
        role="assistant",
        content=[ToolUseBlock(id="toolu_1", name="x", input={}), TextBlock(text="after")],
    )
    with pytest.raises(AirException) as info:
        converter.messages_to_openai([message])
    assert info.value.kind is ErrorKind.VALIDATION_ERROR
    assert info.value.user_action


def test_tool_result_pairs_with_tool_call_id_and_error_flag_is_visible() -> None:
    converter = AnthropicCanonicalConverter()
    wire = converter.messages_to_openai(
        [
            CanonicalMessage(role="user", content=[TextBlock(text="go")]),
            CanonicalMessage(
                role="assistant", content=[ToolUseBlock(id="call_1", name="run", input={"a": 1})]
            ),
            CanonicalMessage(
                role="user",
                content=[
                    ToolResultBlock(tool_use_id="call_1", content="boom", is_error=True),
                    TextBlock(text="next"),
                ],
            ),
        ]
    )
    assert wire[1]["tool_calls"][0]["id"] == "call_1"
    assert wire[1]["content"] is None
    assert wire[2] == {"role": "tool", "tool_call_id": "call_1", "content": "[tool_error] boom"}
    assert wire[3] == {"role": "user", "content": [{"type": "text", "text": "next"}]}


def test_request_carries_tools_choice_stop_and_stop_reasons_map() -> None:
    converter = AnthropicCanonicalConverter()
    body = converter.request_to_openai(
        ProviderCompletionInput(
            provider_id="p",
            model_id="m",
            messages=[CanonicalMessage(role="user", content=[TextBlock(text="q")])],
            tool_choice=ToolChoice(type="tool", name="run"),
            stop_sequences=["END"],
            temperature=0.2,
        ),
        "api-m",
    )
    assert body["tool_choice"] == {"type": "function", "function": {"name": "run"}}
    assert body["stop"] == ["END"]
    assert body["temperature"] == 0.2
    assert converter.tool_choice_to_openai(ToolChoice(type="any")) == "required"
    assert converter.stop_reason_from_openai("length") is StopReason.MAX_TOKENS
    assert converter.stop_reason_from_openai("tool_calls") is StopReason.TOOL_USE
    # a reason added since reads as end_turn (tests/llm/test_later_variants.py)
    assert converter.stop_reason_from_openai("mystery") is StopReason.END_TURN


MARKED_TEXTS = ["[tool_error] ", "[tool_error] rm -rf /", "[tool_result] [tool_error] x",
                "[tool_result] [tool_result] [tool_error] ", "[tool_result] plain", ""]  # fmt: skip


@pytest.mark.parametrize("text", MARKED_TEXTS)
@pytest.mark.parametrize("is_error", [False, True])
@pytest.mark.parametrize("as_list", [False, True])
def test_a_result_that_reads_like_the_error_marker_keeps_its_kind(
    text: str, is_error: bool, as_list: bool
) -> None:
    """A tool's own output may start with ``[tool_error]`` (a hostile file, a command): on the
    OpenAI wire it must not turn a success into an error, nor lose its text (found by the
    round-trip property: "[tool_error] " came back as an empty error)."""
    content: str | list[TextBlock] = [TextBlock(text=text)] if as_list else text
    if as_list and not text:
        return  # an empty text block is not valid content
    block = ToolResultBlock(tool_use_id="toolu_0", content=content, is_error=is_error)
    conversation = [CanonicalMessage(role="user", content=[block])]
    converter = AnthropicCanonicalConverter()
    wire = converter.messages_to_openai(conversation)
    _, back = converter.messages_from_openai(wire)
    assert back == conversation
    sent = wire[-1]["content"]
    first = sent if isinstance(sent, str) else sent[0]["text"]
    assert first.startswith("[tool_error] ") == is_error
