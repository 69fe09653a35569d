"""MCP servers that speak only the 2026-07-28 revision, for the tests of ``air.mcp``.

The spec lets a server choose not to support a revision; one that supports only 2026-07-28
answers the ``initialize`` handshake (and any request not stamped with the modern
``_meta`` protocol version) with ``UnsupportedProtocolVersionError`` (-32022) naming the
versions it supports. Both servers here are the official SDK's (the real modern path) behind
such a refusal, added by this module and nothing else:

- ``python -m air.testing.mcp_modern stdio -- PROGRAM ARGS...``: relays newline-delimited
  JSON-RPC between its stdio and PROGRAM (e.g. ``mcp-server-time``, a dual-era SDK server),
  answering the handshake era's requests itself and dropping its notifications.
- ``python -m air.testing.mcp_modern http PORT``: serves ``http://127.0.0.1:PORT/mcp`` (the
  SDK's ``MCPServer``, tools ``echo`` and ``ask``; ``ask`` answers ``input_required``, asking
  the client for input it must give before the call can complete), refusing with HTTP 400 a
  request whose ``MCP-Protocol-Version`` header is absent or of the handshake era.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from typing import Any

MODERN = "2026-07-28"
_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
_UNSUPPORTED = -32022


def refusal(ident: Any, requested: Any) -> dict[str, Any]:
    """The JSON-RPC error a modern-only server answers a handshake-era request with."""
    return {
        "jsonrpc": "2.0",
        "id": ident,
        "error": {
            "code": _UNSUPPORTED,
            "message": "Unsupported protocol version",
            "data": {"supported": [MODERN], "requested": requested},
        },
    }


def _requested(message: dict[str, Any]) -> Any:
    """The revision a request asks for: its ``_meta`` stamp, or the handshake's offer."""
    params = message.get("params") or {}
    meta = params.get("_meta") or {}
    return meta.get(_VERSION_KEY, params.get("protocolVersion"))


def _stdio(argv: list[str]) -> None:
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None
    assert child.stdout is not None
    lock = threading.Lock()

    def write(line: bytes) -> None:
        with lock:
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()

    def relay_out() -> None:
        assert child.stdout is not None
        for line in child.stdout:
            write(line)

    threading.Thread(target=relay_out, daemon=True).start()
    for line in sys.stdin.buffer:
        message = json.loads(line)
        requested = _requested(message)
        if requested != MODERN and "method" in message:
            if "id" in message:
                write(json.dumps(refusal(message["id"], requested)).encode() + b"\n")
            continue  # a handshake-era notification (notifications/initialized): dropped
        child.stdin.write(line)
        child.stdin.flush()
    child.stdin.close()
    child.wait()


def _http(port: int) -> None:
    import uvicorn
    from mcp.server.mcpserver import MCPServer
    from mcp_types import InputRequiredResult

    server = MCPServer("modern")

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    def ask() -> Any:
        """Needs input from the client before it can answer."""
        return InputRequiredResult(request_state="ask-again")

    ask.__annotations__["return"] = InputRequiredResult  # the SDK reads it: a declared MRTR
    server.tool()(ask)

    app = server.streamable_http_app()

    async def gated(scope: Any, receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers") or [])
        version = headers.get(b"mcp-protocol-version", b"").decode("latin-1")
        if scope["type"] != "http" or version == MODERN or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        body = b""
        while True:
            event = await receive()
            body += event.get("body", b"")
            if not event.get("more_body"):
                break
        try:
            message = json.loads(body)
        except ValueError:
            message = {}
        ident = message.get("id") if isinstance(message, dict) else None
        answer = json.dumps(refusal(ident, version or _requested(message))).encode()
        start = {"type": "http.response.start", "status": 400}
        start["headers"] = [(b"content-type", b"application/json")]
        await send(start)
        await send({"type": "http.response.body", "body": answer})

    uvicorn.run(gated, host="127.0.0.1", port=port, log_level="error")


def main() -> None:
    if sys.argv[1:2] == ["stdio"] and "--" in sys.argv:
        _stdio(sys.argv[sys.argv.index("--") + 1 :])
    elif sys.argv[1:2] == ["http"] and len(sys.argv) == 3:
        _http(int(sys.argv[2]))
    else:
        raise SystemExit("usage: mcp_modern stdio -- PROGRAM ARGS... | mcp_modern http PORT")


if __name__ == "__main__":
    main()
