"""The adapters' HTTP/1.1 client (IMPL-BOOT-10) against real servers on 127.0.0.1: streamed and
chunked replies, connections reused only while the server keeps them, every failure a
``TransportError`` (refused, closed early, stalled), TLS verified against the configured CAs,
and through an adapter a connection failure is a transient provider error."""

from __future__ import annotations

import datetime
import http.server
import ipaddress
import ssl
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import pytest
import trio
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from air.contracts.provider import ProviderConfig
from air.llm.http11 import (
    DRAIN_BYTES,
    DRAIN_S,
    ConnectError,
    Http11Client,
    LeftBody,
    LocalProtocolError,
    ReadTimeout,
    RemoteProtocolError,
    TransportError,
    read_body,
)
from air.llm.openai_compat import OpenAICompatibleAdapter
from tests.llm.helpers import request

_BIG = b"x" * (DRAIN_BYTES // 2 + 1)


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    mode: ClassVar[str] = "ok"
    connections: ClassVar[list[int]] = []
    bodies: ClassVar[list[tuple[str, bytes, dict[str, str]]]] = []

    def setup(self) -> None:
        super().setup()
        type(self).connections.append(id(self))

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        type(self).bodies.append((self.path, body, {k.lower(): v for k, v in self.headers.items()}))
        mode = type(self).mode
        if mode == "close_early":
            self.close_connection = True
            return
        if mode == "stall" or (mode == "stall_first" and len(type(self).bodies) == 1):
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", "100")
            self.end_headers()
            self.wfile.write(b"data: 1\n\n")
            self.wfile.flush()
            time.sleep(2)
            if mode == "stall_first":  # the rest, long after DRAIN_S: too late to keep it
                try:
                    self.wfile.write(b"x" * 91)
                except OSError:
                    pass  # the client closed it, as it should have
            return
        if mode == "big":  # more than DRAIN_BYTES after the first chunk
            self.send_response(200)
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for part in (b"data: 1\n\n", _BIG, _BIG):
                self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            return
        if mode == "chunked":
            self.send_response(200)
            self.send_header("transfer-encoding", "chunked")
            self.send_header("X-Twice", "a")
            self.send_header("x-twice", "b")
            self.end_headers()
            for part in (b"data: one\n\n", b"data: two\n\n"):
                self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            return
        reply = b'{"ok": true}'
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)
        if mode == "drop_idle":
            self.close_connection = True  # no "connection: close": the client must notice


