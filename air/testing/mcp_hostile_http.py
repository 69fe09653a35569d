"""A hostile MCP server over streamable HTTP for the tests of ``air.mcp``.

Run as ``python -m air.testing.mcp_hostile_http PORT``: it serves ``http://127.0.0.1:PORT/mcp``
until killed. Every answer is plain JSON (``application/json``), the form the SDK's client reads
whole: ``initialize``, ``tools/list`` and ``tools/call`` of ``echo`` (its arguments back),
``huge`` (a valid answer of ``mib`` MiB, 40 unless the call says) and ``flood`` (an answer with
no length that never ends). Notifications get ``202``; a ``GET`` (no event stream here) ``405``.
Standard library only.
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOOLS = [
    {"name": "echo", "description": "Echo the arguments.", "inputSchema": {"type": "object"}},
    {"name": "huge", "description": "An answer of mib MiB.", "inputSchema": {"type": "object"}},
    {"name": "flood", "description": "Never ends its answer.", "inputSchema": {"type": "object"}},
]
CHUNK = b"x" * (1 << 20)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(405)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_DELETE(self) -> None:
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
        ident, method = message.get("id"), message.get("method")
        if ident is None:
            self.send_response(202)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        params = message.get("params") or {}
        if method == "initialize":
            result = {
                "protocolVersion": params["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile-http", "version": "1"},
            }
            self._json({"jsonrpc": "2.0", "id": ident, "result": result})
        elif method == "tools/list":
            self._json({"jsonrpc": "2.0", "id": ident, "result": {"tools": TOOLS}})
        elif method == "tools/call" and params.get("name") in ("huge", "flood"):
            self._text_answer(ident, params)
        elif method == "tools/call":
            text = json.dumps(params.get("arguments") or {}, sort_keys=True)
            content = [{"type": "text", "text": text}]
            self._json({"jsonrpc": "2.0", "id": ident, "result": {"content": content}})
        else:
            error = {"code": -32601, "message": f"no method {method}"}
            self._json({"jsonrpc": "2.0", "id": ident, "error": error})

    def _json(self, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _text_answer(self, ident: Any, params: dict[str, Any]) -> None:
        answer = {"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text"}]}}
        head = json.dumps(answer)
        opened = (head[: -len("}]}}")] + ', "text": "').encode()
        closed = b'"}]}}'
        self.send_response(200)
        self.send_header("content-type", "application/json")
        if params["name"] == "huge":
            mib = int((params.get("arguments") or {}).get("mib", 40))
            self.send_header("content-length", str(len(opened) + mib * len(CHUNK) + len(closed)))
            self.end_headers()
            self.wfile.write(opened)
            for _ in range(mib):
                self.wfile.write(CHUNK)
            self.wfile.write(closed)
            return
        self.send_header("connection", "close")  # no length: the answer ends with the connection
        self.end_headers()
        self.wfile.write(opened)
        try:
            while True:
                self.wfile.write(CHUNK)
        except OSError:  # air hung up
            self.close_connection = True


def main() -> None:
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), _Handler).serve_forever()


if __name__ == "__main__":
    main()
