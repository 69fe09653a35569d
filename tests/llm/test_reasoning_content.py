"""What a chat server asks to get back with a turn: ``reasoning_content`` (DeepSeek's V4,
thinking by default; vLLM; Kimi), read from the stream into one block, never a stream event
(never shown), sent back on that turn's assistant message; a call's ``extra_content`` (Gemini
3+'s thought signature), sent back with the call. The other wires and what air re-reads leave
both out; the strict server refuses a DeepSeek V4 tool-call turn without its reasoning and a
Gemini call without its signature, as the APIs do. Whole batches on deepseek-v4-pro and
gemini-3.8-flash: tests/llm/test_calc_end_to_end.py."""

from __future__ import annotations

from typing import Any

from air.context.row_text import render_blocks
from air.contracts.provider import (
    CanonicalMessage,
    MessageStopEvent,
    ProviderCompletionInput,
    ReasoningContentBlock,
    TextBlock,
    ToolUseBlock,
)
from air.llm.anthropic_wire import request_to_anthropic
from air.llm.convert import AnthropicCanonicalConverter
from air.llm.manager import ProviderManager
from air.testing.openai_rules import openai_problem, thought_signature
from tests.llm.conftest import FAKE_KEY
from tests.llm.helpers import collect, models_config, request
from tests.llm.servers import LocalServer, Reply, blocks_sse

CONVERT = AnthropicCanonicalConverter()
THOUGHT = ReasoningContentBlock(text="first the tokenizer")
CALL = ToolUseBlock(id="call_1", name="read_file", input={"path": "a.py"})


def _conversation(reply: list[Any]) -> list[CanonicalMessage]:
    return [
        CanonicalMessage(role="user", content=[TextBlock(text="fix it")]),
        CanonicalMessage(role="assistant", content=reply),
    ]


async def test_the_stream_s_reasoning_is_one_block_and_no_event(server: LocalServer) -> None:
    call = ("call_1", "read_file", ['{"path": "a.py"}'])
    blocks = [("reasoning_content", ["first ", "the tokenizer"]), ("tool_use", call)]
    server.push(Reply(chunks=blocks_sse("openai", blocks, "tool_use")))
    manager = ProviderManager(models_config("openai", server.url), env={"AIR_TEST_KEY": FAKE_KEY})
    try:
        got = await collect(manager, request())
    finally:
        await manager.aclose()
    stop = got.events[-1]
    assert isinstance(stop, MessageStopEvent)
    assert stop.content == [THOUGHT, CALL]
    assert "tokenizer" not in "".join(
        str(e) for e in got.events if not isinstance(e, MessageStopEvent)
    )


def test_it_goes_back_on_its_own_turn_and_reads_back_the_same() -> None:
    sent = CONVERT.messages_to_openai(_conversation([THOUGHT, CALL]))
    assert sent[1]["reasoning_content"] == "first the tokenizer"
    assert sent[1]["tool_calls"][0]["id"] == "call_1"
    plain = CONVERT.messages_to_openai(_conversation([TextBlock(text="done")]))
    assert "reasoning_content" not in plain[1]  # only where the server sent it
    _, back = CONVERT.messages_from_openai(sent)
    assert back[1].content == [THOUGHT, CALL]


def test_the_other_wires_and_air_s_own_reading_leave_it_out() -> None:
    req = ProviderCompletionInput(
        provider_id="p", model_id="claude-test", messages=_conversation([THOUGHT, CALL])
    )
    anthropic = request_to_anthropic(req, "claude-test")
    assert "reasoning_content" not in str(anthropic["messages"])
    assert "tokenizer" not in str(anthropic["messages"])
    assert "tokenizer" not in render_blocks([THOUGHT.model_dump(), CALL.model_dump()])


def _body(model: str, assistant: dict[str, Any]) -> dict[str, Any]:
    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    return {
        "model": model,
        "stream": True,
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [call], **assistant},
            {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
        ],
    }


def test_the_strict_server_refuses_a_deepseek_tool_turn_without_its_reasoning() -> None:
    headers = {"authorization": f"Bearer {FAKE_KEY}"}
    refused = openai_problem(headers, _body("deepseek-v4-pro", {}))
    assert refused is not None
    assert refused.status == 400
    assert refused.message == (
        "The reasoning_content in the thinking mode must be passed back to the API."
    )
    kept = {"reasoning_content": "first the tokenizer"}
    assert openai_problem(headers, _body("deepseek-v4-flash", kept)) is None
    assert openai_problem(headers, _body("gpt-4.1", {})) is None  # not a thinking model


SIGNED = ToolUseBlock(
    id="call_1",
    name="read_file",
    input={"path": "a.py"},
    extra_content={"google": {"thought_signature": thought_signature("call_1")}},
)


def test_a_call_s_extra_content_goes_back_with_it_on_its_own_wire_only() -> None:
    sent = CONVERT.messages_to_openai(_conversation([SIGNED]))
    assert sent[1]["tool_calls"][0]["extra_content"] == SIGNED.extra_content
    _, back = CONVERT.messages_from_openai(sent)
    assert back[1].content == [SIGNED]
    req = ProviderCompletionInput(
        provider_id="p", model_id="claude-test", messages=_conversation([SIGNED])
    )
    anthropic = request_to_anthropic(req, "claude-test")
    assert anthropic["messages"][1]["content"] == [
        {"type": "tool_use", "id": "call_1", "name": "read_file", "input": {"path": "a.py"}}
    ]


def test_the_strict_server_refuses_a_gemini_call_back_without_its_signature() -> None:
    headers = {"authorization": f"Bearer {FAKE_KEY}"}
    bare = openai_problem(headers, _body("gemini-3.8-flash", {}))
    assert bare is not None
    assert bare.message.startswith("Function call is missing a thought_signature")
    forged = _body("gemini-3.8-flash", {})
    forged["messages"][1]["tool_calls"][0]["extra_content"] = {
        "google": {"thought_signature": thought_signature("call_2")}
    }
    corrupted = openai_problem(headers, forged)
    assert corrupted is not None
    assert corrupted.message == "Corrupted thought signature."
    kept = _body("gemini-3.8-flash", {})
    kept["messages"][1]["tool_calls"][0]["extra_content"] = SIGNED.extra_content
    assert openai_problem(headers, kept) is None
    assert openai_problem(headers, _body("gemini-2.5-flash", {})) is None  # signs nothing here
