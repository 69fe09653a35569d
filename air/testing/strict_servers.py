"""Strict local model servers on 127.0.0.1: the Anthropic Messages API (``POST /v1/messages``)
and OpenAI chat completions (``POST /v1/chat/completions``), for tests of the real anthropic
SDK and real httpx (no client mocking).

Owns ``StrictServer`` (``http.server`` in a thread; ``LocalServer`` is the same class), the
request rules of both APIs (``anthropic_problem`` / ``openai_problem``: what the real APIs
document and refuse — tool name pattern and length, object input schemas, alternating roles,
every ``tool_result`` answering a ``tool_use`` of the turn just before, no empty text,
``max_tokens`` present and within the model's ceiling, the auth and version headers, OpenAI
``tool_calls`` ids and ``tool`` messages), answered with the API's own error JSON shape and
logged in ``rejected``; the wire builders (``anthropic_sse``, ``openai_sse``, ``json_reply``)
and ``CassetteModel``, a scripted model that plays per-task cassettes over either wire.

A test queues ``Reply`` objects (status, headers, body chunks sent with chunked transfer
encoding, an optional drop or stall mid-stream) or gives the server a ``model`` that answers
each valid request; it reads back every request received. A fake that is more lenient than the
real API is a defect (IMPL-API-1): every rule here has a test in tests/llm/test_strict_servers.py.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = [
    "ANTHROPIC_VERSION",
    "CassetteModel",
    "LocalServer",
    "Problem",
    "Received",
    "Rejection",
    "Reply",
    "StrictServer",
    "Turn",
    "anthropic_problem",
    "anthropic_sse",
    "blocks_sse",
    "json_reply",
    "openai_problem",
    "openai_sse",
    "turn_sse",
]

ANTHROPIC_VERSION = "2023-06-01"
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""Both APIs: a tool (function) name."""
TOOL_USE_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
_VERSION = re.compile(r"^20\d\d-\d\d-\d\d$")
DEFAULT_CEILING = 64_000
"""The max_tokens ceiling of a model the server was not told about."""


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "text/event-stream"})
    chunks: list[bytes] = field(default_factory=list)
    drop_after: int | None = None
    """Close the socket after this many chunks, without ending the body."""
    stall_after: int | None = None
    """Stop sending (without closing) after this many chunks, for ``stall_s`` seconds."""
    stall_s: float = 0.0


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float


@dataclass(frozen=True)
class Problem:
    """Why a request is refused: the HTTP status, the API's error type and message."""

    status: int
    type: str
    message: str
    code: str | None = None


@dataclass
class Rejection:
    path: str
    problem: Problem
    body: Any


Model = Callable[[str, dict[str, Any]], Reply]
"""A scripted model: (wire ``anthropic`` | ``openai``, request body) -> its reply."""


def _invalid(message: str, code: str | None = None) -> Problem:
    return Problem(400, "invalid_request_error", message, code)


# --- Anthropic Messages rules ----------------------------------------------------------------

_ANTHROPIC_FIELDS = {
    "model",
    "messages",
    "max_tokens",
    "system",
    "tools",
    "tool_choice",
    "temperature",
    "top_p",
    "top_k",
    "stop_sequences",
    "stream",
    "metadata",
    "thinking",
    "service_tier",
}


def _text_problem(where: str, block: dict[str, Any]) -> Problem | None:
    text = block.get("text")
    if not isinstance(text, str):
        return _invalid(f"{where}.text: Input should be a valid string")
    if not text:
        return _invalid(f"{where}.text: text content blocks must be non-empty")
    if not text.strip():
        return _invalid(f"{where}.text: text content blocks must contain non-whitespace text")
    return None


