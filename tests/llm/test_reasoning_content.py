"""A chat server's ``reasoning_content`` (DeepSeek's V4, thinking by default; vLLM; Kimi): read
from the stream into one block, never a stream event (never shown), sent back on that turn's
assistant message, left out by the other wires and by what air re-reads; the strict server
refuses a DeepSeek V4 tool-call turn sent back without it, as the API does. The whole batch on
deepseek-v4-pro: tests/llm/test_calc_end_to_end.py."""

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
from air.testing.openai_rules import openai_problem
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
