"""The strict server's Responses API rules (air/testing/responses_rules.py): each refusal the
API documents, seen on a valid request changed in one place, and the event sequence the fake
answers with. A rule more lenient than the real API is a defect (IMPL-API-1)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from air.testing.responses_replies import responses_sse, seal
from air.testing.responses_rules import responses_problem
from tests.llm.conftest import FAKE_KEY

HEADERS = {"authorization": f"Bearer {FAKE_KEY}"}
RS = "rs_0123456789ab"
CEILINGS = {"gpt-6.1-sol": 128_000, "gpt-4": 128_000}
"""What the server knows (gpt-4: a model that does not reason, with room for the body's
max_output_tokens)."""


def _valid() -> dict[str, Any]:
    """A second turn as air sends it: the first turn's reasoning, then its function call (with
    the call's item id), then the call's output."""
    return {
        "model": "gpt-6.1-sol",
        "stream": True,
        "store": False,
        "max_output_tokens": 128_000,
        "include": ["reasoning.encrypted_content"],
        "instructions": "You are terse.",
        "tools": [
            {
                "type": "function",
                "name": "fs_read",
                "description": "Read a file",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
                "strict": False,
            }
        ],
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"type": "reasoning", "id": RS, "summary": [], "encrypted_content": seal(RS)},
            {
                "type": "message",
                "role": "assistant",
                "id": "msg_0123456789ab_0",
                "status": "completed",
                "content": [{"type": "output_text", "text": "Reading.", "annotations": []}],
            },
            {
                "type": "function_call",
                "id": "fc_0123456789ab_1",
                "call_id": "call_1",
                "name": "fs_read",
                "arguments": '{"path": "a"}',
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "text of a"},
        ],
    }


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """A change that sets ``path`` (dots; list indexes as numbers) to ``value`` (``...``:
    delete it)."""

    def change(body: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = body
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target[key]
        if value is ...:
            del target[int(last) if isinstance(target, list) else last]
        elif isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value

    return change


CHAT_TOOL = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
CASES: list[tuple[str, Callable[[dict[str, Any]], None], int, str]] = [
    ("field", _set("messages", []), 400, "Unknown parameter: 'messages'"),
    ("no-model", _set("model", ...), 400, "'model'"),
    ("unknown-model", _set("model", "gpt-nope"), 404, "does not exist"),
    ("min-out", _set("max_output_tokens", 15), 400, "Expected a value >= 16"),
    ("ceiling", _set("max_output_tokens", 128_001), 400, "at most 128000"),
    ("none", _set("reasoning", {"effort": "none"}), 400, "Invalid value: 'none'"),
    ("not-reasoning", _set("model", "gpt-4"), 400, "Encrypted content is not supported"),
    ("temperature", _set("temperature", 0.2), 400, "'temperature' is not supported"),
    ("include", _set("include", ["reasoning.summary"]), 400, "Invalid value: 'reasoning.summary'"),
    ("chat-tool", _set("tools.0", CHAT_TOOL), 400, "Unknown parameter: 'tools[0].function'"),
    ("name", _set("tools.0.name", "fs.read"), 400, "does not match pattern"),
    ("schema", _set("tools.0.parameters", {"type": "string"}), 400, "'type: \"object\"'"),
    ("strict", _set("tools.0.strict", ...), 400, "'additionalProperties' is required"),
    ("choice", _set("tool_choice", {"type": "function", "name": "x"}), 400, "not found"),
    ("role", _set("input.0.role", "tool"), 400, "Invalid value: 'tool'"),
    ("part", _set("input.0.content.0.type", "text"), 400, "Invalid value: 'text'"),
    ("status", _set("input.2.status", ...), 400, "'input[2].status'"),
    ("no-secret", _set("input.1.encrypted_content", ...), 404, "Items are not persisted"),
    ("secret", _set("input.1.encrypted_content", "gAAAAB-x"), 400, "could not be verified"),
    ("no-next", _set("input.2", ...), 400, "without its required following item"),
    ("no-rs", _set("input.1", ...), 400, "without its required 'reasoning' item: 'rs_"),
    ("call-id", _set("input.4.call_id", "call_2"), 400, "No tool call found"),
    ("no-output", _set("input.4", ...), 400, "No tool output found for function call call_1"),
    ("fn-name", _set("input.3.name", "fs.read"), 400, "does not match pattern"),
    ("args", _set("input.3.arguments", {"path": "a"}), 400, "expected a string"),
]


def test_the_valid_request_is_taken() -> None:
    assert responses_problem(HEADERS, _valid(), ceilings=CEILINGS) is None


@pytest.mark.parametrize(
    ("change", "status", "said"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_each_rule_refuses_what_the_api_refuses(
    change: Callable[[dict[str, Any]], None], status: int, said: str
) -> None:
    body = copy.deepcopy(_valid())
    change(body)
    problem = responses_problem(HEADERS, body, ceilings=CEILINGS)
    assert problem is not None
    assert (problem.status, problem.type) == (status, "invalid_request_error")
    assert said in problem.message


def test_the_bearer_key_is_checked() -> None:
    assert responses_problem({}, _valid()) is not None
    wrong = responses_problem({"authorization": "Bearer other"}, _valid(), api_key=FAKE_KEY)
    assert wrong is not None
    assert wrong.status == 401


def test_what_the_api_takes_beside_the_rules() -> None:
    """A plain string input; sampling at effort none (gpt-6-sol only); a strict tool with a
    strict schema; an assistant message without an id as plain text; a call with no id and no
    reasoning (the API cannot tell it had one)."""
    assert responses_problem(HEADERS, {"model": "gpt-6.1-sol", "input": "hi"}) is None
    at_none = {"model": "gpt-6-sol", "input": "hi", "reasoning": {"effort": "none"}}
    assert responses_problem(HEADERS, {**at_none, "temperature": 0.2}) is None
    body = _valid()
    body["tools"][0] |= {
        "strict": True,
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
            "additionalProperties": False,
        },
    }
    body["input"][1:4] = [
        {"type": "message", "role": "assistant", "content": "Reading."},
        {"type": "function_call", "call_id": "call_1", "name": "fs_read", "arguments": "{}"},
    ]
    assert responses_problem(HEADERS, body, ceilings=CEILINGS) is None


def test_the_fake_answers_with_the_documented_event_sequence() -> None:
    chunks = responses_sse(
        [("text", ["Rea", "ding."]), ("tool_use", ("call_1", "fs_read", ['{"path"', ': "a"}']))],
        "tool_use",
        input_tokens=10,
        output_tokens=4,
        model="gpt-6.1-sol",
        message_id="msg_1",
        reasoning=True,
    )
    events = [json.loads(c.split(b"data: ", 1)[1]) for c in chunks]
    assert all(
        c.startswith(f"event: {e['type']}\n".encode()) for c, e in zip(chunks, events, strict=True)
    )
    assert [e["type"] for e in events] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.output_item.done",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    output = events[-1]["response"]["output"]
    assert [i["type"] for i in output] == ["reasoning", "message", "function_call"]
    assert output[0]["encrypted_content"] == seal(output[0]["id"])
    # the fake's own turn, replayed as the API requires, is taken
    body = _valid()
    body["input"][1:4] = [output[0], output[1], {**output[2], "status": "completed"}]
    assert responses_problem(HEADERS, body, ceilings=CEILINGS) is None
