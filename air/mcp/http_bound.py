"""The HTTP client side of an MCP session: where its requests may go, what an answer may weigh.

Owns ``BoundedTransport``: the HTTP transport air gives the SDK's streamable HTTP client for one
server. A request in plain HTTP goes only to the server's own origin or to this machine: the
SDK's OAuth flow follows whatever the server's metadata names (its authorization server, their
token and registration endpoints) and would post the authorization code, the PKCE verifier and
later the refresh token over plain HTTP across the network; such a request is refused before
it is sent (IMPL-MCP-5; OAuth 2.1 and MCP's authorization spec require https). The SDK's
client reads a JSON answer whole (``aread``) however long the server sends; here any answer but
an event stream ends at ``MAX_MESSAGE_BYTES`` (IMPL-MCP-3), read as it arrives, and the call
fails with that reason instead of the parent growing until the call's timeout. An event stream
is left to the SDK, which bounds each event (1 MiB) itself. Imported with the SDK (``httpx2``),
when a session reaches an HTTP server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2

from air.contracts.display import shown
from air.mcp.config import McpServer, private_way
from air.mcp.stdio import MAX_MESSAGE_BYTES, over_the_bound

__all__ = ["BoundedTransport"]


class _BoundedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream) -> None:
        self.inner = inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self.inner:
            seen += len(chunk)
            if seen > MAX_MESSAGE_BYTES:
                raise httpx2.StreamError(f"its answer is {over_the_bound()}")
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


def _origin(url: httpx2.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port


class BoundedTransport(httpx2.AsyncBaseTransport):
    """httpx2's own transport for ``server``: plain HTTP only to its origin or this machine,
    every answer but an event stream bounded as it is read."""

    def __init__(self, server: McpServer) -> None:
        assert server.url is not None
        self.server = server
        self.origin = _origin(httpx2.URL(server.url))
        self.inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        if _origin(url) != self.origin and not private_way(str(url)):
            where = shown(str(url.copy_with(query=None, fragment=None)))
            raise self.server.refusal(
                f"its OAuth login would send a request in plain HTTP to {where}, another "
                "machine than this one: nothing was sent (its authorization server must be "
                "served over https)",
                "Ask the server's operator for https endpoints in its OAuth metadata, or remove "
                f"the server from {self.server.source}.",
                "oauth",
            )
        response = await self.inner.handle_async_request(request)
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            return response
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        return httpx2.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=_BoundedStream(response.stream),
            extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        await self.inner.aclose()
