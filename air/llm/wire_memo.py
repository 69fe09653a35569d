"""Conversations encoded for the wire once per message, not once per turn (issue 28).

Owns ``EncodedTurns``: for each recent conversation (at most ``limit``, least recently used
dropped first), its messages cleaned (``air.llm.convert.clean_messages``' rules: blank text left
out, an emptied turn left out, same-role neighbours joined), converted by the adapter's
``encode`` and JSON-encoded, one piece per wire message. A turn of a conversation met before
encodes only the messages after the longest prefix it shares with the last turn (the same
objects, or equal ones: the parent keeps its messages as the same objects,
``air.supervision.conversation``), so a
turn's request costs what its new messages cost plus a join of bytes (IMPL-TURN-1). Also
``body_with_messages``: a JSON object with the pieces spliced in as its ``messages`` array.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from air.contracts.provider import CanonicalMessage, ContentBlock, TextBlock

__all__ = ["EncodedTurns", "WireEncode", "body_with_messages", "dumps"]

WireEncode = Callable[[str, list[ContentBlock]], bytes]
"""One cleaned turn (role, blocks) -> the JSON of its wire message(s), comma-separated."""


def dumps(value: Any) -> bytes:
    """JSON as the HTTP clients send it (compact, ASCII)."""
    return json.dumps(value, separators=(",", ":")).encode()


def body_with_messages(
    head: dict[str, Any], pieces: Sequence[bytes], key: str = "messages"
) -> bytes:
    """``head`` (a non-empty JSON object without ``key``) with ``"messages": [pieces]`` (or
    ``key``: the Responses API's ``input``): one join, so the conversation's bytes are copied
    once (the head goes on the first piece, the end on the last)."""
    start = dumps(head)[:-1] + b',"' + key.encode() + b'":['
    if not pieces:
        return start + b"]}"
    if len(pieces) == 1:
        return start + pieces[0] + b"]}"
    return b",".join([start + pieces[0], *pieces[1:-1], pieces[-1] + b"]}"])


class _Conversation:
    """One conversation as encoded so far; ``marks[i]`` is the encoded state after message i
    (how many wire turns, the last one's blocks and piece), so a shorter prefix is restored."""

    __slots__ = ("blocks", "key", "marks", "messages", "pieces", "roles")

    def __init__(self, key: Any) -> None:
        self.key = key
        self.messages: list[CanonicalMessage] = []
        self.roles: list[str] = []
        self.blocks: list[list[ContentBlock]] = []
        self.pieces: list[bytes] = []
        self.marks: list[tuple[int, list[ContentBlock] | None, bytes | None]] = []

    def cut(self, kept: int) -> None:
        """Forget every message from index ``kept`` on."""
        if kept == len(self.messages):
            return
        if kept == 0:
            n, blocks, piece = 0, None, None
        else:
            n, blocks, piece = self.marks[kept - 1]
        del self.messages[kept:], self.marks[kept:]
        del self.roles[n:], self.blocks[n:], self.pieces[n:]
        if n and blocks is not None and piece is not None:
            self.blocks[n - 1], self.pieces[n - 1] = blocks, piece

    def add(self, message: CanonicalMessage, encode: WireEncode) -> None:
        content = [b for b in message.content if not (type(b) is TextBlock and not b.text.strip())]
        if content:
            if self.roles and self.roles[-1] == message.role:
                joined = [*self.blocks[-1], *content]
                self.blocks[-1], self.pieces[-1] = joined, encode(message.role, joined)
            else:
                self.roles.append(message.role)
                self.blocks.append(content)
                self.pieces.append(encode(message.role, content))
        self.messages.append(message)
        last = len(self.pieces)
        self.marks.append((last, self.blocks[-1], self.pieces[-1]) if last else (0, None, None))


class EncodedTurns:
    """The encoded messages of recent conversations, for one adapter (one wire format).

    Args:
        limit: conversations kept; a conversation past it is encoded whole at its next turn.
    """

    def __init__(self, limit: int = 32) -> None:
        self.limit = limit
        self._recent: OrderedDict[int, _Conversation] = OrderedDict()

    def __len__(self) -> int:
        """How many conversations are kept."""
        return len(self._recent)

    def pieces(
        self, messages: Sequence[CanonicalMessage], encode: WireEncode, context: Any
    ) -> list[bytes]:
        """The wire messages of ``messages``, one JSON piece each (cleaned, then encoded).

        Args:
            encode: converts one cleaned turn; it must depend only on the turn and ``context``.
            context: what else ``encode`` depends on (e.g. the request's tool names); a
                conversation met with another context is encoded again.
        """
        if not messages:
            return []
        first = id(messages[0])
        conv = self._recent.get(first)
        if conv is None or conv.messages[0] is not messages[0] or conv.key != context:
            conv = _Conversation(context)
            self._recent[first] = conv
            while len(self._recent) > self.limit:
                self._recent.popitem(last=False)
        else:
            self._recent.move_to_end(first)
        kept = len(conv.messages)
        if kept > len(messages) or conv.messages != messages[:kept]:  # one C loop when grown
            kept = 0
            for old, new in zip(conv.messages, messages, strict=False):
                if old is not new:
                    break
                kept += 1
        conv.cut(kept)
        for message in messages[kept:]:
            conv.add(message, encode)
        return list(conv.pieces)
