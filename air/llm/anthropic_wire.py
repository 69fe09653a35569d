"""The Anthropic Messages wire shared by both transports (the SDK and plain httpx).

Owns the canonical -> Messages request (identity: canonical is Anthropic's format,
``cache_control`` passes through for prompt caching), the error reply -> AirError mapping
(with the provider's error ``type``), and reading a reply, streamed (SSE) or not, through
``AnthropicStreamNormalizer``. Imports no client.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from air.contracts import (
    AirError,
    ProviderCompletionInput,
    ProviderErrorEvent,
    ProviderStreamEvent,
)
from air.llm.adapter import StreamEnded
from air.llm.errors import error_for_status, parse_retry_after
from air.llm.normalize import AnthropicStreamNormalizer, BatchReader
from air.llm.sse import SSEDecoder

__all__ = [
    "anthropic_batches",
    "anthropic_status_error",
    "plain_raw_events",
    "request_to_anthropic",
]


def request_to_anthropic(request: ProviderCompletionInput, api_model: str) -> dict[str, Any]:
    """The ``messages.create`` keyword arguments (and the JSON body) for ``request`` (streaming)."""
    params: dict[str, Any] = {
        "model": api_model,
        "max_tokens": request.max_tokens,
        "messages": [m.model_dump(mode="json", exclude_none=True) for m in request.messages],
        "stream": True,
    }
    if isinstance(request.system, str):
        if request.system:
            params["system"] = request.system
    elif request.system:
        params["system"] = [b.model_dump(mode="json", exclude_none=True) for b in request.system]
    if request.tools:
        params["tools"] = [t.model_dump(mode="json", exclude_none=True) for t in request.tools]
    if request.tool_choice is not None:
        params["tool_choice"] = request.tool_choice.model_dump(mode="json", exclude_none=True)
    if request.temperature is not None:
        params["temperature"] = request.temperature
    if request.stop_sequences:
        params["stop_sequences"] = list(request.stop_sequences)
    return params


def anthropic_status_error(
    provider_id: str, status: int, text: str, headers: Mapping[str, str], body: object
) -> AirError:
    """The AirError of an HTTP error reply; ``body`` is its decoded JSON (or anything else)."""
    error = body.get("error") if isinstance(body, dict) else None
    return error_for_status(
        status,
        text,
        provider_id=provider_id,
        retry_after=parse_retry_after(headers),
        error_type=error.get("type") if isinstance(error, dict) else None,
    )


async def anthropic_batches(
    normalizer: AnthropicStreamNormalizer,
    failed: Callable[[AirError], ProviderErrorEvent],
    content_type: str,
    read: Callable[[], Awaitable[bytes]],
    chunks: Callable[[], AsyncIterator[bytes]],
) -> AsyncGenerator[list[ProviderStreamEvent], None]:
    """The event batches of one reply; raises ``StreamEnded`` when it stops before message_stop.

    Args:
        read: the whole body (a server that ignored ``stream=true`` sends one JSON Message).
        chunks: the body as it arrives.
    """
    if "json" in content_type:
        raw = plain_raw_events(json.loads(await read()))
        yield [event for item in raw for event in normalizer.feed(item)]
        return
    reader = BatchReader(normalizer, failed)
    decoder = SSEDecoder()
    async for chunk in chunks():
        datas = decoder.feed_data(chunk)
        if not datas:
            continue
        for batch in reader.batches(datas):
            yield batch
        if reader.over:
            return
    for batch in reader.batches([data for _name, data in decoder.close()], split=False):
        yield batch
    if not reader.over:
        raise StreamEnded("message_stop")


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
