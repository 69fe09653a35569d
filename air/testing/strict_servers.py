"""Strict local model servers on 127.0.0.1: the Anthropic Messages API (``POST /v1/messages``),
OpenAI chat completions (``POST /v1/chat/completions``) and OpenAI's Responses API
(``POST /v1/responses``), for tests of the real anthropic SDK and real httpx (no client
mocking).

Owns ``StrictServer`` (``http.server`` in a thread; ``LocalServer`` is the same class): every
request is checked by the rules of its API (``air.testing.anthropic_rules``,
``air.testing.openai_rules``, ``air.testing.responses_rules``), a refusal answered with the
API's own error JSON shape and logged in ``rejected``; a valid one is answered by the next
queued ``Reply`` (``air.testing.wire_replies``) or the server's ``model`` (e.g.
``air.testing.cassette_model``). The usage of a scripted model's reply is the server's own: its
``PromptCache`` counts the prompt and what each API's cache holds of it (a Responses prompt as
a chat one). With ``info`` it also answers a local server's introspection endpoints
(``air.testing.local_info``). A test reads back every request received and the prompt usage
reported with each scripted reply (``usages``). A fake that is more lenient than the real API is
a defect (IMPL-API-1): every rule has a test in tests/llm/test_strict_servers.py (the Responses
API's in tests/llm/test_responses_rules.py).
"""

from __future__ import annotations

import functools
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

from air.testing.anthropic_rules import MessageMemo, anthropic_problem
from air.testing.local_info import LocalServerInfo
from air.testing.openai_rules import openai_problem
from air.testing.problems import Problem
from air.testing.prompt_cache import PromptCache
from air.testing.request_decoder import ConversationDecoder
from air.testing.responses_replies import with_prompt_usage
from air.testing.responses_rules import responses_problem
from air.testing.wire_replies import Reply, json_reply

__all__ = ["MESSAGES_MAX_BYTES", "LocalServer", "Model", "Received", "Rejection", "StrictServer"]

MESSAGES_MAX_BYTES = 32_000_000
"""The Messages API's request size limit (32 MB; Cloudflare answers 413 past it)."""


@dataclass
class Received:
    """One request as it arrived: its body is kept as the bytes received and decoded when a
    test reads it (a long task's hundreds of decoded conversations would make every garbage
    collection of the server walk them all: IMPL-API-7)."""

    path: str
    headers: dict[str, str]
    raw: bytes
    at: float

    @functools.cached_property
    def body(self) -> dict[str, Any]:
        """The decoded body (``{}`` when it is no JSON object)."""
        try:
            body = json.loads(self.raw or b"{}")
        except ValueError:
            return {}
        return body if isinstance(body, dict) else {}


@dataclass
class Rejection:
    path: str
    problem: Problem
    body: Any


Model = Callable[[str, dict[str, Any]], Reply]
"""A scripted model: (wire ``anthropic`` | ``openai`` | ``responses``, request body) -> its
reply."""


# --- the server ------------------------------------------------------------------------------


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # clients closing keep-alive connections (or reading half a body) are expected here
        return


def _error_reply(wire: str, problem: Problem) -> Reply:
    if wire == "anthropic":
        body: dict[str, Any] = {
            "type": "error",
            "error": {"type": problem.type, "message": problem.message},
        }
    elif problem.metadata is not None:  # OpenRouter's: the upstream's error in metadata
        body = {
            "error": {
                "message": problem.message,
                "code": problem.status,
                "metadata": problem.metadata,
            }
        }
    else:
        body = {
            "error": {
                "message": problem.message,
                "type": problem.type,
                "param": problem.param,
                "code": problem.code,
            }
        }
    return json_reply(problem.status, body)


