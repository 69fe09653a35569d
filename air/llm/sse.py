"""A sans-IO Server-Sent-Events decoder: feed bytes, get events or just their data payloads.

Owns the SSE framing shared by the Anthropic and OpenAI-compatible adapters (UTF-8 decoded
incrementally, a leading BOM dropped; lines split on LF/CRLF/CR; ``event:``/``data:`` fields,
one space after the colon stripped only when present; blank-line dispatch; ``:`` comments
ignored) and ``decode_json_batch``. Events are cut at blank lines first, so the common
one-``data:``-line event costs one slice: this is the hot path of every stream. An event's
chunks are kept apart until its blank line arrives (each chunk scanned once: an event of N bytes
costs O(N), where joining them at each chunk cost O(N²/chunk) on the Trio thread), and an event
is at most ``EVENT_MAX`` characters and a stream at most ``STREAM_MAX`` bytes (``ReplyTooLarge``):
a server that never ends an event, or a reply, no longer grows the parent without bound.
"""

from __future__ import annotations

import codecs
import json
import re
from typing import Any

from air.contracts.utf8 import utf8_safe

__all__ = [
    "EVENT_MAX",
    "MODEL_JSON_DEPTH",
    "STREAM_MAX",
    "ReplyTooLarge",
    "SSEDecoder",
    "SSEEvent",
    "decode_json_batch",
    "model_json",
]

_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


MODEL_JSON_DEPTH = 64
"""The deepest nesting of arrays and objects air takes in a model's tool input: one nested 300
deep parsed, then passed pydantic's serialisation limit (254) on its way to the worker:
``ValueError`` ended the whole run with a traceback. Real tool inputs nest a few levels. (Other
values of a reply are read by key and dropped: the stream's events are not walked.)"""


def model_json(text: str | bytes, *, max_depth: int | None = None) -> Any:
    """``json.loads`` of what a model's server sent, each unpaired surrogate (JSON's ``\\ud800``,
    which no UTF-8 can hold) made U+FFFD: as it was, the reply could not be passed on to the
    worker and the whole run ended with a traceback.

    Raises:
        json.JSONDecodeError: not JSON, nested deeper than Python's stack (a model's tool
            arguments ``[[[...]]]`` 5,000 deep raised RecursionError and ended the run) or than
            ``max_depth``.
    """
    raw = text if isinstance(text, str) else text.decode("utf-8", "replace")
    try:
        value = json.loads(text)
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", raw, 0) from None
    if max_depth is not None and raw.count("[") + raw.count("{") > max_depth:
        if _deeper(value, max_depth):
            raise json.JSONDecodeError(f"nested deeper than {max_depth} levels", raw, 0)
    if not _ESCAPED_SURROGATE.search(raw):
        return value
    try:
        return utf8_safe(value)
    except RecursionError:  # utf8_safe descends a level per call: 500 deep was enough
        raise json.JSONDecodeError("nested too deeply", raw, 0) from None


def _deeper(value: Any, limit: int) -> bool:
    """Whether arrays and objects nest in ``value`` more than ``limit`` deep (no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False


EVENT_MAX = 32 * 1024 * 1024
"""Characters one event may have: 8x the largest IPC line (``air.ipc.framing``) a delta of it
could travel in."""


STREAM_MAX = 4 * EVENT_MAX
"""Bytes one streamed reply may have: a model's longest (128k output tokens, one per event of
~200 bytes) is ~25 MiB; a server that streams on without end no longer grows the parent."""


class ReplyTooLarge(ValueError):
    """What a model's server sent is over its bound (one SSE event, a whole reply body)."""


SSEEvent = tuple[str, str]
"""(event name, data); the name is ``message`` when the server gave none."""


