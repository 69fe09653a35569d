"""OpenAI's Responses API as the wire of an ``openai_compatible`` model (``api: responses``).

Owns the canonical -> ``POST /responses`` request and reading its reply. The body: ``stream``,
``store: false`` (air keeps the conversation itself), the system prompt as ``instructions``,
the conversation as input items (user text as ``message`` items, each tool call a
``function_call`` item with its ``call_id``, each result a ``function_call_output``, each
``OpenAIReasoningBlock`` replayed as its ``reasoning`` item with its ``encrypted_content``, and
the items that followed it carrying their ids, as the API requires between tool calls), flat
function tools (``strict: false``: air's schemas are not strict ones; names API-legal through
``ToolNameMap``), ``reasoning: {effort}``, ``include: ["reasoning.encrypted_content"]`` for a
reasoning model and ``max_output_tokens``. Each turn is encoded once per conversation
(``EncodedTurns``, IMPL-TURN-1). The reply's events go through ``ResponsesStreamNormalizer``;
errors are ``HttpAdapter``'s. What the API cannot carry (stop sequences, a tool result in an
assistant turn) is an ``AirException(validation_error)``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from typing import Any

from air.contracts.error import AirError, AirException
from air.contracts.provider import (
    ContentBlock,
    ModelConfig,
    OpenAIReasoningBlock,
    ProviderCompletionInput,
    ProviderErrorEvent,
    ProviderStreamEvent,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from air.llm.convert import AnthropicCanonicalConverter
from air.llm.http11 import read_body
from air.llm.http_adapter import HttpReply
from air.llm.normalize import sse_batches
from air.llm.responses_stream import ResponsesStreamNormalizer
from air.llm.sse import model_json
from air.llm.tool_names import ToolNameMap
from air.llm.wire_memo import EncodedTurns, body_with_messages, dumps

__all__ = ["responses_batches", "responses_body"]

_CONVERTER = AnthropicCanonicalConverter()


def _lossy(message: str) -> AirException:
    return AirException.of(
        kind="validation_error",
        message=f"cannot send this to OpenAI's Responses API: {message}",
        user_action="Use a model on another wire (api: chat_completions), or restructure the turn.",
    )


def _assistant_items(blocks: list[ContentBlock], names: ToolNameMap) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    ids: list[str] = []
    """The ids of the items after the last reasoning item, still to be given out."""
    for block in blocks:
        if isinstance(block, OpenAIReasoningBlock):
            item: dict[str, Any] = {
                "type": "reasoning",
                "id": block.id,
                "summary": [{"type": "summary_text", "text": t} for t in block.summary],
            }
            if block.encrypted_content is not None:
                item["encrypted_content"] = block.encrypted_content
            items.append(item)
            ids = list(block.next_item_ids)
        elif isinstance(block, TextBlock):
            if ids:
                part = {"type": "output_text", "text": block.text, "annotations": []}
                item = {"type": "message", "role": "assistant", "content": [part]}
                items.append({**item, "id": ids.pop(0), "status": "completed"})
            else:
                items.append({"type": "message", "role": "assistant", "content": block.text})
        elif isinstance(block, ToolUseBlock):
            item = {
                "type": "function_call",
                "call_id": block.id,
                "name": names.wire(block.name),
                "arguments": json.dumps(block.input, ensure_ascii=False),
            }
            items.append({**item, "id": ids.pop(0)} if ids else item)
        elif isinstance(block, ToolResultBlock):
            raise _lossy("a tool_result block in an assistant turn")
        # another vendor's reasoning (thinking) cannot be replayed here: left out
    return items


def _output(block: ToolResultBlock) -> str | list[dict[str, Any]]:
    """A tool result's ``output``, with the chat wire's error marker (IMPL-LLM-4)."""
    content = _CONVERTER._tool_result_to_openai(block)["content"]
    if isinstance(content, str):
        return content
    return [{"type": "input_text", "text": part["text"]} for part in content]


def _user_items(blocks: list[ContentBlock]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            parts.append({"type": "input_text", "text": block.text})
        elif isinstance(block, ToolResultBlock):
            if parts:
                items.append({"type": "message", "role": "user", "content": parts})
                parts = []
            output = _output(block)
            items.append(
                {"type": "function_call_output", "call_id": block.tool_use_id, "output": output}
            )
        elif isinstance(block, ToolUseBlock):
            raise _lossy("a tool_use block in a user turn")
    if parts:
        items.append({"type": "message", "role": "user", "content": parts})
    return items


def _head(
    request: ProviderCompletionInput, api_model: str, names: ToolNameMap, model: ModelConfig
) -> dict[str, Any]:
    """Every field of the body but ``input`` (the model's ``params`` first: the fields air
    sets win)."""
    if request.stop_sequences:
        raise _lossy("stop sequences (the API takes none)")
    body: dict[str, Any] = {
        **model.params,
        "model": api_model,
        "max_output_tokens": request.max_tokens,
        "stream": True,
        "store": False,
    }
    body.pop("input", None)
    system = request.system
    if isinstance(system, list):
        system = "\n\n".join(b.text for b in system)
    if system:
        body["instructions"] = system
    if model.reasoning_effort is not None:
        body["reasoning"] = {"effort": model.reasoning_effort}
    if model.reasoning_efforts:
        body["include"] = ["reasoning.encrypted_content"]
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "name": names.wire(t.name),
                "description": t.description,
                "parameters": t.input_schema,
                "strict": False,
            }
            for t in request.tools
        ]
    choice = request.tool_choice
    if choice is not None:
        if choice.type == "tool":
            if not choice.name:
                raise _lossy("tool_choice 'tool' without a name")
            body["tool_choice"] = {"type": "function", "name": names.wire(choice.name)}
        else:
            body["tool_choice"] = {"auto": "auto", "none": "none", "any": "required"}[choice.type]
    if request.temperature is not None:
        body["temperature"] = request.temperature
    return body


def responses_body(
    request: ProviderCompletionInput,
    api_model: str,
    names: ToolNameMap,
    memo: EncodedTurns,
    model: ModelConfig,
) -> bytes:
    """The ``POST /responses`` body as JSON bytes, its turns encoded through ``memo`` (each once
    per conversation: IMPL-TURN-1)."""

    def encode(role: str, blocks: list[ContentBlock]) -> bytes:
        items = _assistant_items(blocks, names) if role == "assistant" else _user_items(blocks)
        return b",".join(dumps(item) for item in items)

    context = ("responses", *(t.name for t in request.tools))
    pieces = [piece for piece in memo.pieces(request.messages, encode, context) if piece]
    return body_with_messages(_head(request, api_model, names, model), pieces, key="input")


def _plain_events(response: dict[str, Any]) -> list[dict[str, Any]]:
    """The events of a non-streamed Response object, as if it had been streamed."""
    events: list[dict[str, Any]] = [{"type": "response.created", "response": response}]
    for number, item in enumerate(response.get("output") or []):
        events.append({"type": "response.output_item.added", "output_index": number, "item": item})
        if item.get("type") == "message":
            for part in item.get("content") or []:
                kind = "refusal" if part.get("type") == "refusal" else "output_text"
                text = part.get("refusal") if kind == "refusal" else part.get("text")
                delta = {"type": f"response.{kind}.delta", "output_index": number, "delta": text}
                events.append(delta)
        events.append({"type": "response.output_item.done", "output_index": number, "item": item})
    status = response.get("status")
    final = status if status in ("incomplete", "failed") else "completed"
    events.append({"type": f"response.{final}", "response": response})
    return events


async def responses_batches(
    normalizer: ResponsesStreamNormalizer,
    failed: Callable[[AirError], ProviderErrorEvent],
    response: HttpReply,
) -> AsyncGenerator[list[ProviderStreamEvent], None]:
    """The event batches of one reply; raises ``StreamEnded`` when it stops before the
    response's final event."""
    if "json" in response.headers.get("content-type", ""):
        # a server that ignored stream=true: one whole Response object
        whole = model_json(await read_body(response.aiter_bytes()))
        yield [event for raw in _plain_events(whole) for event in normalizer.feed(raw)]
        return
    final = "response.completed"
    async with aclosing(sse_batches(normalizer, failed, response.aiter_bytes(), final)) as batches:
        async for batch in batches:
            yield batch
