"""Http11Client: the HTTP/1.1 client of the adapters that speak HTTP themselves (IMPL-BOOT-10).

Owns one streamed request at a time per connection over Trio streams and h11 (httpx's own
HTTP/1.1 state machine): ``stream(method, url, json=..., headers=...)`` opens (or reuses) a
connection, sends the request and yields a ``Reply`` (status, case-insensitive headers, the
body read chunk by chunk; ``read_body`` / ``read_head`` read it whole or its head, bounded); a
connection whose reply was read to its end goes back to
a small idle pool per origin and is reused unless the server closed it (checked before reuse)
or it idled longer than ``KEEPALIVE_S``. A caller that leaves the block before the body ended
(a stream reader stops at the model's final event, before the chunked body's last chunk) gets
its rest read and dropped, at most ``DRAIN_BYTES`` within ``DRAIN_S``, so that its connection
can still be reused; failing that it is closed (``LeftBody`` does the same for a reply of httpx
or the SDK, which close such a connection themselves). TLS: certificates and host names
verified, CAs from ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` when set, else certifi's bundle (what
httpx loads). Time
limits: connect and write ``timeout_s``, every read ``read_timeout_s`` (a stalled stream).
Failures are ``TransportError`` subclasses. Owns ``proxy_configured``: a proxy set in the
environment (``HTTP(S)_PROXY``, ``ALL_PROXY``) is httpx's job (the adapter uses httpx then).

Why not httpx itself: importing httpx (httpcore, anyio, its auth, cookie and multipart stacks)
costs ~40 ms of CPU on the way to the first model request; this module and h11 ~5.
"""

from __future__ import annotations

import json as jsonlib
import os
import select
import ssl
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Mapping
from contextlib import aclosing, asynccontextmanager
from typing import Any, TypeVar
from urllib.parse import urlsplit

import h11
import trio

from air.llm.sse import EVENT_MAX, ReplyTooLarge

_T = TypeVar("_T")

__all__ = [
    "DRAIN_BYTES",
    "DRAIN_S",
    "KEEPALIVE_S",
    "ConnectError",
    "Headers",
    "Http11Client",
    "LeftBody",
    "LocalProtocolError",
    "ReadTimeout",
    "RemoteProtocolError",
    "Reply",
    "TransportError",
    "WriteTimeout",
    "proxy_configured",
    "read_body",
    "read_head",
]

KEEPALIVE_S = 5.0
"""An idle connection older than this is closed instead of reused (httpx's default)."""

MAX_IDLE_PER_ORIGIN = 8
DRAIN_BYTES = 65536
"""The most of a reply's unread rest read and dropped to keep its connection."""
DRAIN_S = 0.25
"""How long the rest of a left reply may take to arrive before its connection is closed."""
_READ_SIZE = 65536
_PROXY_VARIABLES = ("https_proxy", "http_proxy", "all_proxy")
_USER_AGENT = "air (h11)"


class TransportError(Exception):
    """The connection failed: refused, reset, closed early, timed out, or TLS refused."""


class ConnectError(TransportError):
    pass


class ReadTimeout(TransportError):
    pass


class WriteTimeout(TransportError):
    pass


class LocalProtocolError(TransportError):
    """The request itself is not valid HTTP/1.1 (as httpx, a transport error)."""


class RemoteProtocolError(TransportError):
    """The server broke HTTP/1.1 (or closed the connection before a whole reply)."""


def proxy_configured(env: Mapping[str, str] | None = None) -> bool:
    """True when the environment names a proxy (either case), as httpx would use one."""
    env = os.environ if env is None else env
    return any(env.get(name) or env.get(name.upper()) for name in _PROXY_VARIABLES)


class Headers(Mapping[str, str]):
    """A reply's headers, looked up without regard to case; repeated ones joined by ", "."""

    def __init__(self, raw: list[tuple[bytes, bytes]]) -> None:
        self._items: dict[str, str] = {}
        for name, value in raw:
            key = name.decode("latin-1").lower()
            text = value.decode("latin-1")
            self._items[key] = f"{self._items[key]}, {text}" if key in self._items else text

    def __getitem__(self, name: str) -> str:
        return self._items[name.lower()]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


