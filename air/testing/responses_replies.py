"""What the strict local server streams back on OpenAI's Responses API (``POST /v1/responses``).

Owns ``responses_sse`` (one turn as the documented event sequence: ``response.created``,
``response.in_progress``, each output item's ``response.output_item.added``, its deltas and
``response.output_item.done``, then ``response.completed``, or ``response.incomplete`` when cut
by ``max_output_tokens``), the fake's reasoning items and their ids, ``seal`` (the fake's
``encrypted_content`` of a reasoning item) and ``with_prompt_usage`` (the prompt usage the
server counted, written into the final event). A reasoning turn's items are named after its
reasoning item: ``rs_<tok>``, then ``msg_<tok>_<k>`` / ``fc_<tok>_<k>`` (``REASONED``), so the
rules (``air.testing.responses_rules``) know which reasoning item a replayed item needs.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
from typing import Any

__all__ = ["REASONED", "responses_sse", "seal", "with_prompt_usage"]

REASONED = re.compile(r"^(?:msg|fc)_([0-9a-f]{12})_\d+$")
"""The id of an output item that followed the reasoning item ``rs_<group 1>``."""


def seal(reasoning_id: str) -> str:
    """The ``encrypted_content`` the fake gives reasoning item ``reasoning_id`` (and checks)."""
    digest = hashlib.sha256(f"air-fake-reasoning:{reasoning_id}".encode()).digest()
    return "gAAAAB" + base64.urlsafe_b64encode(digest).decode()


class _Events:
    def __init__(self) -> None:
        self.chunks: list[bytes] = []

    def add(self, kind: str, **fields: Any) -> None:
        data = {"type": kind, "sequence_number": len(self.chunks), **fields}
        self.chunks.append(f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode())


def _text_item(out: _Events, number: int, item_id: str, pieces: list[str]) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": item_id,
        "type": "message",
        "status": "in_progress",
        "role": "assistant",
        "content": [],
    }
    out.add("response.output_item.added", output_index=number, item=item)
    where = {"item_id": item_id, "output_index": number, "content_index": 0}
    empty = {"type": "output_text", "text": "", "annotations": []}
    out.add("response.content_part.added", **where, part=empty)
    for piece in pieces:
        out.add("response.output_text.delta", **where, delta=piece, logprobs=[])
    text = "".join(pieces)
    out.add("response.output_text.done", **where, text=text, logprobs=[])
    part = {**empty, "text": text}
    out.add("response.content_part.done", **where, part=part)
    done = {**item, "status": "completed", "content": [part]}
    out.add("response.output_item.done", output_index=number, item=done)
    return done


def _call_item(out: _Events, number: int, item_id: str, value: Any) -> dict[str, Any]:
    call_id, name, pieces = value
    item = {
        "id": item_id,
        "type": "function_call",
        "status": "in_progress",
        "call_id": call_id,
        "name": name,
        "arguments": "",
    }
    out.add("response.output_item.added", output_index=number, item=item)
    for piece in pieces:
        out.add(
            "response.function_call_arguments.delta",
            item_id=item_id,
            output_index=number,
            delta=piece,
        )
    arguments = "".join(pieces)
    out.add(
        "response.function_call_arguments.done",
        item_id=item_id,
        output_index=number,
        name=name,
        arguments=arguments,
    )
    done = {**item, "status": "completed", "arguments": arguments}
    out.add("response.output_item.done", output_index=number, item=done)
    return done


def responses_sse(
    blocks: list[tuple[str, Any]],
    stop: str,
    *,
    input_tokens: int,
    output_tokens: int,
    model: str,
    message_id: str,
    reasoning: bool,
) -> list[bytes]:
    """The streamed body of one turn of ``blocks`` (``air.testing.wire_replies.Block``), after
    a reasoning item when ``reasoning`` (a reasoning model at an effort other than none)."""
    out = _Events()
    response: dict[str, Any] = {
        "id": "resp_" + re.sub(r"[^a-zA-Z0-9]", "", message_id),
        "object": "response",
        "created_at": 1_796_000_000,
        "status": "in_progress",
        "model": model,
        "output": [],
        "store": False,
        "usage": None,
    }
    out.add("response.created", response=response)
    out.add("response.in_progress", response=response)
    tok = secrets.token_hex(6)
    output: list[dict[str, Any]] = []
    if reasoning:
        item: dict[str, Any] = {"id": f"rs_{tok}", "type": "reasoning", "summary": []}
        out.add("response.output_item.added", output_index=0, item=item)
        item = {**item, "encrypted_content": seal(item["id"])}
        out.add("response.output_item.done", output_index=0, item=item)
        output.append(item)
    for k, (kind, value) in enumerate(blocks):
        number = len(output)
        prefix = "msg" if kind == "text" else "fc"
        item_id = f"{prefix}_{tok}_{k}" if reasoning else f"{prefix}_{tok}{k}"
        if kind == "text":
            output.append(_text_item(out, number, item_id, value))
        else:
            output.append(_call_item(out, number, item_id, value))
    usage = {
        "input_tokens": input_tokens + 5,
        "input_tokens_details": {"cached_tokens": 5, "cache_write_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": 3 if reasoning else 0},
        "total_tokens": input_tokens + 5 + output_tokens,
    }
    final = {**response, "output": output, "usage": usage, "status": "completed"}
    if stop == "max_tokens":
        final = {
            **final,
            "status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"},
        }
        out.add("response.incomplete", response=final)
    else:
        out.add("response.completed", response=final)
    return out.chunks


def with_prompt_usage(chunks: list[bytes], usage: dict[str, int]) -> list[bytes]:
    """``chunks`` whose final event reports ``usage`` (``prompt_tokens``, ``cached_tokens``:
    what ``air.testing.prompt_cache.PromptCache`` counted) as the prompt's input tokens."""
    out: list[bytes] = []
    for chunk in chunks:
        head, sep, data = chunk.partition(b"data: ")
        event = json.loads(data) if sep else None
        if isinstance(event, dict) and event.get("type") in (
            "response.completed",
            "response.incomplete",
        ):
            counts = event["response"]["usage"]
            counts["input_tokens"] = usage["prompt_tokens"]
            counts["input_tokens_details"]["cached_tokens"] = usage["cached_tokens"]
            counts["total_tokens"] = usage["prompt_tokens"] + counts["output_tokens"]
            chunk = head + sep + json.dumps(event).encode() + b"\n\n"
        out.append(chunk)
    return out
