"""AnthropicHttpAdapter: the Messages API over plain httpx (``transport: http``), no SDK.

Owns the same exchange as ``AnthropicAdapter`` (same request body, same SSE decoding and
``AnthropicStreamNormalizer``, same error mapping) with the wire headers set here
(``x-api-key``, ``anthropic-version``). It exists for start-up time: the SDK costs about a
second of imports, this path about a tenth of that (bench/providers.py; IMPL-LLM-7).
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Mapping

import httpx

from air.contracts import (
    AirError,
    AirException,
    ProviderCompletionInput,
    ProviderConfig,
    ProviderErrorEvent,
    ProviderStreamEvent,
)
from air.llm.adapter import ProviderAdapter, redact_error
from air.llm.anthropic_adapter import plain_raw_events, request_to_anthropic
from air.llm.errors import error_for_status, parse_retry_after, protocol_error, transport_error
from air.llm.normalize import AnthropicStreamNormalizer, drain
from air.llm.sse import SSEDecoder

__all__ = ["ANTHROPIC_VERSION", "AnthropicHttpAdapter"]

ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_BASE_URL = "https://api.anthropic.com"


class AnthropicHttpAdapter(ProviderAdapter):
    def __init__(
        self, provider_id: str, config: ProviderConfig, *, env: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(provider_id, config, env=env)
        self._base_url = (config.base_url or DEFAULT_BASE_URL).rstrip("/")
        self._client: httpx.AsyncClient | None = None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.config.timeout_s),
                # plain-http endpoints (local proxies) need no CA bundle: skip loading it
                verify=not self._base_url.startswith("http://"),
            )
        return self._client

    async def complete_batches(
        self, request: ProviderCompletionInput
    ) -> AsyncGenerator[list[ProviderStreamEvent], None]:
        body = request_to_anthropic(request, self.api_model(request.model_id))
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream",
            "anthropic-version": ANTHROPIC_VERSION,
            "x-api-key": self.api_key() or "",
        }
        normalizer = AnthropicStreamNormalizer(self.provider_id, request.model_id)
        decoder = SSEDecoder()
        url = f"{self._base_url}/v1/messages"
        first = True
        try:
            async with self._http().stream("POST", url, json=body, headers=headers) as response:
                if response.status_code >= 400:
                    text = (await response.aread()).decode("utf-8", errors="replace")
                    yield [self._failed(self._status_error(response, text))]
                    return
                if "json" in response.headers.get("content-type", ""):
                    raw = plain_raw_events(json.loads(await response.aread()))
                    yield [event for item in raw for event in normalizer.feed(item)]
                    return
                async for chunk in response.aiter_bytes():
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
        except httpx.TransportError as exc:
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

    def _status_error(self, response: httpx.Response, text: str) -> AirError:
        err_type = None
        try:
            parsed = json.loads(text)
            if isinstance(parsed, dict) and isinstance(parsed.get("error"), dict):
                err_type = parsed["error"].get("type")
        except json.JSONDecodeError:
            pass
        return error_for_status(
            response.status_code,
            text,
            provider_id=self.provider_id,
            retry_after=parse_retry_after(response.headers),
            error_type=err_type,
        )

    def _failed(self, error: AirError) -> ProviderErrorEvent:
        return ProviderErrorEvent(error=redact_error(error, self.secrets()))

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()
