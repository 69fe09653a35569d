"""Claude's thinking models (IMPL-THINK-1): the strict fake refuses each request these models
refuse (tests of its rules, as tests/llm/test_reasoning_models.py does for OpenAI's), and air
reads, keeps, hides and sends back their thinking blocks unchanged, in place, on every path
that carries a conversation (both stream shapes, the Messages body, the parent's copy of a
worker's conversation, a request asked again); the OpenAI wire leaves them out."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from air.agents.turns import TurnResult
from air.contracts.provider import (
    CanonicalMessage,
    ContentBlock,
    ProviderCapabilityMatrix,
    ProviderKind,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from air.llm.anthropic_wire import plain_raw_events, request_to_anthropic
from air.llm.convert import AnthropicCanonicalConverter
from air.llm.manager import _asked_again
from air.llm.normalize import AnthropicStreamNormalizer, drain
from air.roles.loop import _text_of
from air.supervision.conversation import Conversation
from air.testing.anthropic_rules import anthropic_problem
from air.testing.anthropic_thinking import BINDING_BETA, redact, sign, thinks
from air.testing.wire_replies import blocks_sse
from tests.llm.helpers import request

HEADERS = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
TOOL = {"name": "read", "input_schema": {"type": "object"}}
BOUND = "The block is bound to a different conversation."


def _body(model: str, **extra: Any) -> dict[str, Any]:
    return {
        "model": model,
        "max_tokens": 100,
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
        **extra,
    }


def _refusal(model: str, headers: dict[str, str] = HEADERS, **extra: Any) -> str | None:
    problem = anthropic_problem(headers, _body(model, **extra))
    assert problem is None or problem.status == 400
    return None if problem is None else problem.message


# --- the fake's rules -----------------------------------------------------------------------


def test_which_models_think() -> None:
    for model in ("claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5", "claude-opus-5"):
        assert thinks(model), model
    for model in ("claude-fable-5-1", "claude-fable-5-2", "claude-opus-4-8", "claude-opus-4-6"):
        assert thinks(model), model
    for model in ("claude-sonnet-4-5", "claude-3-5-haiku-latest", "claude-test", "gpt-5"):
        assert not thinks(model), model


@pytest.mark.parametrize("model", ["claude-opus-5-5", "claude-fable-5-1"], ids=["o55", "f51"])
def test_thinking_cannot_be_disabled(model: str) -> None:
    message = _refusal(model, thinking={"type": "disabled"})
    assert message is not None
    assert message.startswith('"thinking.type.disabled" is not supported for this model.')
    assert _refusal(model, thinking={"type": "adaptive"}) is None
    assert _refusal(model) is None
    assert _refusal("claude-opus-5", thinking={"type": "disabled"}) is None


@pytest.mark.parametrize("model", ["claude-opus-4-7", "claude-opus-5-5", "claude-haiku-5-5"])
def test_a_thinking_budget_is_refused_from_4_7_on(model: str) -> None:
    message = _refusal(model, thinking={"type": "enabled", "budget_tokens": 2048})
    assert message is not None
    assert '"thinking.type.enabled" is not supported for this model.' in message
    assert _refusal("claude-opus-4-6", thinking={"type": "enabled", "budget_tokens": 2048}) is None


@pytest.mark.parametrize("choice", ["any", "tool"])
def test_forced_tool_use_is_refused_on_opus_5_5_and_fable(choice: str) -> None:
    forced = {"type": choice, **({"name": "read"} if choice == "tool" else {})}
    for model in ("claude-opus-5-5", "claude-fable-5-1"):
        message = _refusal(model, tools=[TOOL], tool_choice=forced)
        assert message == "Thinking may not be enabled when tool_choice forces tool use.", model
        assert _refusal(model, tools=[TOOL], tool_choice={"type": "auto"}) is None
    assert _refusal("claude-sonnet-4-5", tools=[TOOL], tool_choice=forced) is None


@pytest.mark.parametrize("model", ["claude-opus-4-7", "claude-opus-4-8", "claude-sonnet-5-5"])
def test_non_default_sampling_is_refused_from_4_7_on(model: str) -> None:
    for extra in ({"temperature": 0.2}, {"top_p": 0.9}, {"top_k": 5}):
        message = _refusal(model, **extra)
        assert message is not None, extra
        assert message.startswith(next(iter(extra))), message
    assert _refusal(model, temperature=1) is None
    assert _refusal("claude-sonnet-4-5", temperature=0.2, top_k=5) is None


@pytest.mark.parametrize("model", ["claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5"])
def test_a_final_assistant_turn_is_refused_on_the_5_5_models(model: str) -> None:
    prefill = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "{"}]
    message = _refusal(model, messages=prefill)
    assert message is not None
    assert "prefill" in message
    assert _refusal("claude-sonnet-4-5", messages=prefill) is None


def _tool_loop(model: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A first request and the next one, replaying the signed reply to the first."""
    first = _body(model, system="Be terse.", tools=[TOOL])
    thought = {"type": "thinking", "thinking": "look first", "signature": ""}
    thought["signature"] = sign(first, [], "look first")
    hidden = {"type": "redacted_thinking", "data": redact(first, [thought], "secret")}
    use = {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}}
    answer = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}
    messages = [
        *first["messages"],
        {"role": "assistant", "content": [thought, hidden, use]},
        {"role": "user", "content": [answer]},
    ]
    return first, {**first, "messages": messages}


