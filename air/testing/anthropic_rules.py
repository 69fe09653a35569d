"""The Anthropic Messages API's request rules, as the real API documents and enforces them.

Owns: ``anthropic_problem`` — the auth and ``anthropic-version`` headers, the known fields,
``max_tokens`` present and within the model's ceiling, tool names, object input schemas,
alternating roles, no empty text, every ``tool_result`` answering a ``tool_use`` of the turn
just before, ``cache_control`` well formed on at most 4 blocks, thinking blocks only in
assistant turns and the thinking models' own rules (``air.testing.anthropic_thinking``) — and
``MessageMemo``, with
which a server checks only the new messages of a growing conversation (IMPL-API-7). A rule
more lenient than the real API is a defect (IMPL-API-1).
"""

from __future__ import annotations

import re
import threading
from typing import Any, NamedTuple

from air.testing.anthropic_thinking import thinking_problem
from air.testing.problems import TOOL_NAME, TOOL_USE_ID, Problem, ceiling, invalid

__all__ = ["ANTHROPIC_VERSION", "MessageMemo", "Resume", "anthropic_problem", "common_prefix"]

ANTHROPIC_VERSION = "2023-06-01"
_VERSION = re.compile(r"^20\d\d-\d\d-\d\d$")


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
    "output_config",
    "service_tier",
}


_EFFORTS = ("low", "medium", "high", "xhigh", "max")
_TAKES_EFFORT = re.compile(
    r"^claude-(?:opus-4-[5-9]|sonnet-4-[6-9]|(?:opus|sonnet|haiku|fable|mythos)-5)(?:$|[-@])"
)
"""The models that take ``output_config.effort`` (Opus 4.5 and later, Sonnet 4.6 and later,
every Claude 5.x; not Haiku 4.5 or Sonnet 4.5)."""


_TOOL_USE_FIELDS = frozenset({"type", "id", "name", "input", "cache_control"})
"""What a ``tool_use`` block of a request may hold (the Messages API refuses any other field)."""


def _effort_problem(body: dict[str, Any], model: str) -> Problem | None:
    config = body.get("output_config")
    if config is None:
        return None
    if not isinstance(config, dict):
        return invalid("output_config: Input should be a valid dictionary")
    if "effort" not in config:
        return None
    if not _TAKES_EFFORT.match(model):
        return invalid(f"output_config.effort: effort is not supported for {model}")
    if config["effort"] not in _EFFORTS:
        return invalid(
            "output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'"
        )
    return None


def _text_problem(where: str, block: dict[str, Any]) -> Problem | None:
    text = block.get("text")
    if not isinstance(text, str):
        return invalid(f"{where}.text: Input should be a valid string")
    if not text:
        return invalid(f"{where}.text: text content blocks must be non-empty")
    if not text.strip():
        return invalid(f"{where}.text: text content blocks must contain non-whitespace text")
    return None


def _anthropic_tools(body: dict[str, Any]) -> tuple[set[str], Problem | None]:
    tools = body.get("tools")
    if tools is None:
        return set(), None
    if not isinstance(tools, list):
        return set(), invalid("tools: Input should be a valid list")
    names: set[str] = set()
    for k, tool in enumerate(tools):
        if not isinstance(tool, dict):
            return names, invalid(f"tools.{k}: Input should be a valid dictionary")
        name = tool.get("name")
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            return names, invalid(
                f"tools.{k}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
            )
        if name in names:
            return names, invalid("tools: Tool names must be unique.")
        names.add(name)
        schema = tool.get("input_schema")
        if not isinstance(schema, dict):
            return names, invalid(f"tools.{k}.custom.input_schema: Field required")
        if schema.get("type") != "object":
            return names, invalid(f"tools.{k}.custom.input_schema.type: Input should be 'object'")
        extra = set(tool) - {"name", "description", "input_schema", "cache_control", "type"}
        if extra:
            return names, invalid(
                f"tools.{k}.custom.{sorted(extra)[0]}: Extra inputs are not permitted"
            )
    return names, None


