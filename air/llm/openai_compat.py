"""OpenAICompatibleAdapter: any ``/v1/chat/completions`` server over httpx (OpenAI, OpenRouter,
Ollama, llama.cpp, vLLM), streamed with SSE.

Owns the HTTP exchange: one lazily created ``httpx.AsyncClient`` (works under Trio through
anyio), the bearer key from ``auth_ref``, status -> AirError mapping with ``retry-after``, and
feeding the SSE stream through ``OpenAIStreamNormalizer``. Imported lazily by the manager.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Mapping
from typing import Any

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
from air.llm.convert import AnthropicCanonicalConverter
from air.llm.errors import error_for_status, parse_retry_after, protocol_error, transport_error
from air.llm.normalize import OpenAIStreamNormalizer, drain
from air.llm.sse import SSEDecoder

__all__ = ["OpenAICompatibleAdapter"]


class OpenAICompatibleAdapter(ProviderAdapter):
    def __init__(
        self, provider_id: str, config: ProviderConfig, *, env: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(provider_id, config, env=env)
        if not config.base_url:
            raise AirException.of(
                kind="config_error",
                message=f"provider {provider_id!r} (openai_compatible) has no base_url",
                user_action=f"Set providers.{provider_id}.base_url, e.g. http://127.0.0.1:11434/v1.",
            )
        self._base_url = config.base_url.rstrip("/")
        self._client: httpx.AsyncClient | None = None
        self.converter = AnthropicCanonicalConverter()

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.config.timeout_s),
                # plain-http endpoints (Ollama, llama.cpp) need no CA bundle: skip loading it
                verify=not self._base_url.startswith("http://"),
            )
        return self._client

    async def complete_batches(
        self, request: ProviderCompletionInput
    ) -> AsyncGenerator[list[ProviderStreamEvent], None]:
        body = self.converter.request_to_openai(request, self.api_model(request.model_id))
        headers = {"content-type": "application/json", "accept": "text/event-stream"}
        key = self.api_key(required=False) if self.config.auth_ref else None
        if key:
            headers["authorization"] = f"Bearer {key}"
        normalizer = OpenAIStreamNormalizer(self.provider_id, request.model_id)
        decoder = SSEDecoder()
        url = f"{self._base_url}/chat/completions"
        first = True
        try:
            async with self._http().stream("POST", url, json=body, headers=headers) as response:
                if response.status_code >= 400:
                    text = (await response.aread()).decode("utf-8", errors="replace")
                    retry_after = parse_retry_after(response.headers)
                    yield [
                        self._failed(
                            error_for_status(
                                response.status_code,
                                text,
                                provider_id=self.provider_id,
                                retry_after=retry_after,
                            )
                        )
                    ]
                    return
                if "json" in response.headers.get("content-type", ""):
                    # a server that ignored stream=true: one whole completion object
                    yield _plain_events(normalizer, json.loads(await response.aread()))
                    return
                async for chunk in response.aiter_bytes():
                    datas = decoder.feed_data(chunk)
                    if not datas:
                        continue
                    done = "[DONE]" in datas
                    if done:
                        datas = datas[: datas.index("[DONE]")]
                    # the first event goes out alone so batching never delays it
                    for batch in (datas[:1], datas[1:]) if first else (datas,):
                        first = False
                        events, failure = drain(normalizer, batch)
                        if failure is not None:
                            yield [*events, self._failed(failure)]
                            return
                        if events:
                            yield events
                    if done:
                        yield normalizer.finish()
                        return
                datas = [data for _name, data in decoder.close()]
                if datas and datas[-1].strip() == "[DONE]":
                    events, failure = drain(normalizer, datas[:-1])
                    if failure is not None:
                        yield [*events, self._failed(failure)]
                        return
                    yield [*events, *normalizer.finish()]
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
                transport_error(self.provider_id, ConnectionError("the stream ended before [DONE]"))
            )
        ]

    def _failed(self, error: AirError) -> ProviderErrorEvent:
        return ProviderErrorEvent(error=redact_error(error, self.secrets()))

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()


def _plain_events(
    normalizer: OpenAIStreamNormalizer, completion: dict[str, Any]
) -> list[ProviderStreamEvent]:
    """Events for a non-streamed chat completion, as if it had arrived in one chunk."""
    choices = completion.get("choices") or []
    message = (choices[0].get("message") if choices else None) or {}
    calls = [{**call, "index": i} for i, call in enumerate(message.get("tool_calls") or [])]
    chunk = {
        "id": completion.get("id", ""),
        "model": completion.get("model"),
        "choices": [
            {
                "index": 0,
                "delta": {"content": message.get("content"), "tool_calls": calls},
                "finish_reason": choices[0].get("finish_reason") if choices else None,
            }
        ],
        "usage": completion.get("usage"),
    }
    return normalizer.feed(chunk) + normalizer.finish()