def _counted(wire: str, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The wire and body whose prompt the cache counts: a Responses prompt (instructions,
    tools, input items) is cached as chat completions' is (automatically, by prefix)."""
    if wire != "responses":
        return wire, body
    items = body.get("input")
    items = [{"role": "user", "content": items}] if isinstance(items, str) else items or []
    system = [{"role": "system", "content": body["instructions"]}] if "instructions" in body else []
    return "openai", {
        "model": body.get("model"),
        "tools": body.get("tools"),
        "messages": system + items,
    }


class StrictServer:
    """Both wire formats on one port, each request checked like the real API checks it.

    Args:
        api_key: the one key accepted (``None``: any non-empty key).
        openai_keyless: chat completions without ``Authorization`` are accepted.
        ceilings: known models and their max output tokens (``None``: every model).
        model: answers each valid request when no ``Reply`` is queued.
        log: also append each refusal (path, status, message) to this JSONL file.
        info: also answer as this local server (Ollama, llama.cpp, vLLM) about its model.
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        openai_keyless: bool = False,
        ceilings: dict[str, int] | None = None,
        model: Model | None = None,
        log: str | Path | None = None,
        info: LocalServerInfo | None = None,
    ) -> None:
        self.replies: deque[Reply] = deque()
        self.log = Path(log) if log is not None else None
        self.requests: list[Received] = []
        self.rejected: list[Rejection] = []
        self.api_key = api_key
        self.openai_keyless = openai_keyless
        self.ceilings = ceilings
        self.model = model
        self.info = info
        self.cache = PromptCache()
        self.decoder = ConversationDecoder()
        """Decodes each request body, the messages the last one shared taken as decoded."""
        self.memo = MessageMemo()
        """The messages of the conversation checked last (IMPL-API-7)."""
        self.connections = 0
        """How many connections clients opened (a client that keeps its connection opens one)."""
        self.usages: list[dict[str, int]] = []
        """The prompt usage the server reported with each scripted ``model``'s reply, in the
        order answered (what the client must count)."""
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # as a real API's server: a kept connection's small
            # writes (headers, then each event) are not held back for the client's delayed ACK

            def setup(self) -> None:
                super().setup()
                with outer._lock:
                    outer.connections += 1

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                raw = self.rfile.read(length)
                try:
                    body: Any = outer.decoder.decode(raw or b"{}")
                except ValueError:
                    body = None
                headers = {k.lower(): v for k, v in self.headers.items()}
                known = outer.info.answer("POST", self.path, body) if outer.info else None
                if known is None and not self.path.endswith(
                    ("/messages", "/chat/completions", "/responses")
                ):
                    known = json_reply(404, {"error": {"message": "Not Found"}})
                self._send(known or outer._answer(self.path, headers, body, raw))

            def do_GET(self) -> None:
                known = outer.info.answer("GET", self.path, None) if outer.info else None
                self._send(known or json_reply(404, {"error": {"message": "Not Found"}}))

            def _send(self, reply: Reply) -> None:
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
                    if reply.stall_after is not None and number == reply.stall_after:
                        time.sleep(reply.stall_s)
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

    def _answer(self, path: str, headers: dict[str, str], body: Any, raw: bytes) -> Reply:
        wire = "anthropic" if path.endswith("/messages") else "openai"
        wire = "responses" if path.endswith("/responses") else wire
        if wire == "anthropic" and len(raw) > MESSAGES_MAX_BYTES:
            problem: Problem | None = Problem(
                413,
                "request_too_large",
                "Request exceeds the maximum allowed number of bytes. The maximum request size "
                "is 32 MB for standard API endpoints.",
            )
        elif wire == "anthropic":
            problem = anthropic_problem(
                headers, body, api_key=self.api_key, ceilings=self.ceilings, memo=self.memo
            )
        else:
            problem = (responses_problem if wire == "responses" else openai_problem)(
                headers,
                body,
                api_key=self.api_key,
                keyless=self.openai_keyless,
                ceilings=self.ceilings,
            )
        with self._lock:
            self.requests.append(Received(path=path, headers=headers, raw=raw, at=time.monotonic()))
            if problem is not None:
                self.rejected.append(Rejection(path=path, problem=problem, body=body))
                if self.log is not None:
                    line = {"path": path, "status": problem.status, "message": problem.message}
                    with self.log.open("a", encoding="utf-8") as handle:
                        handle.write(json.dumps(line) + "\n")
                return _error_reply(wire, problem)
            queued = self.replies.popleft() if self.replies else None
        if queued is not None:
            return queued
        if self.model is not None:
            assert isinstance(body, dict)
            try:
                reply = self.model(wire, body)
                usage = self.cache.usage(*_counted(wire, body))
                with self._lock:
                    self.usages.append(usage)
                if wire == "responses":
                    reply.chunks = with_prompt_usage(reply.chunks, usage)
                    return reply
                return self.cache.with_usage(wire, reply, usage)
            except Exception as exc:  # why: a broken script must show in the test, not hang
                return _error_reply(wire, Problem(500, "api_error", f"scripted model: {exc!r}"))
        return _error_reply(wire, Problem(500, "api_error", "no reply queued"))

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def push(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def __enter__(self) -> StrictServer:
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


LocalServer = StrictServer
"""The name the tests have always used: every local server is strict."""