class _Connection:
    def __init__(self, stream: trio.abc.Stream, raw: trio.SocketStream) -> None:
        self.stream = stream
        self.raw = raw
        self.h11 = h11.Connection(our_role=h11.CLIENT)
        self.idle_since = 0.0

    def reusable(self) -> bool:
        """Idle for less than ``KEEPALIVE_S`` and nothing to read (a closed or chatty server
        makes the socket readable while no request is out)."""
        if time.monotonic() - self.idle_since > KEEPALIVE_S:
            return False
        try:
            readable, _, _ = select.select([self.raw.socket.fileno()], [], [], 0)
        except (OSError, ValueError):
            return False
        return not readable


class Reply:
    """One reply: ``status_code``, ``headers``, and its body (``aiter_bytes``)."""

    def __init__(self, conn: _Connection, response: h11.Response, read_timeout_s: float) -> None:
        self._conn = conn
        self._read_timeout_s = read_timeout_s
        self.status_code = response.status_code
        self.headers = Headers(list(response.headers))
        self.complete = False

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        """The body's bytes as they arrive (each read bounded by the read timeout)."""
        while not self.complete:
            event = await _next_event(self._conn, self._read_timeout_s)
            if isinstance(event, h11.Data):
                yield bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                self.complete = True
            else:
                raise RemoteProtocolError(f"unexpected {type(event).__name__} in a reply body")

    async def finish(self) -> bool:
        """Read and drop what is left of the body, at most ``DRAIN_BYTES`` within ``DRAIN_S``
        (``_drain``); True when the reply ended (its connection may carry another request)."""
        await _drain(self.aiter_bytes(), (TransportError,))
        return self.complete


ERROR_HEAD = 64 * 1024
"""Bytes of an error reply's body read: its JSON error, and more than any page's text shown."""


async def read_body(chunks: AsyncIterator[bytes], limit: int = EVENT_MAX) -> bytes:
    """A whole reply body (a server that ignored ``stream=true``).

    Raises:
        ReplyTooLarge: past ``limit`` bytes (nothing a model sends is bigger; a server's bug
            or worse of gigabytes was read whole into the parent).
    """
    parts: list[bytes] = []
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise ReplyTooLarge(f"a reply body of over {limit} bytes")
        parts.append(chunk)
    return b"".join(parts)


async def read_head(chunks: AsyncIterator[bytes], limit: int = ERROR_HEAD) -> bytes:
    """The first ``limit`` bytes of a body, the rest left unread (an error reply's: read whole,
    a page that never ends held the turn until the read timeout and grew the parent)."""
    parts: list[bytes] = []
    size = 0
    async for chunk in chunks:
        parts.append(chunk[: limit - size])
        size += len(chunk)
        if size >= limit:
            break
    return b"".join(parts)