def _anthropic_tools(body: dict[str, Any]) -> tuple[set[str], Problem | None]:
    tools = body.get("tools")
    if tools is None:
        return set(), None
    if not isinstance(tools, list):
        return set(), _invalid("tools: Input should be a valid list")
    names: set[str] = set()
    for k, tool in enumerate(tools):
        if not isinstance(tool, dict):
            return names, _invalid(f"tools.{k}: Input should be a valid dictionary")
        name = tool.get("name")
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            return names, _invalid(
                f"tools.{k}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
            )
        if name in names:
            return names, _invalid("tools: Tool names must be unique.")
        names.add(name)
        schema = tool.get("input_schema")
        if not isinstance(schema, dict):
            return names, _invalid(f"tools.{k}.custom.input_schema: Field required")
        if schema.get("type") != "object":
            return names, _invalid(f"tools.{k}.custom.input_schema.type: Input should be 'object'")
        extra = set(tool) - {"name", "description", "input_schema", "cache_control", "type"}
        if extra:
            return names, _invalid(
                f"tools.{k}.custom.{sorted(extra)[0]}: Extra inputs are not permitted"
            )
    return names, None


def _anthropic_messages(messages: Any, has_tools: bool) -> Problem | None:
    if not isinstance(messages, list):
        return _invalid("messages: Field required")
    if not messages:
        return _invalid("messages: at least one message is required")
    previous_uses: list[str] = []
    seen_ids: set[str] = set()
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            return _invalid(f"messages.{i}: Input should be a valid dictionary")
        role = message.get("role")
        if role not in ("user", "assistant"):
            return _invalid(f"messages.{i}.role: Input should be 'user' or 'assistant'")
        if i == 0 and role != "user":
            return _invalid('messages: first message must use the "user" role')
        if i > 0 and messages[i - 1].get("role") == role:
            return _invalid(
                'messages: roles must alternate between "user" and "assistant", but found '
                f'multiple "{role}" roles in a row'
            )
        content = message.get("content")
        last = i == len(messages) - 1
        if isinstance(content, str):
            blocks: list[Any] = [{"type": "text", "text": content}] if content or not last else []
        elif isinstance(content, list):
            blocks = content
        else:
            return _invalid(f"messages.{i}.content: Input should be a valid list")
        if not blocks and not (last and role == "assistant"):
            return _invalid(
                f"messages.{i}: all messages must have non-empty content except for the "
                "optional final assistant message"
            )
        uses: list[str] = []
        answered: list[str] = []
        for j, block in enumerate(blocks):
            where = f"messages.{i}.content.{j}"
            if not isinstance(block, dict):
                return _invalid(f"{where}: Input should be a valid dictionary")
            kind = block.get("type")
            if kind == "text":
                problem = _text_problem(where, block)
                if problem is not None:
                    return problem
            elif kind == "tool_use":
                if role != "assistant":
                    return _invalid(f"{where}: tool_use blocks may only appear in assistant turns")
                tool_id = block.get("id")
                if not isinstance(tool_id, str) or not TOOL_USE_ID.match(tool_id):
                    return _invalid(f"{where}.id: String should match pattern '^[a-zA-Z0-9_-]+$'")
                if tool_id in seen_ids:
                    return _invalid(f"messages: `tool_use` ids must be unique, found {tool_id}")
                seen_ids.add(tool_id)
                name = block.get("name")
                if not isinstance(name, str) or not TOOL_NAME.match(name):
                    return _invalid(
                        f"{where}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
                    )
                if not isinstance(block.get("input"), dict):
                    return _invalid(f"{where}.input: Input should be a valid dictionary")
                uses.append(tool_id)
            elif kind == "tool_result":
                if role != "user":
                    return _invalid(f"{where}: tool_result blocks may only appear in user turns")
                if any(b.get("type") != "tool_result" for b in blocks[:j] if isinstance(b, dict)):
                    return _invalid(
                        f"{where}: `tool_result` blocks must come first in the content of a "
                        "user message, before any other block"
                    )
                use_id = block.get("tool_use_id")
                if use_id not in previous_uses:
                    return _invalid(
                        f"{where}: unexpected `tool_use_id` found in `tool_result` blocks: "
                        f"{use_id}. Each `tool_result` block must have a corresponding "
                        "`tool_use` block in the previous message."
                    )
                inner = block.get("content", "")
                if isinstance(inner, list):
                    for k, part in enumerate(inner):
                        if not isinstance(part, dict) or part.get("type") != "text":
                            return _invalid(f"{where}.content.{k}: Input should be a text block")
                        problem = _text_problem(f"{where}.content.{k}", part)
                        if problem is not None:
                            return problem
                elif not isinstance(inner, str):
                    return _invalid(f"{where}.content: Input should be a valid string or list")
                answered.append(use_id)
            else:
                return _invalid(f"{where}.type: unknown content block type {kind!r}")
        if (uses or answered) and not has_tools:
            return _invalid(
                "Requests which include `tool_use` or `tool_result` blocks must define tools."
            )
        if previous_uses:
            missing = [u for u in previous_uses if u not in answered]
            if missing:
                return _invalid(
                    f"messages.{i}: `tool_use` ids were found without `tool_result` blocks "
                    f"immediately after: {', '.join(missing)}. Each `tool_use` block must have "
                    "a corresponding `tool_result` block in the next message."
                )
        previous_uses = uses
    return None


