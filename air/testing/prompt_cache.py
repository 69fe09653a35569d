"""The prompt caches of the strict local servers: the usage each API reports for a request.

Owns ``PromptCache``. Anthropic (explicit caching): a prefix is written at each
``cache_control`` breakpoint of a prompt at least as long as the model's minimum (1024 tokens;
2048 for the 3.x Haikus; 4096 for Opus 4.5 and Haiku 4.5) and read back by a later request
whose prompt (tools, then system, then messages; ``cache_control`` itself not part of it)
starts with it, looked up at most 20 blocks before one of that request's breakpoints; usage
``input_tokens`` (after the last breakpoint), ``cache_creation_input_tokens`` and
``cache_read_input_tokens``. OpenAI (automatic): prompts of 1024 tokens or more are cached
prefix by prefix and a later prompt starting with one reads it in 128-token steps from 1024
(``usage.prompt_tokens_details.cached_tokens``). Tokens are counted as characters / 4 of each
block's JSON, each message's once per conversation (the messages a prompt shares with the last
one keep their counts: IMPL-API-7). ``with_usage`` writes that usage into a streamed reply.
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any, NamedTuple

from air.testing.anthropic_rules import common_prefix
from air.testing.wire_replies import Reply

__all__ = ["PromptCache"]

_LOOKBACK = 20
_OPENAI_MIN = 1024
_OPENAI_STEP = 128


def _min_tokens(model: str) -> int:
    if model.startswith(("claude-opus-4-5", "claude-haiku-4-5")):
        return 4096
    if model.startswith(("claude-3-5-haiku", "claude-3-haiku")):
        return 2048
    return 1024


def _tokens(block: Any) -> int:
    return max(1, len(json.dumps(block, sort_keys=True)) // 4)


def _plain(block: Any) -> Any:
    """``block`` without its ``cache_control`` (a marker, not prompt content)."""
    if isinstance(block, dict):
        return {k: _plain(v) for k, v in block.items() if k != "cache_control"}
    if isinstance(block, list):
        return [_plain(v) for v in block]
    return block


def _seed(model: str) -> str:
    """The key of the empty prefix of ``model``'s prompts (prefix keys chain from it)."""
    return hashlib.sha256(json.dumps(model).encode()).hexdigest()


def _head_blocks(body: dict[str, Any]) -> list[Any]:
    """The prompt's blocks before its messages: the tools, then the system prompt."""
    system = body.get("system")
    blocks: list[Any] = list(body.get("tools") or [])
    if isinstance(system, str):
        blocks.append({"type": "text", "text": system})
    elif isinstance(system, list):
        blocks.extend(system)
    return blocks


def _message_blocks(message: Any) -> list[Any]:
    """The prompt's blocks of one message, each with its role."""
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content, "role": message.get("role")}]
    return [{**b, "role": message.get("role")} for b in content or []]


class _Seen(NamedTuple):
    """A prompt's messages as the cache counted them."""

    messages: list[Any]
    starts: list[int]
    """Where each message's blocks begin in ``blocks``, and (last) how many there are."""
    blocks: list[Any]
    """Each message's blocks, in order, each with its role."""
    sizes: list[int]
    """The token count of each block."""
    marks: list[int]
    """The blocks carrying ``cache_control``."""