class SSEDecoder:
    """Incremental decoder. ``feed`` returns (name, data) pairs; ``feed_data`` only the data."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        """The event begun: its chunks so far (normalized: no CR), none holding a blank line."""
        self._size = 0
        self._total = 0
        """Bytes fed so far (at most ``STREAM_MAX``)."""
        self._cr = False
        """A chunk ended with CR: it may be half of a CRLF the next chunk ends."""
        self._utf8 = codecs.getincrementaldecoder("utf-8-sig")(errors="replace")

    def _blocks(self, chunk: bytes) -> list[str]:
        self._total += len(chunk)
        if self._total > STREAM_MAX:
            raise ReplyTooLarge(f"a streamed reply of over {STREAM_MAX} bytes")
        text = self._utf8.decode(chunk)
        if self._cr:
            text = "\r" + text
            self._cr = False
        if "\r" in text:
            if text.endswith("\r"):
                self._cr = True
                text = text[:-1]
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        parts = self._parts
        if "\n\n" not in text and not (parts and parts[-1][-1:] == "\n" == text[:1]):
            if text:
                self._size += len(text)
                if self._size > EVENT_MAX:
                    raise ReplyTooLarge(f"an event of over {EVENT_MAX} characters")
                parts.append(text)
            return []
        if parts:
            text = "".join(parts) + text
            parts.clear()
        blocks = text.split("\n\n")
        rest = blocks.pop()
        self._size = len(rest)
        if rest:
            if self._size > EVENT_MAX:
                raise ReplyTooLarge(f"an event of over {EVENT_MAX} characters")
            parts.append(rest)
        return blocks

    def feed_data(self, chunk: bytes) -> list[str]:
        out: list[str] = []
        for block in self._blocks(chunk):
            if block.startswith("data: "):
                if "\n" not in block:
                    out.append(block[6:])
                    continue
            elif block.startswith("event: "):
                # the fast path only when the first data line is also the last line
                at = block.find("\ndata")
                if at > 0 and block.startswith("\ndata: ", at) and block.find("\n", at + 7) < 0:
                    out.append(block[at + 7 :])
                    continue
            event = _parse_block(block)
            if event is not None:
                out.append(event[1])
        return out

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        out: list[SSEEvent] = []
        for block in self._blocks(chunk):
            event = _parse_block(block)
            if event is not None:
                out.append(event)
        return out

    def close(self) -> list[SSEEvent]:
        """Flush at end of stream (an unterminated final event is dispatched)."""
        rest = "".join(self._parts) + ("\r" if self._cr else "")
        rest += self._utf8.decode(b"", final=True)
        self._parts, self._size, self._cr = [], 0, False
        block = rest.replace("\r", "\n").strip("\n")
        event = _parse_block(block) if block else None
        return [event] if event is not None else []


def _parse_block(block: str) -> SSEEvent | None:
    name = ""
    data: list[str] = []
    for line in block.split("\n"):
        if not line or line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            data.append(value)
        elif field == "event":
            name = value
    if not data:
        return None
    return (name or "message", "\n".join(data))


def decode_json_batch(datas: list[str]) -> tuple[list[dict[str, Any]], str | None]:
    """``json.loads`` every data payload of one network read, in one call when possible.

    One ``json.loads`` of ``[d1,d2,...]`` costs far less than one per event. JSON forbids
    trailing commas, so malformed payloads cannot merge into valid ones; a count mismatch or a
    decode error falls back to decoding one by one.

    Returns:
        The objects decoded before the first bad payload, and a description of that payload's
        problem (``None`` when every payload is a JSON object).
    """
    if not datas:
        return [], None
    try:
        values = model_json("[" + ",".join(datas) + "]")
    except json.JSONDecodeError:
        values = None
    if isinstance(values, list) and len(values) == len(datas):
        if all(type(v) is dict for v in values):
            return values, None
    good: list[dict[str, Any]] = []
    for data in datas:
        try:
            value = model_json(data)
        except json.JSONDecodeError as exc:
            return good, f"not JSON ({exc.msg}): {data[:80]!r}"
        if not isinstance(value, dict):
            return good, f"not a JSON object: {data[:80]!r}"
        good.append(value)
    return good, None