def anthropic_problem(
    headers: dict[str, str],
    body: Any,
    *,
    api_key: str | None = None,
    ceilings: dict[str, int] | None = None,
) -> Problem | None:
    """Why the Messages API would refuse this request, or ``None`` when it is valid.

    Args:
        headers: the request headers, lower-cased names.
        api_key: the one key accepted (``None``: any non-empty key).
        ceilings: the known models and their max output tokens (``None``: any model,
            ``DEFAULT_CEILING``).
    """
    key = headers.get("x-api-key")
    scheme, _, token = headers.get("authorization", "").partition(" ")
    if not key and scheme.lower() == "bearer":
        key = token  # the official SDK (2.x) sends the key as a bearer token
    if not key:
        return Problem(401, "authentication_error", "x-api-key header is required")
    if api_key is not None and key != api_key:
        return Problem(401, "authentication_error", "invalid x-api-key")
    version = headers.get("anthropic-version")
    if not version:
        return _invalid("anthropic-version: header is required")
    if not _VERSION.match(version):
        return _invalid(f"anthropic-version: unknown version {version!r}")
    if not isinstance(body, dict):
        return _invalid("The request body is not valid JSON.")
    extra = set(body) - _ANTHROPIC_FIELDS
    if extra:
        return _invalid(f"{sorted(extra)[0]}: Extra inputs are not permitted")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return _invalid("model: Field required")
    if ceilings is not None and model not in ceilings:
        return Problem(404, "not_found_error", f"model: {model}")
    ceiling = (ceilings or {}).get(model, DEFAULT_CEILING)
    max_tokens = body.get("max_tokens")
    if max_tokens is None:
        return _invalid("max_tokens: Field required")
    if type(max_tokens) is not int or max_tokens < 1:
        return _invalid("max_tokens: Input should be a valid integer greater than or equal to 1")
    if max_tokens > ceiling:
        return _invalid(
            f"max_tokens: {max_tokens} > {ceiling}, which is the maximum allowed number of "
            f"output tokens for {model}"
        )
    if "stream" in body and not isinstance(body["stream"], bool):
        return _invalid("stream: Input should be a valid boolean")
    system = body.get("system")
    if isinstance(system, list):
        for j, block in enumerate(system):
            if not isinstance(block, dict) or block.get("type") != "text":
                return _invalid(f"system.{j}: Input should be a text block")
            problem = _text_problem(f"system.{j}", block)
            if problem is not None:
                return problem
    elif system is not None and not isinstance(system, str):
        return _invalid("system: Input should be a valid string or list of text blocks")
    names, problem = _anthropic_tools(body)
    if problem is not None:
        return problem
    choice = body.get("tool_choice")
    if choice is not None:
        if not isinstance(choice, dict) or choice.get("type") not in (
            "auto",
            "any",
            "tool",
            "none",
        ):
            return _invalid("tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'")
        if choice.get("type") == "tool" and choice.get("name") not in names:
            return _invalid(f"tool_choice.name: tool {choice.get('name')!r} is not defined")
    temperature = body.get("temperature")
    if temperature is not None and not (
        isinstance(temperature, int | float) and 0 <= temperature <= 1
    ):
        return _invalid("temperature: Input should be less than or equal to 1")
    stops = body.get("stop_sequences")
    if stops is not None and (
        not isinstance(stops, list) or any(not isinstance(s, str) or not s.strip() for s in stops)
    ):
        return _invalid("stop_sequences: each stop sequence must contain non-whitespace")
    return _anthropic_messages(body.get("messages"), bool(names))


# --- OpenAI chat-completions rules -----------------------------------------------------------