class PromptCache:
    """One server's caches (per model), shared by its handler threads."""

    def __init__(self) -> None:
        self._known: set[str] = set()
        """The keys of the prefixes cached so far."""
        self._lock = threading.Lock()
        self._seen = _Seen([], [0], [], [], [])
        """The messages of the last Anthropic prompt, with their blocks and token counts: a
        later prompt counts only the messages after those it shares with it (IMPL-API-7)."""
        self._chained: tuple[str, list[str]] = ("", [])
        """The key of the last Anthropic prompt's head, and the keys of its message blocks."""

    def _messages(self, messages: list[Any]) -> tuple[_Seen, int]:
        """The blocks of ``messages``, their token counts (counted once per conversation) and
        those carrying ``cache_control``; ``starts[same]``: how many of the blocks open the last
        prompt's messages too."""
        with self._lock:
            seen = self._seen
        same = common_prefix(seen.messages, messages)
        shared = seen.starts[same]
        starts, blocks = seen.starts[: same + 1], seen.blocks[:shared]
        for message in messages[same:]:
            blocks += _message_blocks(message)
            starts.append(len(blocks))
        new = blocks[shared:]
        marks = [i for i in seen.marks if i < shared]
        marks += [shared + i for i, b in enumerate(new) if "cache_control" in b]
        sizes = seen.sizes[:shared] + [_tokens(_plain(b)) for b in new]
        now = _Seen(list(messages), starts, blocks, sizes, marks)
        with self._lock:
            self._seen = now
        return now, shared

    @staticmethod
    def _keys(model: str, items: list[Any], start: str = "") -> list[str]:
        """The key of each prefix of ``items`` (``keys[q]`` names ``items[: q + 1]``), chained
        from ``start`` (the key of what comes before them; "": nothing but the model): equal
        prefixes, equal keys, one pass over the items."""
        keys: list[str] = []
        key = start or _seed(model)
        for item in items:
            text = json.dumps(_plain(item), sort_keys=True)
            key = hashlib.sha256(f"{key}\n{text}".encode()).hexdigest()
            keys.append(key)
        return keys

    def usage(self, wire: str, body: dict[str, Any]) -> dict[str, int]:
        """The prompt's token counts as the API reports them, the cache updated."""
        if wire == "anthropic":
            return self._anthropic(body)
        return self._openai(body)

    def _anthropic(self, body: dict[str, Any]) -> dict[str, int]:
        model = str(body.get("model"))
        blocks = _head_blocks(body)
        sizes = [_tokens(_plain(b)) for b in blocks]
        keys = self._keys(model, blocks)
        now, shared = self._messages(list(body.get("messages") or []))
        head = keys[-1] if keys else _seed(model)
        with self._lock:
            seen_head, seen_keys = self._chained
        if seen_head != head:
            shared = 0
        kept = seen_keys[:shared]
        kept += self._keys(model, now.blocks[shared:], kept[-1] if kept else head)
        with self._lock:
            self._chained = (head, kept)
        marks = [i for i, b in enumerate(blocks) if isinstance(b, dict) and "cache_control" in b]
        marks += [len(blocks) + i for i in now.marks]
        keys += kept
        blocks += now.blocks
        sizes += now.sizes
        total = sum(sizes)
        read = written = 0
        with self._lock:
            if marks:
                candidates = sorted(
                    {q for b in marks for q in range(max(0, b - _LOOKBACK + 1), b + 1)},
                    reverse=True,
                )
                for q in candidates:
                    if keys[q] in self._known:
                        read = sum(sizes[: q + 1])
                        break
                last = marks[-1]
                upto = sum(sizes[: last + 1])
                if upto >= _min_tokens(model):
                    written = upto - read
                    for b in marks:
                        if sum(sizes[: b + 1]) >= _min_tokens(model):
                            self._known.add(keys[b])
        return {
            "input_tokens": total - read - written,
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read,
        }

    def _openai(self, body: dict[str, Any]) -> dict[str, int]:
        model = str(body.get("model"))
        head = [body.get("tools") or []]
        messages = list(body.get("messages") or [])
        sizes = [_tokens(m) for m in messages]
        fixed = _tokens(head[0]) if head[0] else 0
        total = fixed + sum(sizes)
        cached = 0
        keys = self._keys(model, head + messages)
        with self._lock:
            for k in range(len(messages), 0, -1):
                if keys[k] in self._known:
                    hit = fixed + sum(sizes[:k])
                    cached = _OPENAI_MIN + (hit - _OPENAI_MIN) // _OPENAI_STEP * _OPENAI_STEP
                    cached = cached if hit >= _OPENAI_MIN else 0
                    break
            if total >= _OPENAI_MIN:
                for k in range(1, len(messages) + 1):
                    if fixed + sum(sizes[:k]) >= _OPENAI_MIN:
                        self._known.add(keys[k])
        return {"prompt_tokens": total, "cached_tokens": cached}

    @staticmethod
    def with_usage(wire: str, reply: Reply, usage: dict[str, int]) -> Reply:
        """``reply`` (a streamed turn) reporting ``usage`` for its prompt, as the API does:
        Anthropic in ``message_start``, OpenAI in the final usage chunk."""
        chunks: list[bytes] = []
        for chunk in reply.chunks:
            head, sep, data = chunk.partition(b"data: ")
            try:
                event = json.loads(data) if sep else None
            except ValueError:
                event = None
            if wire == "anthropic" and isinstance(event, dict) and "message" in event:
                if event.get("type") == "message_start":
                    event["message"]["usage"].update(usage)
                    chunk = head + sep + json.dumps(event).encode() + b"\n\n"
            elif wire == "openai" and isinstance(event, dict) and event.get("usage"):
                event["usage"]["prompt_tokens"] = usage["prompt_tokens"]
                event["usage"]["prompt_tokens_details"] = {"cached_tokens": usage["cached_tokens"]}
                chunk = head + sep + json.dumps(event).encode() + b"\n\n"
            chunks.append(chunk)
        reply.chunks = chunks
        return reply
