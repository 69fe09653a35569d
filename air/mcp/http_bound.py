"""The HTTP client side of an MCP session: what a server's answer may weigh.

Owns ``BoundedTransport``: the HTTP transport air gives the SDK's streamable HTTP client, which
reads a JSON answer whole (``aread``) however long the server sends; here any answer but an
event stream ends at ``MAX_MESSAGE_BYTES`` (IMPL-MCP-3), read as it arrives, and the call fails
with that reason instead of the parent growing until the call's timeout. An event stream is left
to the SDK, which bounds each event (1 MiB) itself. Imported with the SDK (``httpx2``), when a
session reaches an HTTP server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2

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


class BoundedTransport(httpx2.AsyncBaseTransport):
    """httpx2's own transport, every answer but an event stream bounded as it is read."""

    def __init__(self) -> None:
        self.inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
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
