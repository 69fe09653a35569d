"""The strict local servers refuse what the real APIs refuse (one case per documented rule),
answer with each API's error JSON and log the refusal; air's adapters send what they accept:
dotted internal tool names go out API-legal and come back as the SDD names them."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from air.contracts.error import ErrorKind, Retryability
from air.contracts.provider import (
    CanonicalMessage,
    MessageStopEvent,
    ProviderErrorEvent,
    TextBlock,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
)
from air.llm.manager import ProviderManager
from air.llm.tool_names import WIRE_NAME, ToolNameMap
from air.testing.anthropic_rules import anthropic_problem
from air.testing.openai_rules import openai_problem
from tests.llm.conftest import FAKE_KEY
from tests.llm.helpers import WIRES, Wire, collect, models_config, request
from tests.llm.servers import LocalServer, Reply, blocks_sse

ENV = {"AIR_TEST_KEY": FAKE_KEY}
A_HEADERS = {"x-api-key": FAKE_KEY, "anthropic-version": "2023-06-01"}
O_HEADERS = {"authorization": f"Bearer {FAKE_KEY}"}
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}


def _anthropic_body() -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "stream": True,
        "system": "be brief",
        "tools": [{"name": "fs_read", "description": "read", "input_schema": SCHEMA}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "read a.py"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "reading"},
                    {"type": "tool_use", "id": "toolu_1", "name": "fs_read", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}],
            },
        ],
    }


def _openai_body() -> dict[str, Any]:
    return {
        "model": "gpt-4.1",
        "max_tokens": 1024,
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": [
            {
                "type": "function",
                "function": {"name": "fs_read", "description": "read", "parameters": SCHEMA},
            }
        ],
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "read a.py"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "fs_read", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "x"},
        ],
    }


def test_valid_requests_pass() -> None:
    assert anthropic_problem(A_HEADERS, _anthropic_body(), api_key=FAKE_KEY) is None
    assert openai_problem(O_HEADERS, _openai_body(), api_key=FAKE_KEY) is None
    bearer = {"authorization": f"Bearer {FAKE_KEY}", "anthropic-version": "2023-06-01"}
    assert anthropic_problem(bearer, _anthropic_body(), api_key=FAKE_KEY) is None


def _set(path: str, value: Any) -> Any:
    def edit(body: dict[str, Any]) -> None:
        *head, last = path.split(".")
        node: Any = body
        for part in head:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if value is _DELETE:
            del node[int(last) if isinstance(node, list) else last]
        elif isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return edit


_DELETE = object()

ANTHROPIC_CASES: list[tuple[str, Any, int, str]] = [
    ("dotted tool name", _set("tools.0.name", "fs.read"), 400, "String should match pattern"),
    ("tool name > 64", _set("tools.0.name", "a" * 65), 400, "String should match pattern"),
    ("duplicate tool", lambda b: b["tools"].append(dict(b["tools"][0])), 400, "unique"),
    ("schema not object", _set("tools.0.input_schema", {"type": "string"}), 400, "'object'"),
    ("schema missing", _set("tools.0.input_schema", _DELETE), 400, "input_schema"),
    ("first not user", lambda b: b["messages"].pop(0), 400, 'first message must use the "user"'),
    (
        "roles not alternating",
        lambda b: b["messages"].insert(1, {"role": "user", "content": "again"}),
        400,
        "roles must alternate",
    ),
    ("bad role", _set("messages.0.role", "system"), 400, "Input should be 'user' or 'assistant'"),
    ("empty text", _set("messages.0.content.0.text", ""), 400, "must be non-empty"),
    ("whitespace text", _set("messages.0.content.0.text", " \n"), 400, "non-whitespace"),
    ("empty content", _set("messages.0.content", []), 400, "non-empty content"),
    ("empty system block", _set("system", [{"type": "text", "text": ""}]), 400, "non-empty"),
    (
        "tool_result for an unknown id",
        _set("messages.2.content.0.tool_use_id", "toolu_9"),
        400,
        "unexpected `tool_use_id`",
    ),
    (
        "tool_use without tool_result after it",
        _set("messages.2.content", [{"type": "text", "text": "hm"}]),
        400,
        "without `tool_result` blocks immediately after",
    ),
    (
        "tool_result not immediately after",
        lambda b: b["messages"].__setitem__(
            slice(2, 2),
            [{"role": "user", "content": "wait"}, {"role": "assistant", "content": "ok"}],
        ),
        400,
        "tool_use",
    ),
    (
        "text before tool_result",
        lambda b: b["messages"][2]["content"].insert(0, {"type": "text", "text": "first"}),
        400,
        "must come first",
    ),
    ("bad tool_use id", _set("messages.1.content.1.id", "toolu 1"), 400, "pattern"),
    ("dotted tool_use name", _set("messages.1.content.1.name", "fs.read"), 400, "pattern"),
    (
        "unknown tool_use field",
        _set("messages.1.content.1.input_error", "x"),
        400,
        "tool_use.input_error: Extra inputs are not permitted",
    ),
    ("tool blocks without tools", _set("tools", _DELETE), 400, "must define tools"),
    ("max_tokens missing", _set("max_tokens", _DELETE), 400, "max_tokens: Field required"),
    ("max_tokens zero", _set("max_tokens", 0), 400, "max_tokens"),
    ("max_tokens over ceiling", _set("max_tokens", 64_001), 400, "maximum allowed number"),
    ("unknown field", _set("max_output", 5), 400, "Extra inputs are not permitted"),
    ("model missing", _set("model", _DELETE), 400, "model: Field required"),
    ("tool_choice names no tool", _set("tool_choice", {"type": "tool", "name": "x"}), 400, "x"),
    ("temperature > 1", _set("temperature", 1.5), 400, "temperature"),
]


@pytest.mark.parametrize(("case", "edit", "status", "needle"), ANTHROPIC_CASES)
def test_anthropic_rule(case: str, edit: Any, status: int, needle: str) -> None:
    body = copy.deepcopy(_anthropic_body())
    edit(body)
    problem = anthropic_problem(A_HEADERS, body, api_key=FAKE_KEY)
    assert problem is not None, case
    assert (problem.status, problem.type) == (status, "invalid_request_error")
    assert needle in problem.message


def test_anthropic_headers_and_models() -> None:
    body = _anthropic_body()
    missing = anthropic_problem({"anthropic-version": "2023-06-01"}, body)
    assert missing is not None
    assert (missing.status, missing.type) == (401, "authentication_error")
    wrong = anthropic_problem({**A_HEADERS, "x-api-key": "nope"}, body, api_key=FAKE_KEY)
    assert wrong is not None
    assert wrong.status == 401
    no_version = anthropic_problem({"x-api-key": FAKE_KEY}, body)
    assert no_version is not None
    assert "anthropic-version" in no_version.message
    unknown = anthropic_problem(A_HEADERS, body, ceilings={"claude-haiku-4-5": 64_000})
    assert unknown is not None
    assert (unknown.status, unknown.type) == (404, "not_found_error")
    low = anthropic_problem(A_HEADERS, body, ceilings={"claude-sonnet-4-5": 512})
    assert low is not None
    assert "512" in low.message


OPENAI_CASES: list[tuple[str, Any, int, str]] = [
    ("dotted function name", _set("tools.0.function.name", "fs.read"), 400, "pattern"),
    ("function name > 64", _set("tools.0.function.name", "f" * 65), 400, "pattern"),
    (
        "parameters not object",
        _set("tools.0.function.parameters", {"type": "array"}),
        400,
        "object",
    ),
    ("tool type", _set("tools.0.type", "code"), 400, "function"),
    ("dotted call name", _set("messages.2.tool_calls.0.function.name", "fs.read"), 400, "pattern"),
    ("call without id", _set("messages.2.tool_calls.0.id", ""), 400, "tool_calls[0].id"),
    (
        "arguments not a string",
        _set("messages.2.tool_calls.0.function.arguments", {}),
        400,
        "arguments",
    ),
    (
        "tool message answering nothing",
        _set("messages.3.tool_call_id", "call_9"),
        400,
        "must be a response to a preceeding message with 'tool_calls'",
    ),
    (
        "call left unanswered",
        lambda b: b["messages"].__setitem__(3, {"role": "user", "content": "go on"}),
        400,
        "did not have response messages: call_1",
    ),
    ("bad role", _set("messages.1.role", "robot"), 400, "Supported values"),
    ("empty content array", _set("messages.1.content", []), 400, "empty array"),
    ("assistant with nothing", _set("messages.2.tool_calls", _DELETE), 400, "got null"),
    ("max_tokens over ceiling", _set("max_tokens", 64_001), 400, "max_tokens is too large"),
    ("unknown argument", _set("max_output", 3), 400, "Unrecognized request argument"),
    ("stream_options without stream", _set("stream", False), 400, "stream_options"),
    ("empty messages", _set("messages", []), 400, "too short"),
]


@pytest.mark.parametrize(("case", "edit", "status", "needle"), OPENAI_CASES)
def test_openai_rule(case: str, edit: Any, status: int, needle: str) -> None:
    body = copy.deepcopy(_openai_body())
    edit(body)
    problem = openai_problem(O_HEADERS, body, api_key=FAKE_KEY)
    assert problem is not None, case
    assert (problem.status, problem.type) == (status, "invalid_request_error")
    assert needle in problem.message


def test_openai_auth_and_models() -> None:
    body = _openai_body()
    missing = openai_problem({}, body)
    assert missing is not None
    assert missing.status == 401
    assert openai_problem({}, body, keyless=True) is None
    wrong = openai_problem({"authorization": "Bearer nope"}, body, api_key=FAKE_KEY)
    assert wrong is not None
    assert (wrong.status, wrong.code) == (401, "invalid_api_key")
    unknown = openai_problem(O_HEADERS, body, ceilings={"gpt-4.1-mini": 32_768})
    assert unknown is not None
    assert (unknown.status, unknown.code) == (404, "model_not_found")


def test_refusals_use_the_api_error_shape_and_are_logged(tmp_path: Path) -> None:
    log = tmp_path / "rejected.jsonl"
    with LocalServer(api_key=FAKE_KEY, log=log) as server:
        _refuse_dotted_names(server)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(line["path"], line["status"]) for line in lines] == [
        ("/v1/messages", 400),
        ("/v1/chat/completions", 400),
    ]


def _refuse_dotted_names(server: LocalServer) -> None:
    dotted = copy.deepcopy(_anthropic_body())
    dotted["tools"][0]["name"] = "fs.read"
    got = httpx.post(f"{server.url}/v1/messages", json=dotted, headers=A_HEADERS)
    assert got.status_code == 400
    body = got.json()
    assert body["type"] == "error"
    assert body["error"]["type"] == "invalid_request_error"
    assert "tools.0.custom.name" in body["error"]["message"]
    openai = copy.deepcopy(_openai_body())
    openai["tools"][0]["function"]["name"] = "shell.run"
    got = httpx.post(f"{server.url}/v1/chat/completions", json=openai, headers=O_HEADERS)
    assert got.status_code == 400
    assert set(got.json()["error"]) == {"message", "type", "param", "code"}
    assert [r.problem.status for r in server.rejected] == [400, 400]


# --- the adapters against the strict servers -------------------------------------------------

DOTTED = [
    ToolSpec(name="fs.read", description="Read a file", input_schema=SCHEMA),
    ToolSpec(name="shell.run", description="Run", input_schema={"type": "object"}),
]


def test_tool_name_map_is_legal_reversible_and_collision_free() -> None:
    internal = ["fs.read", "fs_read", "shell.run", "x" * 70, "a.b.c"]
    names = ToolNameMap(internal)
    wires = [names.wire(n) for n in internal]
    assert all(WIRE_NAME.match(w) for w in wires)
    assert len(set(wires)) == len(wires)
    assert names.wire("fs_read") == "fs_read"  # the legal one keeps its name
    assert names.wire("shell.run") == "shell_run"
    assert [names.internal(w) for w in wires] == internal
    again = ToolNameMap(["fs_read", "fs.read"])
    assert again.wire("fs.read") == names.wire("fs.read")  # deterministic
    assert names.internal("no_such_tool") == "no_such_tool"


@pytest.mark.parametrize("wire", WIRES)
async def test_dotted_tools_round_trip_through_a_strict_server(
    wire: Wire, server: LocalServer
) -> None:
    api = "anthropic" if wire != "openai" else "openai"
    server.push(
        Reply(
            chunks=blocks_sse(
                api, [("tool_use", ("toolu_1", "fs_read", ['{"path": "a.py"}']))], "tool_use"
            )
        ),
        Reply(chunks=blocks_sse(api, [("text", ["done"])], "end_turn")),
    )
    manager = ProviderManager(models_config(wire, server.url), env=ENV)
    try:
        first = await collect(manager, request(tools=DOTTED))
        stop = first.events[-1]
        assert isinstance(stop, MessageStopEvent), stop
        assert stop.content == [ToolUseBlock(id="toolu_1", name="fs.read", input={"path": "a.py"})]
        history = [
            CanonicalMessage(role="user", content=[TextBlock(text="read a.py")]),
            CanonicalMessage(role="assistant", content=[TextBlock(text=" "), *stop.content]),
            CanonicalMessage(
                role="user", content=[ToolResultBlock(tool_use_id="toolu_1", content="print(1)")]
            ),
        ]
        second = await collect(manager, request(tools=DOTTED, messages=history))
        assert isinstance(second.events[-1], MessageStopEvent), second.events[-1]
    finally:
        await manager.aclose()
    assert server.rejected == []
    sent = json.dumps([r.body for r in server.requests])
    assert "fs.read" not in sent
    assert "shell.run" not in sent
    assert "fs_read" in sent
    assert "shell_run" in sent


@pytest.mark.parametrize("wire", WIRES)
async def test_a_400_is_not_retried_and_carries_the_api_message(
    wire: Wire, server: LocalServer
) -> None:
    # models.yaml claims more output than the model allows: the server refuses max_tokens
    manager = ProviderManager(models_config(wire, server.url, max_output_tokens=100_000), env=ENV)
    try:
        got = await collect(manager, request().model_copy(update={"max_tokens": 100_000}))
    finally:
        await manager.aclose()
    last = got.events[-1]
    assert isinstance(last, ProviderErrorEvent)
    assert last.error.retryability is Retryability.NEVER
    assert last.error.kind is ErrorKind.PROVIDER_ERROR
    assert "100000" in last.error.message  # the API's own error.message, not just "HTTP 400"
    assert len(server.requests) == 1
    assert len(server.rejected) == 1
    server.rejected.clear()


@pytest.mark.parametrize("wire", ["anthropic", "anthropic_http"])
async def test_a_messages_request_over_32_mb_is_a_413_air_does_not_retry(
    wire: Wire, server: LocalServer
) -> None:
    """The Messages API takes at most 32 MB a request (its errors page: 413
    ``request_too_large``, from Cloudflare before the API); the fake refuses the same."""
    manager = ProviderManager(models_config(wire, server.url), env=ENV)
    big = TextBlock(text="x" * 32_500_000)
    huge = request().model_copy(update={"messages": [CanonicalMessage(role="user", content=[big])]})
    try:
        got = await collect(manager, huge)
    finally:
        await manager.aclose()
    last = got.events[-1]
    assert isinstance(last, ProviderErrorEvent)
    assert last.error.retryability is Retryability.NEVER
    assert "maximum allowed number of bytes" in last.error.message
    assert [r.problem.status for r in server.rejected] == [413]
    server.rejected.clear()
