"""The Anthropic Messages wire shared by both transports (the SDK and plain HTTP).

Owns the canonical -> Messages request (canonical is Anthropic's format, ``cache_control``
passes through; the stable prefix of a caching model is marked: ``mark_cache_breakpoints``;
tool names go out API-legal through ``ToolNameMap``; as a dict for the SDK, as JSON bytes with
each message encoded once for plain HTTP), the
error reply -> AirError mapping (with the provider's error ``type`` and ``message``), and
reading a reply, streamed (SSE) or not, through ``AnthropicStreamNormalizer``. Imports no
client.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from contextlib import aclosing
from typing import Any

from air.contracts.error import AirError
from air.contracts.provider import (
    ContentBlock,
    ModelConfig,
    ProviderCompletionInput,
    ProviderErrorEvent,
    ProviderStreamEvent,
    ToolUseBlock,
)
from air.llm.convert import clean_messages
from air.llm.errors import api_error_of, error_for_status, parse_retry_after, redirect_target
from air.llm.http11 import read_body
from air.llm.normalize import AnthropicStreamNormalizer, sse_batches
from air.llm.sse import model_json
from air.llm.tool_names import ToolNameMap
from air.llm.wire_memo import EncodedTurns, body_with_messages, dumps

__all__ = [
    "MAX_BREAKPOINTS",
    "anthropic_batches",
    "anthropic_body",
    "anthropic_status_error",
    "mark_cache_breakpoints",
    "plain_raw_events",
    "request_to_anthropic",
]


def _block(block: ContentBlock, names: ToolNameMap) -> dict[str, Any]:
    data = block.model_dump(mode="json", exclude_none=True)
    if isinstance(block, ToolUseBlock):
        data["name"] = names.wire(block.name)
        data.pop("extra_content", None)  # a chat server's: only its own wire sends it back
        data.pop("input_error", None)  # air's own note (IMPL-API-8)
    return data


_NOT_SENT = ("openai_reasoning", "reasoning_content", "reasoning_details")


def _sent(blocks: list[ContentBlock]) -> list[ContentBlock]:
    """``blocks`` without another vendor's reasoning (OpenAI's reasoning items, a chat server's
    ``reasoning_content`` or ``reasoning_details``): only their own wires send them back."""
    return [b for b in blocks if b.type not in _NOT_SENT]


def request_to_anthropic(
    request: ProviderCompletionInput,
    api_model: str,
    names: ToolNameMap | None = None,
    model: ModelConfig | None = None,
) -> dict[str, Any]:
    """The ``messages.create`` keyword arguments (and the JSON body) for ``request`` (streaming).

    Tool names go out through ``names`` (default: the map of ``request.tools``), empty text
    blocks are left out (``clean_messages``). When ``model`` supports prompt caching the stable
    prefix is marked (``mark_cache_breakpoints``); its ``params`` are sent as they are.
    """
    names = names if names is not None else ToolNameMap(t.name for t in request.tools)
    messages = [
        {"role": message.role, "content": [_block(b, names) for b in _sent(message.content)]}
        for message in clean_messages(request.messages)
    ]
    params = {**_head(request, api_model, names, model), "messages": messages}
    if model is not None and model.supports_prompt_cache:
        mark_cache_breakpoints(params)
    return params


def anthropic_body(
    request: ProviderCompletionInput,
    api_model: str,
    names: ToolNameMap,
    memo: EncodedTurns,
    model: ModelConfig | None = None,
) -> bytes:
    """``request_to_anthropic``'s body as JSON bytes, its messages encoded through ``memo``
    (each once per conversation: IMPL-TURN-1). For a caching model only the last message is
    decoded again, to carry its breakpoint; the memo keeps the unmarked piece."""

    def encode(role: str, blocks: list[ContentBlock]) -> bytes:
        return dumps({"role": role, "content": [_block(b, names) for b in _sent(blocks)]})

    tool_names = tuple(t.name for t in request.tools)
    pieces = memo.pieces(request.messages, encode, tool_names)
    head = _head(request, api_model, names, model)
    if model is not None and model.supports_prompt_cache:
        earlier = sum(piece.count(b'"cache_control"') for piece in pieces[:-1])
        last = [json.loads(pieces[-1])] if pieces else []
        params = {**head, "messages": last}
        mark_cache_breakpoints(params, already=earlier)
        if last:
            pieces = [*pieces[:-1], dumps(last[0])]
        head = {k: v for k, v in params.items() if k != "messages"}
    return body_with_messages(head, pieces)


def _head(
    request: ProviderCompletionInput,
    api_model: str,
    names: ToolNameMap,
    model: ModelConfig | None,
) -> dict[str, Any]:
    """Every field of the request body but ``messages`` (the model's ``params`` first: the
    fields air sets win)."""
    params: dict[str, Any] = {
        **(model.params if model is not None else {}),
        "model": api_model,
        "max_tokens": request.max_tokens,
        "stream": True,
    }
    params.pop("messages", None)
    if isinstance(request.system, str):
        if request.system:
            params["system"] = request.system
    elif request.system:
        params["system"] = [b.model_dump(mode="json", exclude_none=True) for b in request.system]
    if request.tools:
        params["tools"] = [
            {**t.model_dump(mode="json", exclude_none=True), "name": names.wire(t.name)}
            for t in request.tools
        ]
    if request.tool_choice is not None:
        choice = request.tool_choice.model_dump(mode="json", exclude_none=True)
        if choice.get("name"):
            choice["name"] = names.wire(choice["name"])
        params["tool_choice"] = choice
    if request.temperature is not None:
        params["temperature"] = request.temperature
    if request.stop_sequences:
        params["stop_sequences"] = list(request.stop_sequences)
    if model is not None and model.reasoning_effort is not None:
        output = params.get("output_config")
        params["output_config"] = {
            **(output if isinstance(output, dict) else {}),
            "effort": model.reasoning_effort,
        }
    return params


MAX_BREAKPOINTS = 4
"""The most ``cache_control`` blocks one Messages request may carry."""
_EPHEMERAL = {"type": "ephemeral"}


def _marked(block: dict[str, Any]) -> bool:
    return "cache_control" in block


def mark_cache_breakpoints(params: dict[str, Any], *, already: int = 0) -> None:
    """Mark the stable prefix of a Messages body for prompt caching, in place: the last tool,
    the last system block and the last block of the conversation so far each get
    ``cache_control: ephemeral`` (the next turn reads everything up to there from the cache),
    while the body carries at most ``MAX_BREAKPOINTS`` (breakpoints already there count, and
    ``already`` more in messages that ``params`` leaves out)."""
    system = params.get("system")
    if isinstance(system, str):
        params["system"] = system = [{"type": "text", "text": system}]
    tools: list[dict[str, Any]] = params.get("tools") or []
    messages: list[dict[str, Any]] = params.get("messages") or []
    blocks = [*(system or []), *tools, *(b for m in messages for b in m["content"])]
    used = already + sum(1 for block in blocks if _marked(block))
    last_message = messages[-1]["content"] if messages else []
    for group in (tools, system or [], last_message):
        if not group or used >= MAX_BREAKPOINTS or _marked(group[-1]):
            continue
        group[-1]["cache_control"] = dict(_EPHEMERAL)
        used += 1


def anthropic_status_error(
    provider_id: str, status: int, text: str, headers: Mapping[str, str], body: object
) -> AirError:
    """The AirError of an HTTP error reply; ``body`` is its decoded JSON (or anything else)."""
    error_type, message = api_error_of(body)
    return error_for_status(
        status,
        text,
        provider_id=provider_id,
        retry_after=parse_retry_after(headers),
        error_type=error_type,
        api_message=message,
        location=redirect_target(headers),
    )


async def anthropic_batches(
    normalizer: AnthropicStreamNormalizer,
    failed: Callable[[AirError], ProviderErrorEvent],
    content_type: str,
    chunks: Callable[[], AsyncIterator[bytes]],
) -> AsyncGenerator[list[ProviderStreamEvent], None]:
    """The event batches of one reply; raises ``StreamEnded`` when it stops before message_stop
    and ``ReplyTooLarge`` past its bounds (``air.llm.sse``).

    Args:
        chunks: the body as it arrives (a server that ignored ``stream=true`` sends one JSON
            Message, read whole).
    """
    if "json" in content_type:
        raw = plain_raw_events(model_json(await read_body(chunks())))
        yield [event for item in raw for event in normalizer.feed(item)]
        return
    async with aclosing(sse_batches(normalizer, failed, chunks(), "message_stop")) as batches:
        async for batch in batches:
            yield batch


def plain_raw_events(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The stream events equivalent to a non-streamed Messages response."""
    usage = message.get("usage") or {}
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {**message, "content": [], "usage": usage}}
    ]
    for index, block in enumerate(message.get("content") or []):
        if block.get("type") == "tool_use":
            start = {**block, "input": {}}
            events.append({"type": "content_block_start", "index": index, "content_block": start})
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            events.append({"type": "content_block_delta", "index": index, "delta": delta})
        else:
            events.append({"type": "content_block_start", "index": index, "content_block": block})
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": message.get("stop_reason")},
            "usage": usage,
        }
    )
    events.append({"type": "message_stop"})
    return events