def test_a_replayed_block_unchanged_is_taken() -> None:
    _, second = _tool_loop("claude-opus-5-5")
    assert anthropic_problem(HEADERS, second) is None
    marked = json.loads(json.dumps(second))  # a cache breakpoint is no edit of the prefix
    marked["messages"][0]["content"] = [{"type": "text", "text": "hi", "cache_control": {}}]
    marked["messages"][0]["content"][0]["cache_control"] = {"type": "ephemeral"}
    assert anthropic_problem(HEADERS, marked) is None


def test_an_altered_block_is_refused() -> None:
    _, second = _tool_loop("claude-opus-5-5")
    second["messages"][1]["content"][0]["thinking"] += "!"
    problem = anthropic_problem(HEADERS, second)
    assert problem is not None
    assert problem.message == "messages.1.content.0: Invalid `signature` in `thinking` block."
    _, second = _tool_loop("claude-opus-5-5")
    data = base64.b64decode(second["messages"][1]["content"][1]["data"]).replace(
        b"secret", b"other"
    )
    second["messages"][1]["content"][1]["data"] = base64.b64encode(data).decode()
    problem = anthropic_problem(HEADERS, second)
    assert problem is not None
    assert "messages.1.content.1: Invalid `signature` in `redacted_thinking`" in problem.message