_OPENAI_FIELDS = {
    "model",
    "messages",
    "max_tokens",
    "max_completion_tokens",
    "stream",
    "stream_options",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "temperature",
    "top_p",
    "stop",
    "n",
    "seed",
    "user",
    "response_format",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "logprobs",
    "top_logprobs",
    "metadata",
    "store",
    "reasoning_effort",
    "service_tier",
}


def _openai_tools(body: dict[str, Any]) -> tuple[set[str], Problem | None]:
    tools = body.get("tools")
    if tools is None:
        return set(), None
    if not isinstance(tools, list):
        return set(), _invalid("Invalid type for 'tools': expected an array.", "invalid_type")
    names: set[str] = set()
    for k, tool in enumerate(tools):
        if not isinstance(tool, dict) or tool.get("type") != "function":
            return names, _invalid(f"Invalid value for 'tools[{k}].type': expected 'function'.")
        fn = tool.get("function")
        if not isinstance(fn, dict):
            return names, _invalid(f"Missing required parameter: 'tools[{k}].function'.")
        name = fn.get("name")
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            return names, _invalid(
                f"Invalid 'tools[{k}].function.name': string does not match pattern. Expected a "
                "string that matches the pattern '^[a-zA-Z0-9_-]{1,64}$'.",
                "invalid_value",
            )
        if name in names:
            return names, _invalid(f"Duplicate function name '{name}' in 'tools'.")
        names.add(name)
        params = fn.get("parameters")
        if params is not None and (not isinstance(params, dict) or params.get("type") != "object"):
            return names, _invalid(
                f"Invalid schema for function '{name}': schema must be a JSON Schema of "
                "'type: \"object\"'.",
                "invalid_function_parameters",
            )
    return names, None


def _openai_content(where: str, content: Any) -> Problem | None:
    if isinstance(content, str):
        return None
    if not isinstance(content, list):
        return _invalid(f"Invalid type for '{where}': expected a string or an array.")
    if not content:
        return _invalid(
            f"Invalid '{where}': empty array. Expected an array with minimum length 1, but got "
            "an empty array instead.",
            "empty_array",
        )
    for k, part in enumerate(content):
        if not isinstance(part, dict) or part.get("type") != "text":
            return _invalid(f"Invalid value: '{where}[{k}].type'. Supported values are: 'text'.")
        if not isinstance(part.get("text"), str):
            return _invalid(f"Missing required parameter: '{where}[{k}].text'.")
    return None


def _openai_messages(messages: Any) -> Problem | None:
    if not isinstance(messages, list):
        return _invalid("Missing required parameter: 'messages'.")
    if not messages:
        return _invalid("[] is too short - 'messages'", "empty_array")
    pending: list[str] = []
    offered: set[str] = set()
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            return _invalid(f"Invalid type for '{where}': expected an object.")
        role = message.get("role")
        if role not in ("system", "developer", "user", "assistant", "tool"):
            return _invalid(
                f"Invalid value: '{role}'. Supported values are: 'system', 'assistant', "
                "'user', 'tool', and 'developer'.",
                "invalid_value",
            )
        if role != "tool" and pending:
            return _invalid(
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                f"response messages: {', '.join(pending)}"
            )
        if role == "tool":
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str) or call_id not in offered:
                return _invalid(
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'."
                )
            if call_id in pending:
                pending.remove(call_id)
            problem = _openai_content(f"{where}.content", message.get("content"))
            if problem is not None:
                return problem
            continue
        offered = set() if role != "assistant" else offered
        if role == "assistant":
            calls = message.get("tool_calls")
            content = message.get("content")
            if calls is None and content is None:
                return _invalid(
                    f"Invalid value for '{where}.content': expected a string, got null."
                )
            if content is not None:
                problem = _openai_content(f"{where}.content", content)
                if problem is not None:
                    return problem
            offered = set()
            for k, call in enumerate(calls or []):
                cw = f"{where}.tool_calls[{k}]"
                if (
                    not isinstance(call, dict)
                    or not isinstance(call.get("id"), str)
                    or not call["id"]
                ):
                    return _invalid(f"Missing required parameter: '{cw}.id'.")
                if call.get("type") != "function":
                    return _invalid(f"Missing required parameter: '{cw}.type'.")
                fn = call.get("function")
                if not isinstance(fn, dict):
                    return _invalid(f"Missing required parameter: '{cw}.function'.")
                name = fn.get("name")
                if not isinstance(name, str) or not TOOL_NAME.match(name):
                    return _invalid(
                        f"Invalid '{cw}.function.name': string does not match pattern. Expected "
                        "a string that matches the pattern '^[a-zA-Z0-9_-]{1,64}$'.",
                        "invalid_value",
                    )
                if not isinstance(fn.get("arguments"), str):
                    return _invalid(
                        f"Invalid type for '{cw}.function.arguments': expected a string."
                    )
                offered.add(call["id"])
            pending = list(offered)
            continue
        problem = _openai_content(f"{where}.content", message.get("content"))
        if problem is not None:
            return problem
    if pending:
        return _invalid(
            "An assistant message with 'tool_calls' must be followed by tool messages responding "
            f"to each 'tool_call_id'. The following tool_call_ids did not have response "
            f"messages: {', '.join(pending)}"
        )
    return None