@contextmanager
def _server(mode: str, tls: ssl.SSLContext | None = None) -> Iterator[tuple[str, Any]]:
    """A threaded HTTP/1.1 server on 127.0.0.1 in ``mode``; yields its URL and handler class
    (whose ``connections`` and ``bodies`` record what arrived)."""
    handler: Any = type("Handler", (_Handler,), {"mode": mode, "connections": [], "bodies": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        scheme = "https" if tls is not None else "http"
        yield f"{scheme}://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()


def _client(read_timeout_s: float = 5.0, env: dict[str, str] | None = None) -> Http11Client:
    return Http11Client(timeout_s=5.0, read_timeout_s=read_timeout_s, env=env or {})


async def _post(client: Http11Client, url: str) -> tuple[int, bytes]:
    async with client.stream("POST", url, json={"q": 1}, headers={"x-api-key": "k"}) as reply:
        return reply.status_code, await read_body(reply.aiter_bytes())


async def test_a_kept_connection_is_reused_and_the_request_is_well_formed() -> None:
    client = _client()
    with _server("ok") as (url, handler):
        assert await _post(client, f"{url}/v1/messages?beta=1") == (200, b'{"ok": true}')
        assert await _post(client, f"{url}/v1/messages") == (200, b'{"ok": true}')
    assert len(handler.connections) == 1
    path, body, headers = handler.bodies[0]
    assert path == "/v1/messages?beta=1"
    assert body == b'{"q":1}'
    assert headers["x-api-key"] == "k"
    assert headers["content-length"] == "7"
    assert headers["host"] == url.removeprefix("http://")
    await client.aclose()


async def test_user_info_in_the_url_is_sent_as_basic_auth() -> None:
    client = _client()
    with _server("ok") as (url, handler):
        authed = url.replace("http://", "http://me:p%40ss@")
        assert (await _post(client, authed))[0] == 200
    headers = handler.bodies[0][2]
    assert headers["authorization"] == "Basic bWU6cEBzcw=="  # me:p@ss
    assert headers["host"] == url.removeprefix("http://")
    await client.aclose()


async def test_a_connection_the_server_dropped_is_not_reused() -> None:
    client = _client()
    with _server("drop_idle") as (url, handler):
        assert (await _post(client, url))[0] == 200
        await trio.sleep(0.1)  # the server has closed its end by now
        assert (await _post(client, url))[0] == 200
    assert len(handler.connections) == 2
    await client.aclose()


async def _leave_after_first_chunk(client: Http11Client, url: str) -> bytes:
    async with client.stream("POST", url, json={}, headers={}) as reply:
        async for chunk in reply.aiter_bytes():
            return chunk
    raise AssertionError("no chunk")


async def test_a_reply_left_halfway_is_drained_and_its_connection_reused() -> None:
    client = _client()
    with _server("chunked") as (url, handler):
        async with client.stream("POST", url, json={}, headers={}) as reply:
            assert reply.headers["X-TWICE"] == "a, b"
        assert await _leave_after_first_chunk(client, url) == b"data: one\n\n"
        # the next reply is whole and its own: nothing of the left one was read as its start
        assert await _post(client, url) == (200, b"data: one\n\ndata: two\n\n")
    assert len(handler.connections) == 1
    await client.aclose()


@pytest.mark.parametrize("mode", ["stall_first", "big"])
async def test_a_left_reply_whose_rest_stalls_or_is_large_closes_its_connection(
    mode: str,
) -> None:
    """The rest of a left reply is read only within ``DRAIN_S`` and up to ``DRAIN_BYTES``:
    past either, the connection is closed, never handed to the next request half-read (the
    stalled rest does arrive, 2 s later: only the deadline keeps the client from waiting)."""
    client = _client()
    with _server(mode) as (url, handler):
        assert await _leave_after_first_chunk(client, url) == b"data: 1\n\n"
        status, body = await _post(client, url)
        assert status == 200
        assert body == (b'{"ok": true}' if mode == "stall_first" else b"data: 1\n\n" + _BIG + _BIG)
    assert len(handler.connections) == 2
    await client.aclose()


async def test_every_failure_is_a_transport_error() -> None:
    client = _client(read_timeout_s=0.3)
    with _server("ok") as (url, _):
        port = url.rsplit(":", 1)[1]
    with pytest.raises(ConnectError):  # nothing listens there any more
        await _post(client, f"http://127.0.0.1:{port}")
    with _server("close_early") as (url, _), pytest.raises(RemoteProtocolError):
        await _post(client, url)
    with _server("stall") as (url, _), pytest.raises(ReadTimeout):
        await _post(client, url)
    with pytest.raises(ConnectError):
        await _post(client, "ftp://127.0.0.1/x")
    with _server("ok") as (url, handler), pytest.raises(LocalProtocolError):
        async with client.stream("POST", url, json={}, headers={"x-api-key": "k\r\nx: y"}):
            pass
    assert handler.bodies == []  # nothing of a header with a line break was sent
    assert issubclass(ReadTimeout, TransportError)
    await client.aclose()


def _certificate(tmp: Path) -> tuple[ssl.SSLContext, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "air test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp / "cert.pem", tmp / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert_file, key_file)
    return server, cert_file


async def test_tls_is_verified_against_the_configured_cas(tmp_path: Path) -> None:
    server_tls, cert_file = _certificate(tmp_path)
    with _server("ok", tls=server_tls) as (url, handler):
        trusted = _client(env={"SSL_CERT_FILE": str(cert_file)})
        assert await _post(trusted, url) == (200, b'{"ok": true}')
        assert await _post(trusted, url) == (200, b'{"ok": true}')
        await trusted.aclose()
        # certifi's bundle does not know this certificate: refused, never sent
        with pytest.raises(ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await _post(_client(), url)
        # nor does a name the certificate does not carry pass
        named = url.replace("127.0.0.1", "localhost")
        with pytest.raises(ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await _post(_client(env={"SSL_CERT_FILE": str(cert_file)}), named)
    assert len(handler.bodies) == 2


async def test_a_refused_connection_is_a_transient_provider_error() -> None:
    with _server("ok") as (url, _):
        port = url.rsplit(":", 1)[1]
    config = ProviderConfig.model_validate(
        {
            "kind": "openai_compatible",
            "base_url": f"http://127.0.0.1:{port}/v1",
            "models": {"m1": {}},
        }
    )
    adapter = OpenAICompatibleAdapter("p", config, env={})
    events = [e async for batch in adapter.complete_batches(request()) for e in batch]
    assert events[-1].type == "error"
    error = events[-1].error
    assert error is not None
    assert error.retryability == "transient"
    assert error.metadata is not None
    assert error.metadata["transport"] is True
    assert "ConnectError" in error.message
    await adapter.aclose()


async def _body(sizes: list[int], stall_after: int | None = None) -> AsyncIterator[bytes]:
    for number, size in enumerate(sizes):
        if number == stall_after:
            await trio.sleep(60)
        yield b"x" * size


@pytest.mark.parametrize(
    ("sizes", "stall_after", "read"),
    [
        ([10, 20, 30], None, 3),  # the rest, read to its end
        ([10] + [DRAIN_BYTES // 2] * 4, None, 4),  # over DRAIN_BYTES: given up after it
        ([10, 20, 30], 2, 2),  # a rest that stalls: given up at DRAIN_S
    ],
)
async def test_a_left_httpx_or_sdk_body_is_drained_within_the_same_bounds(
    sizes: list[int], stall_after: int | None, read: int, autojump_clock: trio.abc.Clock
) -> None:
    """``LeftBody``: what a reader left of an httpx or SDK reply is read and dropped as
    ``Reply.finish`` does it: at most ``DRAIN_BYTES``, within ``DRAIN_S``."""
    taken: list[int] = []

    async def chunks() -> AsyncIterator[bytes]:
        async for chunk in _body(sizes, stall_after):
            taken.append(len(chunk))
            yield chunk

    body = LeftBody(chunks)
    first = body.chunks()
    assert body.chunks() is first  # one iterator, however often asked
    await first.__anext__()  # the reader's part
    started = trio.current_time()
    await body.drain((OSError,))
    assert len(taken) == read
    assert trio.current_time() - started <= DRAIN_S


async def test_a_body_no_reader_began_is_not_read() -> None:
    taken: list[bytes] = []

    async def chunks() -> AsyncIterator[bytes]:
        taken.append(b"read")
        yield b"x"

    await LeftBody(chunks).drain((OSError,))
    assert taken == []