@pytest.mark.parametrize("edit", ["system", "tools", "earlier", "dropped"])
def test_a_block_whose_prefix_changed_is_refused(edit: str) -> None:
    _, second = _tool_loop("claude-opus-5-5")
    if edit == "system":
        second["system"] = "Be brief."
    elif edit == "tools":
        second["tools"] = [{**TOOL, "description": "Read a file."}]
    elif edit == "earlier":
        second["messages"][0]["content"] = "hi!"
    else:  # the block before another left out: the later one's prefix changed
        del second["messages"][1]["content"][0]
    problem = anthropic_problem(HEADERS, second)
    assert problem is not None
    assert problem.message.startswith("messages.1.content.")
    assert BOUND in problem.message
    assert 'prefix_mismatch_behavior` to "drop_block"' in problem.message
    # drop_block, with its beta header, drops the invalid blocks instead
    dropping = {"type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "drop_block"}}
    second["thinking"] = dropping
    refused = anthropic_problem(HEADERS, second)
    assert refused is not None
    assert BINDING_BETA in refused.message
    assert anthropic_problem({**HEADERS, "anthropic-beta": BINDING_BETA}, second) is None


def test_only_the_preserved_thinking_models_check_the_prefix() -> None:
    _, second = _tool_loop("claude-opus-5")
    second["system"] = "Be brief."
    assert anthropic_problem(HEADERS, second) is None
    second["messages"][1]["content"][0]["thinking"] = "changed"
    assert anthropic_problem(HEADERS, second) is not None  # the signature still holds


def test_a_block_of_another_model_is_dropped_without_an_error() -> None:
    _, second = _tool_loop("claude-fable-5-1")
    second["system"] = "Be brief."  # bound to another prefix too: dropped all the same
    assert anthropic_problem(HEADERS, second) is not None
    assert anthropic_problem(HEADERS, {**second, "model": "claude-opus-5-5"}) is None


def test_thinking_blocks_only_in_assistant_turns() -> None:
    block = {"type": "thinking", "thinking": "", "signature": "x"}
    body = _body("claude-sonnet-4-5", messages=[{"role": "user", "content": [block]}])
    problem = anthropic_problem(HEADERS, body)
    assert problem is not None
    assert (
        problem.message
        == "messages.0.content.0: thinking blocks may only appear in assistant turns"
    )


# --- air ------------------------------------------------------------------------------------


def _sse_events(chunks: list[bytes]) -> list[str]:
    return [
        line.removeprefix(b"data: ").decode()
        for chunk in chunks
        for line in chunk.split(b"\n")
        if line.startswith(b"data: ")
    ]


THOUGHT = ThinkingBlock(thinking="weigh it", signature="c2lnLTE=")
HIDDEN = RedactedThinkingBlock(data="ZW5jcnlwdGVk")


def test_the_stream_keeps_thinking_blocks_and_shows_none() -> None:
    blocks = [
        ("thinking", (["weigh", " it"], "c2lnLTE=")),
        ("redacted_thinking", "ZW5jcnlwdGVk"),
        ("text", ["Reading."]),
        ("thinking", ([], "c2lnLTI=")),
        ("tool_use", ("toolu_1", "read", ['{"path": "a"}'])),
    ]
    normalizer = AnthropicStreamNormalizer("anthropic", "claude-opus-5-5")
    events, failure = drain(normalizer, _sse_events(blocks_sse("anthropic", blocks, "tool_use")))
    assert failure is None
    assert [e.type for e in events] == [
        "message_start",
        "text_delta",
        "tool_use_start",
        "tool_use_input_delta",
        "tool_use_stop",
        "message_stop",
    ]
    stop = events[-1]
    assert stop.type == "message_stop"
    assert stop.content == [
        THOUGHT,
        HIDDEN,
        TextBlock(text="Reading."),
        ThinkingBlock(thinking="", signature="c2lnLTI="),
        ToolUseBlock(id="toolu_1", name="read", input={"path": "a"}),
    ]
    assert stop.usage.output_tokens == 7  # thinking tokens are output tokens: counted as sent


def test_a_reply_not_streamed_keeps_them_too() -> None:
    message = {
        "id": "msg_1",
        "model": "claude-opus-5-5",
        "content": [
            THOUGHT.model_dump(),
            HIDDEN.model_dump(),
            {"type": "text", "text": "Done."},
        ],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 3, "output_tokens": 4},
    }
    normalizer = AnthropicStreamNormalizer("anthropic", "claude-opus-5-5")
    events = [e for raw in plain_raw_events(message) for e in normalizer.feed(raw)]
    assert events[-1].type == "message_stop"
    assert events[-1].content == [THOUGHT, HIDDEN, TextBlock(text="Done.")]


