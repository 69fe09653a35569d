"""What a strict local model server sends back: replies and the wire builders.

Owns: ``Reply`` (status, headers, body chunks sent with chunked transfer encoding, an optional
drop or stall mid-stream), ``Turn`` (a model turn independent of wire format) and the builders
of both wires' bodies: ``anthropic_sse``, ``openai_sse``, ``blocks_sse``, ``turn_sse`` (server-sent
event streams; ``blocks_sse`` also the Responses API's, built by
``air.testing.responses_replies``) and ``json_reply``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


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
"""("text", [pieces]), ("tool_use", (id, name, [partial JSON pieces][, the chat wire's
extra_content])), ("thinking", ([text
pieces], signature)), ("redacted_thinking", data), ("reasoning_content", [pieces]) or
("reasoning_details", [each delta's items]); the OpenAI chat wire leaves thinking out, the others
``reasoning_content`` and ``reasoning_details`` (a chat server's)."""


def _anthropic_block(kind: str, value: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The ``content_block_start`` block of one block and its deltas."""
    if kind == "text":
        return {"type": "text", "text": ""}, [{"type": "text_delta", "text": p} for p in value]
    if kind == "thinking":
        pieces, signature = value
        deltas = [{"type": "thinking_delta", "thinking": p} for p in pieces]
        return {"type": "thinking", "thinking": "", "signature": ""}, [
            *deltas,
            {"type": "signature_delta", "signature": signature},
        ]
    if kind == "redacted_thinking":
        return {"type": "redacted_thinking", "data": value}, []
    start = {"type": "tool_use", "id": value[0], "name": value[1], "input": {}}
    return start, [{"type": "input_json_delta", "partial_json": p} for p in value[2]]


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
        block, deltas = _anthropic_block(kind, value)
        out.append(
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": block},
            )
        )
        if index == 0:
            out.append(_sse("ping", {"type": "ping"}))
        for delta in deltas:
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
        if kind == "reasoning_content":  # as DeepSeek streams it: beside a null content
            out.extend(chunk({"content": None, "reasoning_content": p}) for p in value)
            continue
        if kind == "reasoning_details":  # as OpenRouter streams them: each delta's items
            for items in value:  # beside their text as ``reasoning``
                texts = (
                    [i.get("text") for i in items if isinstance(i, dict)]
                    if isinstance(items, list)
                    else []
                )
                said = "".join(t for t in texts if isinstance(t, str))
                out.append(chunk({"content": None, "reasoning": said, "reasoning_details": items}))
            continue
        if kind != "tool_use":
            continue
        tool_id, name, pieces, *extra = value
        first = {
            "index": call,
            "id": tool_id,
            "type": "function",
            "function": {"name": name, "arguments": ""},
            **({"extra_content": extra[0]} if extra else {}),
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
    reasoning: bool = False,
) -> list[bytes]:
    """The streamed body of one turn of ``blocks`` in ``wire`` (``anthropic`` | ``openai`` |
    ``responses``: after a reasoning item when ``reasoning``)."""
    if wire == "responses":
        from air.testing.responses_replies import responses_sse

        return responses_sse(
            blocks,
            stop,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            model=model or "gpt-test",
            message_id=message_id or "resp_1",
            reasoning=reasoning,
        )
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
