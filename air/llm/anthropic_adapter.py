"""AnthropicAdapter: the Messages API through the official ``anthropic`` SDK (AsyncAnthropic).

Owns the SDK client (created on first use; the SDK is imported only then, it costs about a
second of CPU), the canonical -> Messages request (identity: canonical is Anthropic's format,
``cache_control`` passes through for prompt caching), and reading the SSE stream through
``AnthropicStreamNormalizer``. The SDK's own retries are off (``max_retries=0``): the
ProviderManager retries. ``aclose`` closes the client explicitly (its automatic cleanup
assumes asyncio; under Trio it runs through anyio).
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Mapping
from typing import Any

from air.contracts import (
    AirError,
    AirException,
    ProviderCompletionInput,
    ProviderConfig,
    ProviderErrorEvent,
    ProviderStreamEvent,
)
from air.llm.adapter import ProviderAdapter, redact_error
from air.llm.errors import error_for_status, parse_retry_after, protocol_error, transport_error
from air.llm.normalize import AnthropicStreamNormalizer, drain
from air.llm.sse import SSEDecoder

__all__ = ["AnthropicAdapter", "plain_raw_events", "request_to_anthropic"]


def request_to_anthropic(request: ProviderCompletionInput, api_model: str) -> dict[str, Any]:
    """The ``messages.create`` keyword arguments for ``request`` (streaming)."""
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


class AnthropicAdapter(ProviderAdapter):
    def __init__(
        self, provider_id: str, config: ProviderConfig, *, env: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(provider_id, config, env=env)
        self._client: Any = None

    def _sdk(self) -> Any:
        if self._client is None:
            import anthropic  # lazy: ~1 s of imports, only in the process that calls the API

            kwargs: dict[str, Any] = {
                "api_key": self.api_key(),
                "max_retries": 0,
                "timeout": self.config.timeout_s,
            }
            if self.config.base_url:
                kwargs["base_url"] = self.config.base_url
            self._client = anthropic.AsyncAnthropic(**kwargs)
        return self._client

    async def complete_batches(
        self, request: ProviderCompletionInput
    ) -> AsyncGenerator[list[ProviderStreamEvent], None]:
        params = request_to_anthropic(request, self.api_model(request.model_id))
        client = self._sdk()
        import anthropic

        transport_errors = _transport_errors()

        normalizer = AnthropicStreamNormalizer(self.provider_id, request.model_id)
        decoder = SSEDecoder()
        first = True
        try:
            async with client.messages.with_streaming_response.create(**params) as response:
                if "json" in response.headers.get("content-type", ""):
                    # a server that ignored stream=true: one whole Message object
                    raw = plain_raw_events(json.loads(await response.read()))
                    yield [event for item in raw for event in normalizer.feed(item)]
                    return
                async for chunk in response.iter_bytes():
                    datas = decoder.feed_data(chunk)
                    if not datas:
                        continue
                    # message_start goes out alone so batching never delays it
                    for batch in (datas[:1], datas[1:]) if first else (datas,):
                        first = False
                        events, failure = drain(normalizer, batch)
                        if failure is not None:
                            yield [*events, self._failed(failure)]
                            return
                        if events:
                            yield events
                        if normalizer.done:
                            return
                events, failure = drain(normalizer, [data for _name, data in decoder.close()])
                if failure is not None:
                    yield [*events, self._failed(failure)]
                    return
                if events:
                    yield events
                if normalizer.done:
                    return
        except anthropic.APIStatusError as exc:
            err_type = None
            if isinstance(exc.body, dict):
                err_type = (exc.body.get("error") or {}).get("type")
            yield [
                self._failed(
                    error_for_status(
                        exc.status_code,
                        exc.response.text,
                        provider_id=self.provider_id,
                        retry_after=parse_retry_after(exc.response.headers),
                        error_type=err_type,
                    )
                )
            ]
            return
        except transport_errors as exc:
            yield [self._failed(transport_error(self.provider_id, exc))]
            return
        except json.JSONDecodeError as exc:
            yield [
                self._failed(
                    protocol_error(self.provider_id, "malformed SSE data (not JSON)", str(exc))
                )
            ]
            return
        except AirException as exc:
            yield [self._failed(exc.error)]
            return
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            # a non-streamed reply of the wrong shape
            detail = f"{type(exc).__name__}: {exc}"
            yield [self._failed(protocol_error(self.provider_id, "unexpected reply", detail))]
            return
        yield [
            self._failed(
                transport_error(
                    self.provider_id, ConnectionError("the stream ended before message_stop")
                )
            )
        ]

    def _failed(self, error: AirError) -> ProviderErrorEvent:
        return ProviderErrorEvent(error=redact_error(error, self.secrets()))

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()


def _transport_errors() -> tuple[type[BaseException], ...]:
    """Connection failures the SDK lets through while a body streams (its httpx fork or httpx)."""
    import importlib

    import anthropic

    errors: list[type[BaseException]] = [anthropic.APIConnectionError]
    for name in ("httpx2", "httpx"):
        try:
            errors.append(importlib.import_module(name).TransportError)
        except ImportError:
            continue
    return tuple(errors)


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
