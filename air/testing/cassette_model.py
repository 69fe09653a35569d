"""``CassetteModel``: a scripted model that plays per-task cassettes over any of the three wires
(Anthropic, chat completions, OpenAI's Responses API).

Owns: finding the task a request belongs to (the ``# Task <id>:`` line of its first user
message) and the turn (assistant turns so far), and answering it with that cassette turn as
server-sent events, calling each tool by the name the request offered for it. Over the
Anthropic wire a thinking model (``air.testing.anthropic_thinking.thinks``) starts every reply
with a signed thinking block, puts one more between a turn's text and its tool call (text
between tool calls) and a redacted one in a task's first reply; the server checks each one
when it comes back. Over chat completions DeepSeek's V4 models start every reply with
``reasoning_content``, which a tool-call turn must bring back, Gemini 3+ sign a reply's
first tool call (``extra_content``), which must come back with it, and OpenRouter's Gemini 3+
and Claude start every reply with ``reasoning_details``, which must come back merged.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

from air.testing.anthropic_thinking import redact, sign, thinks
from air.testing.openai_rules import GEMINI_SIGNS, thought_signature
from air.testing.openrouter_rules import OPENROUTER_REASONS, reasoning_stream
from air.testing.responses_rules import reasons
from air.testing.wire_replies import Block, Reply, blocks_sse

_TASK_LINE = re.compile(r"^(?:# )?Task (\S+?)(?::| \()", re.MULTILINE)


def _messages(wire: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's turns: its messages, or (Responses) its input items, each run of the
    model's items (reasoning, function calls, assistant messages) as one assistant turn."""
    if wire != "responses":
        return list(body.get("messages") or [])
    turns: list[dict[str, Any]] = []
    for item in body.get("input") or []:
        kind = item.get("type", "message")
        mine = kind in ("reasoning", "function_call") or item.get("role") == "assistant"
        if mine and turns and turns[-1].get("role") == "assistant":
            continue
        turns.append({"role": "assistant"} if mine else item)
    return turns


def _first_user_text(wire: str, body: dict[str, Any]) -> str:
    for message in _messages(wire, body):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        return "\n".join(
            str(part.get("text", ""))
            for part in content or []
            if part.get("type") in ("text", "input_text")
        )
    return ""


def _offered(wire: str, body: dict[str, Any]) -> list[str]:
    tools = body.get("tools") or []
    if wire in ("anthropic", "responses"):
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
        number = sum(1 for m in _messages(wire, body) if m.get("role") == "assistant")
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
        if wire == "anthropic" and thinks(str(body.get("model"))):
            blocks = with_thinking(body, blocks, f"{task_id} turn {number + 1}", number == 0)
        if wire == "openai" and str(body.get("model")).startswith("deepseek-v4"):
            where = f"{task_id} turn {number + 1}"
            blocks = [("reasoning_content", [THOUGHT.format(where=where)]), *blocks]
        if wire == "openai" and GEMINI_SIGNS.match(str(body.get("model"))):
            blocks = _signed_first_call(blocks)
        if wire == "openai" and OPENROUTER_REASONS.match(str(body.get("model"))):
            first = next((v[0] for k, v in blocks if k == "tool_use"), None)
            thought = THOUGHT.format(where=f"{task_id} turn {number + 1}")
            details = reasoning_stream(str(body.get("model")), thought, first)
            blocks = [("reasoning_details", details), *blocks]
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
                reasoning=wire == "responses" and reasons(body),
            )
        )


def _signed_first_call(blocks: list[Block]) -> list[Block]:
    """``blocks`` with the first tool call carrying its thought signature (Gemini 3+)."""
    out: list[Block] = []
    for kind, value in blocks:
        if kind == "tool_use" and not any(k == "tool_use" for k, _ in out):
            extra = {"google": {"thought_signature": thought_signature(value[0])}}
            value = (*value, extra)
        out.append((kind, value))
    return out


THOUGHT = "(thinking about {where}, never shown)"
"""The text of each thinking block the fake sends (a test looks for it where it must not be)."""


def _wire_block(kind: str, value: Any) -> dict[str, Any]:
    """A reply block as the client sends it back (``sign`` covers the blocks before one)."""
    if kind == "text":
        return {"type": "text", "text": "".join(value)}
    if kind == "thinking":
        return {"type": "thinking", "thinking": "".join(value[0]), "signature": value[1]}
    if kind == "redacted_thinking":
        return {"type": "redacted_thinking", "data": value}
    tool_id, name, pieces = value
    return {"type": "tool_use", "id": tool_id, "name": name, "input": json.loads("".join(pieces))}


def with_thinking(
    body: dict[str, Any], blocks: list[Block], where: str, redacted: bool
) -> list[Block]:
    """``blocks`` as a thinking model sends them: a thinking block first, a redacted one after
    it when ``redacted``, one more before a tool call that follows text; each signed."""
    out: list[Block] = []
    sent: list[dict[str, Any]] = []

    def think(text: str) -> None:
        block: Block = ("thinking", ([text], sign(body, sent, text)))
        out.append(block)
        sent.append(_wire_block(*block))

    think(THOUGHT.format(where=where))
    if redacted:
        out.append(("redacted_thinking", redact(body, sent, f"redacted {where}")))
        sent.append(_wire_block(*out[-1]))
    for kind, value in blocks:
        if kind == "tool_use" and out[-1][0] == "text":
            think(THOUGHT.format(where=f"{where}, between the text and the call"))
        out.append((kind, value))
        sent.append(_wire_block(kind, value))
    return out
