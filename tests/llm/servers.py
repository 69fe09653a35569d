"""Local HTTP servers on 127.0.0.1 speaking the Anthropic Messages and OpenAI chat-completions
wire formats, for testing the real anthropic SDK and real httpx (no client mocking).

A ``LocalServer`` runs ``http.server`` in a thread; a test queues ``Reply`` objects (status,
headers, body chunks sent with chunked transfer encoding, optional drop mid-stream) and reads
back every request received. ``anthropic_sse`` / ``openai_sse`` build streamed bodies.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "text/event-stream"})
    chunks: list[bytes] = field(default_factory=list)
    drop_after: int | None = None
    """Close the socket after this many chunks, without ending the body."""


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # clients closing keep-alive connections (or reading half a body) are expected here
        return


class LocalServer:
    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[Received] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                raw = self.rfile.read(length)
                with outer._lock:
                    outer.requests.append(
                        Received(
                            path=self.path,
                            headers={k.lower(): v for k, v in self.headers.items()},
                            body=json.loads(raw or b"{}"),
                            at=time.monotonic(),
                        )
                    )
                    reply = outer.replies.popleft() if outer.replies else None
                if reply is None:
                    reply = Reply(
                        status=500,
                        headers={"content-type": "application/json"},
                        chunks=[b'{"error": {"message": "no reply queued"}}'],
                    )
                self.send_response(reply.status)
                streamed = reply.headers.get("content-type") == "text/event-stream"
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                if streamed:
                    self.send_header("transfer-encoding", "chunked")
                else:
                    self.send_header("content-length", str(sum(len(c) for c in reply.chunks)))
                self.end_headers()
                if not streamed:
                    self.wfile.write(b"".join(reply.chunks))
                    self.wfile.flush()
                    return
                for number, chunk in enumerate(reply.chunks):
                    if reply.drop_after is not None and number >= reply.drop_after:
                        break
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
                if reply.drop_after is not None:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        self._server = _QuietServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.02,), daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def push(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def __enter__(self) -> LocalServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


# --- wire builders ---------------------------------------------------------------------------


@dataclass
class Turn:
    """A model turn independent of wire format."""

    text: list[str] = field(default_factory=list)
    tool: tuple[str, str, list[str]] | None = None
    """(id, name, partial JSON pieces)."""
    stop: str = "end_turn"
    input_tokens: int = 11
    output_tokens: int = 7


def _sse(event: str | None, data: dict[str, Any] | str) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def anthropic_sse(
    turn: Turn, *, model: str = "claude-test", message_id: str = "msg_1"
) -> list[bytes]:
    out = [
        _sse(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {
                        "input_tokens": turn.input_tokens,
                        "output_tokens": 1,
                        "cache_creation_input_tokens": 3,
                        "cache_read_input_tokens": 5,
                    },
                },
            },
        )
    ]
    index = 0
    if turn.text:
        out.append(
            _sse(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            )
        )
        out.append(_sse("ping", {"type": "ping"}))
        for piece in turn.text:
            out.append(
                _sse(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "text_delta", "text": piece},
                    },
                )
            )
        out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
        index = 1
    if turn.tool is not None:
        tool_id, name, pieces = turn.tool
        block = {"type": "tool_use", "id": tool_id, "name": name, "input": {}}
        out.append(
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": block},
            )
        )
        for piece in pieces:
            delta = {"type": "input_json_delta", "partial_json": piece}
            out.append(
                _sse(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
            )
        out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    out.append(
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": turn.stop, "stop_sequence": None},
                "usage": {"output_tokens": turn.output_tokens},
            },
        )
    )
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return out


_OPENAI_FINISH = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length"}


def openai_sse(
    turn: Turn, *, model: str = "gpt-test", message_id: str = "chatcmpl-1"
) -> list[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _sse(
            None,
            {
                "id": message_id,
                "object": "chat.completion.chunk",
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            },
        )

    out = [chunk({"role": "assistant", "content": ""})]
    for piece in turn.text:
        out.append(chunk({"content": piece}))
    if turn.tool is not None:
        tool_id, name, pieces = turn.tool
        first = {
            "index": 0,
            "id": tool_id,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        out.append(chunk({"tool_calls": [first]}))
        for piece in pieces:
            out.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
    out.append(chunk({}, _OPENAI_FINISH[turn.stop]))
    out.append(
        _sse(
            None,
            {
                "id": message_id,
                "object": "chat.completion.chunk",
                "model": model,
                "choices": [],
                "usage": {
                    "prompt_tokens": turn.input_tokens + 5,
                    "completion_tokens": turn.output_tokens,
                    "prompt_tokens_details": {"cached_tokens": 5},
                },
            },
        )
    )
    out.append(_sse(None, "[DONE]"))
    return out


def json_reply(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> Reply:
    return Reply(
        status=status,
        headers={"content-type": "application/json", **(headers or {})},
        chunks=[json.dumps(body).encode()],
    )