class LeftBody:
    """A reply body of httpx or the SDK read through one iterator, so that the rest a reader
    left at the model's final event can be read and dropped as ``Reply.finish`` does (at most
    ``DRAIN_BYTES`` within ``DRAIN_S``): a body read to its end lets httpx keep the connection
    for the next turn (it closes one left halfway)."""

    def __init__(self, chunks: Callable[[], AsyncIterator[bytes]]) -> None:
        self._open = chunks
        self._chunks: AsyncIterator[bytes] | None = None

    def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives (the one iterator, however often asked)."""
        if self._chunks is None:
            self._chunks = self._open()
        return self._chunks

    async def drain(self, failures: tuple[type[BaseException], ...]) -> None:
        """Read and drop the rest of a body a reader began (``_drain``)."""
        if self._chunks is not None:
            await _drain(self._chunks, failures)

    async def through(
        self, reader: AsyncGenerator[_T, None], failures: tuple[type[BaseException], ...]
    ) -> AsyncGenerator[_T, None]:
        """What ``reader`` (a reader of this body) yields; then, or when the caller stops early
        (at the model's final event), the rest of the body read and dropped (``drain``)."""
        try:
            async with aclosing(reader) as items:
                async for item in items:
                    yield item
        except GeneratorExit:  # the caller's turn ended at its final event
            await self.drain(failures)
            raise
        await self.drain(failures)


async def _drain(chunks: AsyncIterator[bytes], failures: tuple[type[BaseException], ...]) -> None:
    """Read and drop what is left of a reply body, at most ``DRAIN_BYTES`` within ``DRAIN_S``
    (the one bound on time: each read's own limit is longer); ``failures`` end it quietly, the
    body then unfinished (its connection is closed, as any left halfway)."""
    left = DRAIN_BYTES
    with trio.move_on_after(DRAIN_S):
        try:
            async for chunk in chunks:
                left -= len(chunk)
                if left < 0:
                    return
        except failures:
            return


def _basic_auth(user: str | None, password: str | None) -> list[tuple[str, str]]:
    """The ``authorization`` header of a URL's user info (percent-decoded), if it has one."""
    if user is None:
        return []
    from base64 import b64encode
    from urllib.parse import unquote

    token = b64encode(f"{unquote(user)}:{unquote(password or '')}".encode()).decode()
    return [("authorization", f"Basic {token}")]


def _why(exc: BaseException) -> str:
    """The error's text, or its cause's (Trio's broken-stream errors wrap an ``SSLError``)."""
    return str(exc) or str(exc.__cause__ or "") or type(exc).__name__


async def _next_event(conn: _Connection, read_timeout_s: float) -> Any:
    while True:
        try:
            event = conn.h11.next_event()
        except h11.RemoteProtocolError as exc:
            raise RemoteProtocolError(str(exc)) from exc
        if event is not h11.NEED_DATA:
            return event
        try:
            with trio.fail_after(read_timeout_s):
                data = await conn.stream.receive_some(_READ_SIZE)
        except trio.TooSlowError:
            raise ReadTimeout(f"no data for {read_timeout_s:g} s") from None
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            raise RemoteProtocolError(f"the connection broke: {_why(exc)}") from exc
        if not data and conn.h11.their_state is h11.SEND_RESPONSE:
            raise RemoteProtocolError("the server closed the connection before replying")
        conn.h11.receive_data(bytes(data))


class Http11Client:
    """Streamed HTTP/1.1 requests to one or more origins, connections reused."""

    def __init__(
        self, *, timeout_s: float, read_timeout_s: float, env: Mapping[str, str] | None = None
    ) -> None:
        self.timeout_s = timeout_s
        self.read_timeout_s = read_timeout_s
        self._env = os.environ if env is None else env
        self._tls: ssl.SSLContext | None = None
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._closed = False

    def tls_context(self) -> ssl.SSLContext:
        """The verifying TLS context (built once: loading the CA bundle takes a few ms)."""
        if self._tls is None:
            cafile = self._env.get("SSL_CERT_FILE") or None
            capath = self._env.get("SSL_CERT_DIR") or None
            if cafile is None and capath is None:
                import certifi

                cafile = certifi.where()
            context = ssl.create_default_context(cafile=cafile, capath=capath)
            context.set_alpn_protocols(["http/1.1"])
            self._tls = context
        return self._tls

    @asynccontextmanager
    async def stream(
        self,
        method: str,
        url: str,
        *,
        json: Any = None,
        content: bytes | None = None,
        headers: Mapping[str, str],
    ) -> AsyncIterator[Reply]:
        """POST-like request with a JSON body (``json``, or ``content``: JSON already encoded);
        the reply's body is read inside the block.

        Raises:
            TransportError: connecting, sending or reading failed (or timed out).
        """
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConnectError(f"not an http(s) URL: {url!r}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        origin = (parts.scheme, parts.hostname, port)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        if content is None:
            content = jsonlib.dumps(json, separators=(",", ":")).encode()
        body = content
        auth = _basic_auth(parts.username, parts.password)  # https://user:pass@host, as httpx
        name = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname  # IPv6
        host = name if parts.port is None else f"{name}:{parts.port}"
        try:
            request = h11.Request(
                method=method,
                target=target,
                headers=[
                    ("host", host),
                    ("user-agent", _USER_AGENT),
                    ("accept-encoding", "identity"),
                    *auth,
                    *((k, v) for k, v in headers.items() if k.lower() != "host"),
                    ("content-length", str(len(body))),
                ],
            )
        except h11.LocalProtocolError as exc:  # e.g. a header value holding a line break
            raise LocalProtocolError(f"the request cannot be sent: {exc}") from exc
        conn = await self._connection(origin)
        reply: Reply | None = None
        left = False  # the caller left the block by itself: no failure, no cancellation
        try:
            await self._send(conn, request, h11.Data(data=body), h11.EndOfMessage())
            while True:
                event = await _next_event(conn, self.read_timeout_s)
                if isinstance(event, h11.Response):
                    break
                if not isinstance(event, h11.InformationalResponse):
                    raise RemoteProtocolError(f"unexpected {type(event).__name__} before a reply")
            reply = Reply(conn, event, self.read_timeout_s)
            try:
                yield reply
            except GeneratorExit:  # the caller's own stream was closed after what it needed
                left = True
                raise
            left = True
        finally:
            try:
                keep = reply is not None and left and not self._closed and await reply.finish()
            except BaseException:
                await trio.aclose_forcefully(conn.stream)
                raise
            if keep:
                await self._release(origin, conn)
            else:
                await trio.aclose_forcefully(conn.stream)

    async def _connection(self, origin: tuple[str, str, int]) -> _Connection:
        idle = self._idle.get(origin, [])
        while idle:
            conn = idle.pop()
            if conn.reusable():
                return conn
            await trio.aclose_forcefully(conn.stream)
        scheme, host, port = origin
        try:
            with trio.fail_after(self.timeout_s):
                raw = await trio.open_tcp_stream(host, port)
                if scheme == "http":
                    return _Connection(raw, raw)
                tls = trio.SSLStream(
                    raw, self.tls_context(), server_hostname=host, https_compatible=True
                )
                try:
                    await tls.do_handshake()
                except BaseException:
                    await trio.aclose_forcefully(raw)
                    raise
                return _Connection(tls, raw)
        except trio.TooSlowError:
            took = f"connecting to {host}:{port} took over {self.timeout_s:g} s"
            raise ConnectError(took) from None
        except (OSError, trio.BrokenResourceError, ssl.SSLError) as exc:
            raise ConnectError(f"cannot connect to {host}:{port}: {_why(exc)}") from exc

    async def _send(self, conn: _Connection, *events: Any) -> None:
        try:
            with trio.fail_after(self.timeout_s):
                for event in events:
                    data = conn.h11.send(event)
                    if data:
                        await conn.stream.send_all(data)
        except trio.TooSlowError:
            raise WriteTimeout(f"sending took over {self.timeout_s:g} s") from None
        except h11.LocalProtocolError as exc:  # e.g. a header value holding a line break
            raise LocalProtocolError(f"the request cannot be sent: {exc}") from exc
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            raise RemoteProtocolError(f"the connection broke while sending: {_why(exc)}") from exc

    async def _release(self, origin: tuple[str, str, int], conn: _Connection) -> None:
        """Back to the idle pool if both sides are done and the server keeps it open."""
        idle = self._idle.setdefault(origin, [])
        both_done = conn.h11.our_state is h11.DONE and conn.h11.their_state is h11.DONE
        if not both_done or len(idle) >= MAX_IDLE_PER_ORIGIN:
            await trio.aclose_forcefully(conn.stream)
            return
        conn.h11.start_next_cycle()
        conn.idle_since = time.monotonic()
        idle.append(conn)

    async def aclose(self) -> None:
        self._closed = True
        pools, self._idle = list(self._idle.values()), {}
        for idle in pools:
            for conn in idle:
                await trio.aclose_forcefully(conn.stream)