def openai_problem(
    headers: dict[str, str],
    body: Any,
    *,
    api_key: str | None = None,
    keyless: bool = False,
    ceilings: dict[str, int] | None = None,
) -> Problem | None:
    """Why chat completions would refuse this request, or ``None`` when it is valid.

    Args:
        keyless: accept a request without ``Authorization`` (a local server such as Ollama).
    """
    auth = headers.get("authorization", "")
    if not auth and not keyless:
        return Problem(
            401,
            "invalid_request_error",
            "You didn't provide an API key. You need to provide your API key in an "
            "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
        )
    if auth:
        scheme, _, token = auth.partition(" ")
        if scheme.lower() != "bearer" or not token or (api_key is not None and token != api_key):
            return Problem(
                401, "invalid_request_error", "Incorrect API key provided.", "invalid_api_key"
            )
    if not isinstance(body, dict):
        return _invalid("We could not parse the JSON body of your request.")
    extra = set(body) - _OPENAI_FIELDS
    if extra:
        return _invalid(f"Unrecognized request argument supplied: {sorted(extra)[0]}")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return _invalid("you must provide a model parameter")
    if ceilings is not None and model not in ceilings:
        return Problem(
            404,
            "invalid_request_error",
            f"The model `{model}` does not exist or you do not have access to it.",
            "model_not_found",
        )
    ceiling = (ceilings or {}).get(model, DEFAULT_CEILING)
    for name in ("max_tokens", "max_completion_tokens"):
        value = body.get(name)
        if value is None:
            continue
        if type(value) is not int or value < 1:
            return _invalid(
                f"Invalid '{name}': integer below minimum value.", "integer_below_min_value"
            )
        if value > ceiling:
            return _invalid(
                f"{name} is too large: {value}. This model supports at most {ceiling} "
                f"completion tokens, whereas you provided {value}.",
                "invalid_value",
            )
    if "stream_options" in body and body.get("stream") is not True:
        return _invalid("The 'stream_options' parameter is only allowed when 'stream' is enabled.")
    names, problem = _openai_tools(body)
    if problem is not None:
        return problem
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        chosen = (choice.get("function") or {}).get("name")
        if chosen not in names:
            return _invalid(
                f"Invalid value for 'tool_choice': function '{chosen}' is not in tools."
            )
    elif choice is not None and choice not in ("auto", "none", "required"):
        return _invalid("Invalid value for 'tool_choice'.", "invalid_value")
    return _openai_messages(body.get("messages"))


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
    else:
        body = {
            "error": {
                "message": problem.message,
                "type": problem.type,
                "param": None,
                "code": problem.code,
            }
        }
    return json_reply(problem.status, body)


