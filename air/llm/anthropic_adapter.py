"""AnthropicAdapter: the Messages API through the official ``anthropic`` SDK (AsyncAnthropic),
chosen by ``transport: sdk`` (the default is the plain HTTP adapter, IMPL-START-2).

Owns the SDK client (created on first use; the SDK is imported only then, it costs about a
second of CPU) and the SDK's error and connection-failure types. The request, the SSE reading
through ``AnthropicStreamNormalizer`` and the error mapping are shared with the plain-httpx
transport (air.llm.anthropic_wire). The SDK's own retries are off (``max_retries=0``): the
ProviderManager retries; no redirect is followed (IMPL-LLM-7). ``aclose`` closes the client
explicitly (its automatic cleanup assumes asyncio; under Trio it runs through anyio).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from contextlib import aclosing
from typing import Any

from air.contracts.provider import ProviderCompletionInput, ProviderConfig, ProviderStreamEvent
from air.llm.adapter import STREAM_FAILURES, ProviderAdapter
from air.llm.anthropic_wire import anthropic_batches, anthropic_status_error, request_to_anthropic
from air.llm.config import base_url_of
from air.llm.http11 import LeftBody
from air.llm.normalize import AnthropicStreamNormalizer
from air.llm.tool_names import ToolNameMap

__all__ = ["AnthropicAdapter"]


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
                "timeout": anthropic.Timeout(
                    self.config.timeout_s, read=self.config.read_timeout_s
                ),
            }
            # the same endpoint as the HTTP transport (not the SDK's own reading of the env)
            kwargs["base_url"] = base_url_of(self.config, self._env)[0]
            # no redirect followed: the SDK's own client follows them, and at the floor this
            # project declares (0.46) took the x-api-key header to any origin a reply named;
            # a 3xx is an error here as over the HTTP transport (IMPL-LLM-7)
            kwargs["http_client"] = anthropic.DefaultAsyncHttpxClient(follow_redirects=False)
            kwargs["default_headers"] = self.extra_headers()
            self._client = anthropic.AsyncAnthropic(**kwargs)
        return self._client

    async def complete_batches(
        self, request: ProviderCompletionInput
    ) -> AsyncGenerator[list[ProviderStreamEvent], None]:
        names = ToolNameMap(t.name for t in request.tools)
        params = request_to_anthropic(
            request, self.api_model(request.model_id), names, self.model_config(request.model_id)
        )
        if "output_config" in params:  # newer than the SDK this project declares (0.46)
            params["extra_body"] = {"output_config": params.pop("output_config")}
        client = self._sdk()
        import anthropic

        failures = (*_transport_errors(), *STREAM_FAILURES)
        normalizer = AnthropicStreamNormalizer(self.provider_id, request.model_id, names)
        try:
            async with client.messages.with_streaming_response.create(**params) as response:
                content_type = response.headers.get("content-type", "")
                body = LeftBody(response.iter_bytes)  # drained after: httpx keeps the connection
                reply = anthropic_batches(normalizer, self.failed, content_type, body.chunks)
                async with aclosing(body.through(reply, failures)) as batches:
                    async for batch in batches:
                        yield batch
        except anthropic.APIStatusError as exc:
            error = anthropic_status_error(
                self.provider_id,
                exc.status_code,
                exc.response.text,
                exc.response.headers,
                exc.body,
            )
            yield [self.failed(error)]
        except failures as exc:
            yield [self.failed(self.failure_of(exc))]

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