def test_a_thinking_block_without_a_string_is_a_protocol_error() -> None:
    normalizer = AnthropicStreamNormalizer("anthropic", "claude-opus-5-5")
    start = {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking"}}
    normalizer.feed(start)
    bad = {"type": "signature_delta", "signature": None}
    _, failure = drain(
        normalizer, [json.dumps({"type": "content_block_delta", "index": 0, "delta": bad})]
    )
    assert failure is not None
    assert failure.kind == "protocol_error"


def _loop() -> list[CanonicalMessage]:
    return [
        CanonicalMessage(role="user", content=[TextBlock(text="go")]),
        CanonicalMessage(
            role="assistant",
            content=[THOUGHT, HIDDEN, ToolUseBlock(id="toolu_1", name="read", input={})],
        ),
        CanonicalMessage(
            role="user", content=[ToolResultBlock(tool_use_id="toolu_1", content="ok")]
        ),
    ]


def test_they_go_back_unchanged_in_place() -> None:
    body = request_to_anthropic(request(messages=_loop()), "claude-opus-5-5")
    assert body["messages"][1]["content"][:2] == [
        {"type": "thinking", "thinking": "weigh it", "signature": "c2lnLTE="},
        {"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"},
    ]
    # and nothing these models refuse goes with them
    assert not {"temperature", "top_p", "top_k", "tool_choice", "thinking"} & set(body)
    assert body["messages"][-1]["role"] == "user"


def test_the_openai_wire_leaves_them_out() -> None:
    body = AnthropicCanonicalConverter().request_to_openai(request(messages=_loop()), "gpt-5")
    assistant = body["messages"][2]
    assert assistant["role"] == "assistant"
    assert assistant["content"] is None
    assert [c["id"] for c in assistant["tool_calls"]] == ["toolu_1"]
    assert "weigh it" not in json.dumps(body)
    assert "ZW5jcnlwdGVk" not in json.dumps(body)


def test_the_parent_keeps_them_in_a_workers_conversation() -> None:
    fixed = {"provider_id": "p", "model_id": "m1"}
    sent = [m.model_dump(mode="json", exclude_none=True) for m in _loop()]
    conversation = Conversation(fixed)
    first = conversation.turn({"messages": sent[:2] + sent[2:]})
    assert first.messages[1].content[:2] == [THOUGHT, HIDDEN]
    more = [{"role": "assistant", "content": [{"type": "text", "text": "done"}]}]
    second = conversation.turn({"prefix": 3, "messages": more})
    assert second.messages[1].content[:2] == [THOUGHT, HIDDEN]


def test_asked_again_keeps_the_prefix_of_every_block() -> None:
    """A reply cut off at the model's ceiling is asked again with a note after the last tool
    result: the blocks already sent keep their prefix, and the strict server takes them."""
    first = {
        "model": "claude-opus-5-5",
        "max_tokens": 100,
        "stream": True,
        "system": "You are terse.",
        "tools": [
            {
                "name": "read_file",
                "description": "Read a file",
                "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
            }
        ],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "go"}]}],
    }
    thought = ThinkingBlock(thinking="t", signature=sign(first, [], "t"))
    use = ToolUseBlock(id="toolu_1", name="read_file", input={})
    messages = [
        CanonicalMessage(role="user", content=[TextBlock(text="go")]),
        CanonicalMessage(role="assistant", content=[thought, use]),
        CanonicalMessage(role="user", content=[ToolResultBlock(tool_use_id="toolu_1", content="")]),
    ]
    req = request(messages=messages, max_tokens=100)
    row = ProviderCapabilityMatrix(
        provider_id="p",
        model_id="m1",
        kind=ProviderKind.ANTHROPIC,
        context_window=1000,
        max_output_tokens=100,
    )
    again = _asked_again(req, row, "read_file", "max_tokens")
    assert again.messages[-1].content[-1] != req.messages[-1].content[-1]
    for sent in (req, again):
        body = request_to_anthropic(sent, "claude-opus-5-5")
        assert anthropic_problem(HEADERS, body) is None


def test_thinking_is_never_the_answer() -> None:
    content: list[ContentBlock] = [THOUGHT, HIDDEN, TextBlock(text="The answer.")]
    assert TurnResult(status="complete", content=content).text == "The answer."
    assert _text_of([b.model_dump() for b in content]) == "The answer."
