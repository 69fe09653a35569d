"""HttpAdapter: the base of the adapters that speak HTTP themselves (no SDK).

Owns the lazily created HTTP client: ``air.llm.http11.Http11Client`` (h11 on Trio streams;
no CA bundle loaded for plain-http endpoints such as Ollama, llama.cpp or a local proxy), or an
``httpx.AsyncClient`` when the environment names a proxy (httpx's proxy handling, imported
only then; IMPL-BOOT-10); the streamed POST with its error reply -> AirError mapping and
failures turned into the final error event (``complete_batches``), and closing the client.
Subclasses say what to POST and read the reply (``HttpReply``: what both clients' replies
offer).
"""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from contextlib import aclosing
from typing import Any, Protocol

from air.contracts.error import AirError
from air.contracts.provider import ProviderCompletionInput, ProviderConfig, ProviderStreamEvent
from air.llm.adapter import STREAM_FAILURES, ProviderAdapter, skip_httpx_cli
from air.llm.errors import api_error_of, error_for_status, parse_retry_after, redirect_target
from air.llm.http11 import (
    Http11Client,
    LeftBody,
    Reply,
    TransportError,
    proxy_configured,
    read_head,
)
from air.llm.wire_memo import EncodedTurns

__all__ = ["HttpAdapter", "HttpReply", "ReadReply"]


class HttpReply(Protocol):
    """A streamed reply of either client (``air.llm.http11.Reply``, ``httpx.Response``)."""

    @property
    def status_code(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    def aiter_bytes(self) -> AsyncIterator[bytes]: ...


ReadReply = Callable[[HttpReply], AsyncGenerator[list[ProviderStreamEvent], None]]


class _KeptReply:
    """An httpx reply whose body a reader reads through ``LeftBody`` (drained after)."""

    def __init__(self, reply: HttpReply) -> None:
        self._reply = reply
        self.body = LeftBody(reply.aiter_bytes)

    @property
    def status_code(self) -> int:
        return self._reply.status_code

    @property
    def headers(self) -> Mapping[str, str]:
        return self._reply.headers

    def aiter_bytes(self) -> AsyncIterator[bytes]:
        return self.body.chunks()


class HttpAdapter(ProviderAdapter):
    def __init__(
        self,
        provider_id: str,
        config: ProviderConfig,
        base_url: str,
        *,
        env: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(provider_id, config, env=env)
        self._base_url = base_url.rstrip("/")
        self._client: Any = None
        self._failures: tuple[type[BaseException], ...] = (TransportError, *STREAM_FAILURES)
        self.turns = EncodedTurns()
        """Recent conversations' messages as encoded for the wire (each message once)."""

    def _http(self) -> Any:
        """The client (``Http11Client``, or ``httpx.AsyncClient`` behind a proxy)."""
        if self._client is None:
            if proxy_configured():
                self._client = self._httpx_client()
            else:
                self._client = Http11Client(
                    timeout_s=self.config.timeout_s, read_timeout_s=self.config.read_timeout_s
                )
                if self._base_url.startswith("https://"):
                    self._client.tls_context()  # the CA bundle now, not at the first request
        return self._client

    def _httpx_client(self) -> Any:
        import encodings.idna  # noqa: F401  (its first host lookup imports it)

        skip_httpx_cli()
        import httpx

        self._failures = (httpx.TransportError, *self._failures)
        return httpx.AsyncClient(
            timeout=httpx.Timeout(self.config.timeout_s, read=self.config.read_timeout_s),
            # plain-http endpoints need no CA bundle: skip loading it
            verify=not self._base_url.startswith("http://"),
        )

    def warm(self) -> None:
        """Create the client (and load the CA bundle for https) ahead of the first request."""
        self._http()

    @abstractmethod
    def exchange(
        self, request: ProviderCompletionInput
    ) -> tuple[str, bytes, dict[str, str], ReadReply]:
        """The path, JSON body (encoded) and headers to POST for ``request``, and the reader of
        its reply. A body's messages are encoded through ``self.turns`` (IMPL-TURN-1).

        The reader raises ``StreamEnded`` when the reply stops before its final event.
        """

    async def complete_batches(
        self, request: ProviderCompletionInput
    ) -> AsyncGenerator[list[ProviderStreamEvent], None]:
        path, body, headers, read = self.exchange(request)
        headers |= self.extra_headers()
        url = f"{self._base_url}{path}"
        try:
            async with self._http().stream("POST", url, content=body, headers=headers) as response:
                if response.status_code >= 300:  # no redirect is followed (IMPL-LLM-7)
                    head = await read_head(response.aiter_bytes())
                    text = head.decode("utf-8", errors="replace")
                    yield [self.failed(self.status_error(response, text))]
                    return
                if isinstance(response, Reply):  # Http11Client drains what is left itself
                    async with aclosing(read(response)) as batches:
                        async for batch in batches:
                            yield batch
                    return
                kept = _KeptReply(response)
                async with aclosing(kept.body.through(read(kept), self._failures)) as batches:
                    async for batch in batches:
                        yield batch
        except self._failures as exc:
            yield [self.failed(self.failure_of(exc))]

    def status_error(self, response: HttpReply, text: str) -> AirError:
        """The AirError of an error or redirect reply (HTTP status >= 300) whose body is
        ``text``."""
        try:
            body: object = json.loads(text)
        except (ValueError, RecursionError):  # a server's: [[[... 30,000 deep
            body = None
        error_type, message = api_error_of(body)
        return error_for_status(
            response.status_code,
            text,
            provider_id=self.provider_id,
            retry_after=parse_retry_after(response.headers),
            error_type=error_type,
            api_message=message,
            location=redirect_target(response.headers),
        )

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()