class StrictServer:
    """Both wire formats on one port, each request checked like the real API checks it.

    Args:
        api_key: the one key accepted (``None``: any non-empty key).
        openai_keyless: chat completions without ``Authorization`` are accepted.
        ceilings: known models and their max output tokens (``None``: every model).
        model: answers each valid request when no ``Reply`` is queued.
        log: also append each refusal (path, status, message) to this JSONL file.
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        openai_keyless: bool = False,
        ceilings: dict[str, int] | None = None,
        model: Model | None = None,
        log: str | Path | None = None,
    ) -> None:
        self.replies: deque[Reply] = deque()
        self.log = Path(log) if log is not None else None
        self.requests: list[Received] = []
        self.rejected: list[Rejection] = []
        self.api_key = api_key
        self.openai_keyless = openai_keyless
        self.ceilings = ceilings
        self.model = model
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                raw = self.rfile.read(length)
                try:
                    body: Any = json.loads(raw or b"{}")
                except ValueError:
                    body = None
                headers = {k.lower(): v for k, v in self.headers.items()}
                reply = outer._answer(self.path, headers, body)
                self._send(reply)

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

    def _answer(self, path: str, headers: dict[str, str], body: Any) -> Reply:
        wire = "anthropic" if path.endswith("/messages") else "openai"
        if wire == "anthropic":
            problem = anthropic_problem(headers, body, api_key=self.api_key, ceilings=self.ceilings)
        else:
            problem = openai_problem(
                headers,
                body,
                api_key=self.api_key,
                keyless=self.openai_keyless,
                ceilings=self.ceilings,
            )
        with self._lock:
            self.requests.append(
                Received(
                    path=path,
                    headers=headers,
                    body=body if isinstance(body, dict) else {},
                    at=time.monotonic(),
                )
            )
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
                return self.model(wire, body)
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


Block = tuple[str, Any]
"""("text", [pieces]) or ("tool_use", (id, name, [partial JSON pieces]))."""


def _turn_blocks(turn: Turn) -> list[Block]:
    blocks: list[Block] = []
    if turn.text:
        blocks.append(("text", turn.text))
    if turn.tool is not None:
        blocks.append(("tool_use", turn.tool))
    return blocks


def _anthropic_blocks_sse(
    blocks: list[Block],
    stop: str,
    *,
    input_tokens: int,
    output_tokens: int,
    model: str,
    message_id: str,
) -> list[bytes]:
    start: dict[str, Any] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": 1,
            "cache_creation_input_tokens": 3,
            "cache_read_input_tokens": 5,
        },
    }
    out = [_sse("message_start", {"type": "message_start", "message": start})]
    for index, (kind, value) in enumerate(blocks):
        if kind == "text":
            block: dict[str, Any] = {"type": "text", "text": ""}
        else:
            block = {"type": "tool_use", "id": value[0], "name": value[1], "input": {}}
        out.append(
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": block},
            )
        )
        if index == 0:
            out.append(_sse("ping", {"type": "ping"}))
        for piece in value if kind == "text" else value[2]:
            delta = (
                {"type": "text_delta", "text": piece}
                if kind == "text"
                else {"type": "input_json_delta", "partial_json": piece}
            )
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
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            },
        )
    )
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return out


_OPENAI_FINISH = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length"}


def _openai_blocks_sse(
    blocks: list[Block],
    stop: str,
    *,
    input_tokens: int,
    output_tokens: int,
    model: str,
    message_id: str,
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
    call = 0
    for kind, value in blocks:
        if kind == "text":
            out.extend(chunk({"content": piece}) for piece in value)
            continue
        tool_id, name, pieces = value
        first = {
            "index": call,
            "id": tool_id,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        out.append(chunk({"tool_calls": [first]}))
        for piece in pieces:
            out.append(chunk({"tool_calls": [{"index": call, "function": {"arguments": piece}}]}))
        call += 1
    out.append(chunk({}, _OPENAI_FINISH[stop]))
    usage = {
        "prompt_tokens": input_tokens + 5,
        "completion_tokens": output_tokens,
        "prompt_tokens_details": {"cached_tokens": 5},
    }
    out.append(
        _sse(
            None,
            {
                "id": message_id,
                "object": "chat.completion.chunk",
                "model": model,
                "choices": [],
                "usage": usage,
            },
        )
    )
    out.append(_sse(None, "[DONE]"))
    return out


def blocks_sse(
    wire: str,
    blocks: list[Block],
    stop: str,
    *,
    input_tokens: int = 11,
    output_tokens: int = 7,
    model: str | None = None,
    message_id: str | None = None,
) -> list[bytes]:
    """The streamed body of one turn of ``blocks`` in ``wire`` (``anthropic`` | ``openai``)."""
    if wire == "anthropic":
        return _anthropic_blocks_sse(
            blocks,
            stop,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            model=model or "claude-test",
            message_id=message_id or "msg_1",
        )
    return _openai_blocks_sse(
        blocks,
        stop,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        model=model or "gpt-test",
        message_id=message_id or "chatcmpl-1",
    )


def turn_sse(wire: str, turn: Turn, *, model: str, message_id: str) -> list[bytes]:
    """The streamed body of ``turn`` in ``wire`` (``anthropic`` | ``openai``)."""
    return blocks_sse(
        wire,
        _turn_blocks(turn),
        turn.stop,
        input_tokens=turn.input_tokens,
        output_tokens=turn.output_tokens,
        model=model,
        message_id=message_id,
    )


def anthropic_sse(
    turn: Turn, *, model: str = "claude-test", message_id: str = "msg_1"
) -> list[bytes]:
    return turn_sse("anthropic", turn, model=model, message_id=message_id)


def openai_sse(
    turn: Turn, *, model: str = "gpt-test", message_id: str = "chatcmpl-1"
) -> list[bytes]:
    return turn_sse("openai", turn, model=model, message_id=message_id)


def json_reply(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> Reply:
    return Reply(
        status=status,
        headers={"content-type": "application/json", **(headers or {})},
        chunks=[json.dumps(body).encode()],
    )


# --- a scripted model ------------------------------------------------------------------------

_TASK_LINE = re.compile(r"^(?:# )?Task (\S+?)(?::| \()", re.MULTILINE)


def _first_user_text(wire: str, body: dict[str, Any]) -> str:
    for message in body.get("messages") or []:
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        return "\n".join(
            str(part.get("text", "")) for part in content or [] if part.get("type") == "text"
        )
    return ""


def _offered(wire: str, body: dict[str, Any]) -> list[str]:
    tools = body.get("tools") or []
    if wire == "anthropic":
        return [str(t.get("name")) for t in tools]
    return [str((t.get("function") or {}).get("name")) for t in tools]


class CassetteModel:
    """Plays ``<directory>/<task id>.jsonl`` (air's cassette lines) as a model over the wire.

    The task is the one named by the ``# Task <id>:`` line of the first user message; the turn
    is the number of assistant turns already in the conversation, so parallel tasks and
    retried turns each get the right answer. A tool the turn calls is sent by the name the
    request offered for it (the offered name equal to it, or equal to it with every character
    outside ``[a-zA-Z0-9_-]`` replaced by ``_``): a script never calls a tool it was not offered.
    """

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.served: list[tuple[str, int]] = []
        self._lock = threading.Lock()

    def __call__(self, wire: str, body: dict[str, Any]) -> Reply:
        from air.llm.cassette import load_cassette

        match = _TASK_LINE.search(_first_user_text(wire, body))
        if match is None:
            raise ValueError("no '# Task <id>:' line in the first user message")
        task_id = match.group(1)
        turns = load_cassette(str(self.directory / f"{task_id}.jsonl"))
        number = sum(1 for m in body.get("messages") or [] if m.get("role") == "assistant")
        if number >= len(turns):
            raise ValueError(f"task {task_id}: no turn {number + 1} in its cassette")
        turn = turns[number]
        offered = _offered(wire, body)
        blocks: list[Block] = []
        for block in turn.content:
            if block.type == "text":
                if block.text:
                    blocks.append(("text", [block.text]))
            elif block.type == "tool_use":
                plain = re.sub(r"[^a-zA-Z0-9_-]", "_", block.name)
                name = next((n for n in offered if n in (block.name, plain)), None)
                if name is None:
                    raise ValueError(f"task {task_id}: tool {block.name!r} was not offered")
                blocks.append(("tool_use", (block.id, name, [json.dumps(block.input)])))
        with self._lock:
            self.served.append((task_id, number))
        return Reply(
            chunks=blocks_sse(
                wire,
                blocks,
                turn.stop_reason.value,
                input_tokens=turn.usage.input_tokens,
                output_tokens=turn.usage.output_tokens,
                model=str(body.get("model")),
                message_id=f"msg_{task_id}_{number + 1}".replace("-", "_"),
            )
        )
