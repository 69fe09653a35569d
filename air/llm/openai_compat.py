"""OpenAICompatibleAdapter: any ``/v1/chat/completions`` server over httpx (OpenAI, OpenRouter,
Ollama, llama.cpp, vLLM), streamed with SSE; a model with ``api: responses`` is called on
OpenAI's ``/v1/responses`` instead (``air.llm.responses_wire``).

Owns choosing the wire per model and the chat-completions exchange: the bearer key from
``auth_ref``, the request body (through ``AnthropicCanonicalConverter``; ``stream_options``
asked for unless the provider's ``stream_usage`` or its host says no: Mistral's refuses it) and
feeding the SSE stream, ended by ``[DONE]``, through ``OpenAIStreamNormalizer``. The client
and the error mapping are ``HttpAdapter``'s. Imported lazily by the manager.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Mapping
from typing import Any
from urllib.parse import urlsplit

from air.contracts.error import AirException
from air.contracts.provider import (
    ModelConfig,
    ProviderCompletionInput,
    ProviderConfig,
    ProviderStreamEvent,
)
from air.llm.adapter import StreamEnded
from air.llm.config import base_url_of
from air.llm.convert import AnthropicCanonicalConverter
from air.llm.errors import models_reference
from air.llm.http11 import read_body
from air.llm.http_adapter import HttpAdapter, HttpReply, ReadReply
from air.llm.normalize import BatchReader, OpenAIStreamNormalizer, drain
from air.llm.sse import SSEDecoder, model_json
from air.llm.tool_names import ToolNameMap

__all__ = ["REFUSE_STREAM_OPTIONS", "OpenAICompatibleAdapter"]

REFUSE_STREAM_OPTIONS = frozenset({"api.mistral.ai"})
"""Hosts that refuse ``stream_options`` (422 "Extra inputs are not permitted") and send the
usage chunk unasked: Mistral's API."""


class OpenAICompatibleAdapter(HttpAdapter):
    def __init__(
        self, provider_id: str, config: ProviderConfig, *, env: Mapping[str, str] | None = None
    ) -> None:
        url, _ = base_url_of(config, env if env is not None else os.environ)
        if not url:
            raise AirException.of(
                kind="config_error",
                message=f"provider {provider_id!r} (openai_compatible) has no base_url",
                user_action=(
                    f"Set providers.{provider_id}.base_url, e.g. http://127.0.0.1:11434/v1, or "
                    f"OPENAI_BASE_URL (reference: {models_reference()})."
                ),
            )
        super().__init__(provider_id, config, url, env=env)
        self.converter = AnthropicCanonicalConverter()
        refuses = urlsplit(url).hostname in REFUSE_STREAM_OPTIONS
        self.stream_usage = config.stream_usage if config.stream_usage is not None else not refuses
        """Whether requests ask for the usage chunk (``stream_options``)."""

    def exchange(
        self, request: ProviderCompletionInput
    ) -> tuple[str, bytes, dict[str, str], ReadReply]:
        names = ToolNameMap(t.name for t in request.tools)
        model = self.model_config(request.model_id)
        headers = {"content-type": "application/json", "accept": "text/event-stream"}
        key = self.api_key(required=False) if self.config.auth_ref else None
        if key:
            headers["authorization"] = f"Bearer {key}"
        if model is not None and model.api == "responses":
            return self._responses(request, model, names, headers)
        body = self.converter.request_to_openai_body(
            request, self.api_model(request.model_id), names, self.turns, model, self.stream_usage
        )
        normalizer = OpenAIStreamNormalizer(self.provider_id, request.model_id, names)

        def read(response: HttpReply) -> AsyncGenerator[list[ProviderStreamEvent], None]:
            return self._read(normalizer, response)

        return "/chat/completions", body, headers, read

    def _responses(
        self,
        request: ProviderCompletionInput,
        model: ModelConfig,
        names: ToolNameMap,
        headers: dict[str, str],
    ) -> tuple[str, bytes, dict[str, str], ReadReply]:
        from air.llm.responses_stream import ResponsesStreamNormalizer
        from air.llm.responses_wire import responses_batches, responses_body

        body = responses_body(request, self.api_model(request.model_id), names, self.turns, model)
        normalizer = ResponsesStreamNormalizer(self.provider_id, request.model_id, names)

        def read(response: HttpReply) -> AsyncGenerator[list[ProviderStreamEvent], None]:
            return responses_batches(normalizer, self.failed, response)

        return "/responses", body, headers, read

    async def _read(
        self, normalizer: OpenAIStreamNormalizer, response: HttpReply
    ) -> AsyncGenerator[list[ProviderStreamEvent], None]:
        """The event batches of one reply; raises ``StreamEnded`` when it stops before [DONE]."""
        if "json" in response.headers.get("content-type", ""):
            # a server that ignored stream=true: one whole completion object
            yield _plain_events(normalizer, model_json(await read_body(response.aiter_bytes())))
            return
        reader = BatchReader(normalizer, self.failed)
        decoder = SSEDecoder()
        async for chunk in response.aiter_bytes():
            datas = decoder.feed_data(chunk)
            if not datas:
                continue
            done = "[DONE]" in datas
            if done:
                datas = datas[: datas.index("[DONE]")]
            for batch in reader.batches(datas):
                yield batch
            if reader.over:
                return
            if done:
                yield normalizer.finish()
                return
        datas = [data for _name, data in decoder.close()]
        if datas and datas[-1].strip() == "[DONE]":
            events, failure = drain(normalizer, datas[:-1])
            if failure is not None:
                yield [*events, self.failed(failure)]
                return
            yield [*events, *normalizer.finish()]
            return
        raise StreamEnded("[DONE]")


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