def common_prefix(a: list[Any], b: list[Any]) -> int:
    """How many leading items ``a`` and ``b`` share (equal decoded JSON), found with a few
    slice comparisons (each one C loop) instead of one Python step per item."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    low, high = 0, n  # a[:low] == b[:low], a[:high] != b[:high]
    while high - low > 1:
        mid = (low + high) // 2
        if a[low:mid] == b[low:mid]:
            low = mid
        else:
            high = mid
    return low


class Resume(NamedTuple):
    """Where checking a request's messages starts (``MessageMemo.resume``)."""

    start: int
    """The first message to check; those before it were checked already."""
    seen: set[str]
    """The ``tool_use`` ids of the messages before ``start``."""
    uses: list[str]
    """The ``tool_use`` ids of the message just before ``start``."""
    marks: int
    """The blocks carrying ``cache_control`` in the messages before ``start``."""


def _fresh() -> Resume:
    return Resume(0, set(), [], 0)


class MessageMemo:
    """What the message rules concluded about the conversation of the last valid request, so
    that the next request of the same conversation checks only its new messages (a strict
    server answering a long task: IMPL-API-7).

    Holds the messages checked as not the last one (the last message has rules of its own),
    the ``tool_use`` ids they hold and those of the last of them, and how many of their blocks
    carry ``cache_control`` (all well formed). A later request with the same ``has_tools``
    resumes after them when it starts with all of them (decoded JSON, ``==``); otherwise it is
    checked whole. Thread-safe.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state: tuple[bool, list[Any], frozenset[str], tuple[str, ...], int] = (
            False,
            [],
            frozenset(),
            (),
            0,
        )

    def resume(self, messages: Any, has_tools: bool) -> Resume:
        """Where checking ``messages`` may start."""
        with self._lock:
            tools, checked, seen, uses, marks = self._state
        if tools != has_tools or not checked or not isinstance(messages, list):
            return _fresh()
        if len(messages) <= len(checked) or common_prefix(checked, messages) < len(checked):
            return _fresh()
        return Resume(len(checked), set(seen), list(uses), marks)

    def keep(self, messages: list[Any], has_tools: bool, state: Resume) -> None:
        """Remember ``messages`` (checked, none as the last) and ``state`` after them."""
        with self._lock:
            self._state = (
                has_tools,
                list(messages),
                frozenset(state.seen),
                tuple(state.uses),
                state.marks,
            )


def _anthropic_messages(
    messages: Any, has_tools: bool, state: Resume, memo: MessageMemo | None = None
) -> Problem | None:
    """The first problem of ``messages`` from ``state.start`` on (``state.marks``: the
    ``cache_control`` blocks of every message but the last, for the memo)."""
    if not isinstance(messages, list):
        return invalid("messages: Field required")
    if not messages:
        return invalid("messages: at least one message is required")
    for i in range(state.start, len(messages)):
        if i == len(messages) - 1 and memo is not None:
            memo.keep(messages[:i], has_tools, state)
        problem = _message_problem(messages, i, has_tools, state.uses, state.seen)
        if problem is not None:
            return problem
    return None


def _message_problem(
    messages: list[Any], i: int, has_tools: bool, previous_uses: list[str], seen_ids: set[str]
) -> Problem | None:
    """The problem of ``messages[i]``, given the ``tool_use`` ids of the message before it
    (``previous_uses``, replaced by its own) and of all before it (``seen_ids``, extended)."""
    message = messages[i]
    if not isinstance(message, dict):
        return invalid(f"messages.{i}: Input should be a valid dictionary")
    role = message.get("role")
    if role not in ("user", "assistant"):
        return invalid(f"messages.{i}.role: Input should be 'user' or 'assistant'")
    if i == 0 and role != "user":
        return invalid('messages: first message must use the "user" role')
    if i > 0 and messages[i - 1].get("role") == role:
        return invalid(
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
        return invalid(f"messages.{i}.content: Input should be a valid list")
    if not blocks and not (last and role == "assistant"):
        return invalid(
            f"messages.{i}: all messages must have non-empty content except for the "
            "optional final assistant message"
        )
    uses: list[str] = []
    answered: list[str] = []
    for j, block in enumerate(blocks):
        where = f"messages.{i}.content.{j}"
        if not isinstance(block, dict):
            return invalid(f"{where}: Input should be a valid dictionary")
        kind = block.get("type")
        if kind == "text":
            problem = _text_problem(where, block)
            if problem is not None:
                return problem
        elif kind == "tool_use":
            if role != "assistant":
                return invalid(f"{where}: tool_use blocks may only appear in assistant turns")
            tool_id = block.get("id")
            if not isinstance(tool_id, str) or not TOOL_USE_ID.match(tool_id):
                return invalid(f"{where}.id: String should match pattern '^[a-zA-Z0-9_-]+$'")
            if tool_id in seen_ids:
                return invalid(f"messages: `tool_use` ids must be unique, found {tool_id}")
            seen_ids.add(tool_id)
            name = block.get("name")
            if not isinstance(name, str) or not TOOL_NAME.match(name):
                return invalid(
                    f"{where}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
                )
            if not isinstance(block.get("input"), dict):
                return invalid(f"{where}.input: Input should be a valid dictionary")
            extra = set(block) - _TOOL_USE_FIELDS
            if extra:
                return invalid(
                    f"{where}.tool_use.{sorted(extra)[0]}: Extra inputs are not permitted"
                )
            uses.append(tool_id)
        elif kind == "tool_result":
            if role != "user":
                return invalid(f"{where}: tool_result blocks may only appear in user turns")
            if any(b.get("type") != "tool_result" for b in blocks[:j] if isinstance(b, dict)):
                return invalid(
                    f"{where}: `tool_result` blocks must come first in the content of a "
                    "user message, before any other block"
                )
            use_id = block.get("tool_use_id")
            if use_id not in previous_uses:
                return invalid(
                    f"{where}: unexpected `tool_use_id` found in `tool_result` blocks: "
                    f"{use_id}. Each `tool_result` block must have a corresponding "
                    "`tool_use` block in the previous message."
                )
            inner = block.get("content", "")
            if isinstance(inner, list):
                for k, part in enumerate(inner):
                    if not isinstance(part, dict) or part.get("type") != "text":
                        return invalid(f"{where}.content.{k}: Input should be a text block")
                    problem = _text_problem(f"{where}.content.{k}", part)
                    if problem is not None:
                        return problem
            elif not isinstance(inner, str):
                return invalid(f"{where}.content: Input should be a valid string or list")
            answered.append(use_id)
        elif kind in ("thinking", "redacted_thinking"):
            if role != "assistant":
                return invalid(f"{where}: {kind} blocks may only appear in assistant turns")
            fields = ("thinking", "signature") if kind == "thinking" else ("data",)
            for name in fields:
                if not isinstance(block.get(name), str):
                    return invalid(f"{where}.{name}: Input should be a valid string")
        else:
            return invalid(f"{where}.type: unknown content block type {kind!r}")
    if (uses or answered) and not has_tools:
        return invalid(
            "Requests which include `tool_use` or `tool_result` blocks must define tools."
        )
    if previous_uses:
        missing = [u for u in previous_uses if u not in answered]
        if missing:
            return invalid(
                f"messages.{i}: `tool_use` ids were found without `tool_result` blocks "
                f"immediately after: {', '.join(missing)}. Each `tool_use` block must have "
                "a corresponding `tool_result` block in the next message."
            )
    previous_uses[:] = uses
    return None


MAX_CACHE_BREAKPOINTS = 4


def _cache_blocks(body: dict[str, Any], start: int = 0) -> list[tuple[str, Any, int]]:
    """Every block that may carry ``cache_control``, with where it is and the index of its
    message (-1: none), leaving out the messages before ``start``."""
    found: list[tuple[str, Any, int]] = []
    system = body.get("system")
    if isinstance(system, list):
        found += [(f"system.{j}", b, -1) for j, b in enumerate(system)]
    for k, tool in enumerate(body.get("tools") or []):
        found.append((f"tools.{k}.custom", tool, -1))
    messages = body.get("messages") or []
    numbered = (
        enumerate(messages[start:], start) if isinstance(messages, list) else enumerate(messages)
    )
    for i, message in numbered:
        content = message.get("content") if isinstance(message, dict) else None
        for j, block in enumerate(content if isinstance(content, list) else []):
            found.append((f"messages.{i}.content.{j}", block, i))
            inner = block.get("content") if isinstance(block, dict) else None
            for k, part in enumerate(inner if isinstance(inner, list) else []):
                found.append((f"messages.{i}.content.{j}.content.{k}", part, i))
    return found


def _control_problem(where: str, control: Any) -> Problem | None:
    """``cache_control`` must be ``{"type": "ephemeral"}``, ``ttl`` 5m or 1h."""
    if not isinstance(control, dict) or control.get("type") != "ephemeral":
        return invalid(f"{where}.cache_control.ephemeral.type: Input should be 'ephemeral'")
    extra = set(control) - {"type", "ttl"}
    if extra:
        return invalid(
            f"{where}.cache_control.ephemeral.{sorted(extra)[0]}: Extra inputs are not permitted"
        )
    if "ttl" in control and control["ttl"] not in ("5m", "1h"):
        return invalid(f"{where}.cache_control.ephemeral.ttl: Input should be '5m' or '1h'")
    return None


def _cache_problem(body: dict[str, Any], state: Resume) -> tuple[Problem | None, Resume]:
    """``cache_control`` well formed (``_control_problem``), on at most 4 blocks. The messages
    before ``state.start`` hold ``state.marks`` of them, well formed; the state returned
    counts those of every message but the last."""
    messages = body.get("messages")
    last = len(messages) - 1 if isinstance(messages, list) else -1
    marked = kept = state.marks
    for where, block, i in _cache_blocks(body, state.start):
        if not isinstance(block, dict) or "cache_control" not in block:
            continue
        problem = _control_problem(where, block["cache_control"])
        if problem is not None:
            return problem, state
        marked += 1
        kept += 0 <= i < last
    if marked > MAX_CACHE_BREAKPOINTS:
        return invalid(
            f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. "
            f"Found {marked}."
        ), state
    return None, state._replace(marks=kept)


def anthropic_problem(
    headers: dict[str, str],
    body: Any,
    *,
    api_key: str | None = None,
    ceilings: dict[str, int] | None = None,
    memo: MessageMemo | None = None,
) -> Problem | None:
    """Why the Messages API would refuse this request, or ``None`` when it is valid.

    Args:
        headers: the request headers, lower-cased names.
        api_key: the one key accepted (``None``: any non-empty key).
        ceilings: the known models and their max output tokens (``None``: any model,
            ``DEFAULT_CEILING``).
        memo: the server's ``MessageMemo``: messages already checked are not checked again.
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
        return invalid("anthropic-version: header is required")
    if not _VERSION.match(version):
        return invalid(f"anthropic-version: unknown version {version!r}")
    if not isinstance(body, dict):
        return invalid("The request body is not valid JSON.")
    extra = set(body) - _ANTHROPIC_FIELDS
    if extra:
        return invalid(f"{sorted(extra)[0]}: Extra inputs are not permitted")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return invalid("model: Field required")
    if ceilings is not None and model not in ceilings:
        return Problem(404, "not_found_error", f"model: {model}")
    most = ceiling(model, ceilings)
    max_tokens = body.get("max_tokens")
    if max_tokens is None:
        return invalid("max_tokens: Field required")
    if type(max_tokens) is not int or max_tokens < 1:
        return invalid("max_tokens: Input should be a valid integer greater than or equal to 1")
    if max_tokens > most:
        return invalid(
            f"max_tokens: {max_tokens} > {most}, which is the maximum allowed number of "
            f"output tokens for {model}"
        )
    if "stream" in body and not isinstance(body["stream"], bool):
        return invalid("stream: Input should be a valid boolean")
    system = body.get("system")
    if isinstance(system, list):
        for j, block in enumerate(system):
            if not isinstance(block, dict) or block.get("type") != "text":
                return invalid(f"system.{j}: Input should be a text block")
            problem = _text_problem(f"system.{j}", block)
            if problem is not None:
                return problem
    elif system is not None and not isinstance(system, str):
        return invalid("system: Input should be a valid string or list of text blocks")
    names, problem = _anthropic_tools(body)
    if problem is not None:
        return problem
    messages = body.get("messages")
    state = memo.resume(messages, bool(names)) if memo is not None else _fresh()
    problem, state = _cache_problem(body, state)
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
            return invalid("tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'")
        if choice.get("type") == "tool" and choice.get("name") not in names:
            return invalid(f"tool_choice.name: tool {choice.get('name')!r} is not defined")
    temperature = body.get("temperature")
    if temperature is not None and not (
        isinstance(temperature, int | float) and 0 <= temperature <= 1
    ):
        return invalid("temperature: Input should be less than or equal to 1")
    stops = body.get("stop_sequences")
    if stops is not None and (
        not isinstance(stops, list) or any(not isinstance(s, str) or not s.strip() for s in stops)
    ):
        return invalid("stop_sequences: each stop sequence must contain non-whitespace")
    problem = _effort_problem(body, str(model))
    if problem is not None:
        return problem
    return _anthropic_messages(messages, bool(names), state, memo) or thinking_problem(
        headers, body
    )
