"""AnthropicHttpAdapter: the Messages API over plain HTTP (``transport: http``, the default), no
SDK (``air.llm.http11``; httpx behind a proxy: IMPL-BOOT-10).

Owns the wire headers (``x-api-key``, ``anthropic-version``) and the endpoint; the exchange
itself (request body, SSE decoding through ``AnthropicStreamNormalizer``, error mapping) is the
one ``AnthropicAdapter`` uses too (air.llm.anthropic_wire). It exists for start-up time: the
SDK costs about a second of imports, this path about a tenth of that (bench/providers.py;
IMPL-LLM-7).
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncGenerator, Mapping

from air.contracts.error import AirError
from air.contracts.provider import ProviderCompletionInput, ProviderConfig, ProviderStreamEvent
from air.llm.anthropic_wire import anthropic_batches, anthropic_body, anthropic_status_error
from air.llm.config import base_url_of
from air.llm.http_adapter import HttpAdapter, HttpReply, ReadReply
from air.llm.normalize import AnthropicStreamNormalizer
from air.llm.tool_names import ToolNameMap

__all__ = ["ANTHROPIC_VERSION", "AnthropicHttpAdapter"]

ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_BASE_URL = "https://api.anthropic.com"


class AnthropicHttpAdapter(HttpAdapter):
    def __init__(
        self, provider_id: str, config: ProviderConfig, *, env: Mapping[str, str] | None = None
    ) -> None:
        url, _ = base_url_of(config, env if env is not None else os.environ)
        super().__init__(provider_id, config, url or DEFAULT_BASE_URL, env=env)

    def exchange(
        self, request: ProviderCompletionInput
    ) -> tuple[str, bytes, dict[str, str], ReadReply]:
        names = ToolNameMap(t.name for t in request.tools)
        body = anthropic_body(
            request,
            self.api_model(request.model_id),
            names,
            self.turns,
            self.model_config(request.model_id),
        )
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream",
            "anthropic-version": ANTHROPIC_VERSION,
            "x-api-key": self.api_key() or "",
        }
        normalizer = AnthropicStreamNormalizer(self.provider_id, request.model_id, names)

        def read(response: HttpReply) -> AsyncGenerator[list[ProviderStreamEvent], None]:
            content_type = response.headers.get("content-type", "")
            return anthropic_batches(normalizer, self.failed, content_type, response.aiter_bytes)

        return "/v1/messages", body, headers, read

    def status_error(self, response: HttpReply, text: str) -> AirError:
        try:
            body: object = json.loads(text)
        except (ValueError, RecursionError):  # a server's: [[[... 30,000 deep
            body = None
        return anthropic_status_error(
            self.provider_id, response.status_code, text, response.headers, body
        )
