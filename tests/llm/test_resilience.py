"""Turn-level resilience against the strict local servers, through the real SDK and httpx:
max_tokens from models.yaml, 429 + retry-after, 529, an overloaded event inside a 200 stream,
a read stall, a reply cut off by max_tokens inside a tool call, interleaved parallel tool-call
deltas — each asserting the turns the server saw and what the caller got, and that every retry
is announced with its reason."""

from __future__ import annotations

import json

import pytest

from air.contracts.error import ErrorKind
from air.contracts.provider import (
    CanonicalMessage,
    ProviderCompletionInput,
    StopReason,
    TextBlock,
    ToolUseBlock,
)
from air.llm.manager import ProviderManager, RetryNotice
from tests.forked_air import air_cli
from tests.headless import run_batch_json
from tests.llm.conftest import FAKE_KEY
from tests.llm.helpers import WIRES, Collected, Wire, collect, models_config, request, sse_for
from tests.llm.servers import LocalServer, Reply, Turn, blocks_sse, json_reply
from tests.trusted import trust_project

ENV = {"AIR_TEST_KEY": FAKE_KEY}
WINDOW = "model_context_window_exceeded"


def _api(wire: Wire) -> str:
    return "openai" if wire == "openai" else "anthropic"


async def _run(
    wire: Wire, server: LocalServer, req: ProviderCompletionInput, **config: object
) -> tuple[Collected, ProviderManager, list[RetryNotice]]:
    manager = ProviderManager(models_config(wire, server.url, **config), env=ENV)  # type: ignore[arg-type]
    notices: list[RetryNotice] = []

    async def listen(notice: RetryNotice) -> None:
        notices.append(notice)

    manager.add_retry_listener(listen)
    try:
        return await collect(manager, req), manager, notices
    finally:
        await manager.aclose()


def _error_body(wire: Wire, kind: str, message: str) -> dict[str, object]:
    if wire != "openai":
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"type": kind, "message": message, "param": None, "code": None}}


def _max_tokens(server: LocalServer) -> list[int]:
    return [int(r.body["max_tokens"]) for r in server.requests]


@pytest.mark.parametrize("wire", WIRES)
async def test_max_tokens_comes_from_the_model_config(wire: Wire, server: LocalServer) -> None:
    server.push(
        Reply(chunks=sse_for(wire, Turn(text=["a"]))), Reply(chunks=sse_for(wire, Turn(text=["b"])))
    )
    unset = request().model_copy()  # max_tokens explicitly 256 in the helper: less than 8192
    await _run(wire, server, unset, max_output_tokens=8192)
    default = ProviderCompletionInput(
        provider_id="p", model_id="m1", messages=unset.messages, tools=unset.tools
    )
    await _run(wire, server, default, max_output_tokens=3000)
    assert _max_tokens(server) == [256, 3000]  # not the fixed 4,096 of before


@pytest.mark.parametrize("wire", WIRES)
async def test_429_with_retry_after_retries_the_turn(wire: Wire, server: LocalServer) -> None:
    server.push(
        json_reply(429, _error_body(wire, "rate_limit_error", "slow"), {"retry-after": "0.05"}),
        Reply(chunks=sse_for(wire, Turn(text=["ok"]))),
    )
    got, manager, notices = await _run(wire, server, request())
    assert got.stop.content == [TextBlock(text="ok")]
    assert len(server.requests) == 2
    assert server.requests[0].body == server.requests[1].body
    assert manager.calls[-1].waits[0] >= 0.05  # the server's wait, not the 10 ms backoff cap
    assert [n.error.kind for n in notices] == [ErrorKind.RATE_LIMITED]
    assert notices[0].wait_s >= 0.05
    assert "rate limited" in notices[0].reason


@pytest.mark.parametrize("wire", WIRES)
async def test_529_retries_the_turn(wire: Wire, server: LocalServer) -> None:
    server.push(
        json_reply(529, _error_body(wire, "overloaded_error", "Overloaded")),
        Reply(chunks=sse_for(wire, Turn(text=["fine"]))),
    )
    got, _, notices = await _run(wire, server, request())
    assert got.stop.content == [TextBlock(text="fine")]
    assert len(server.requests) == 2
    assert "HTTP 529" in notices[0].reason
    assert "Overloaded" in notices[0].reason


@pytest.mark.parametrize("wire", WIRES)
async def test_overloaded_inside_a_stream_retries_that_turn(
    wire: Wire, server: LocalServer
) -> None:
    chunks = sse_for(wire, Turn(text=["par", "tial"]))
    error: dict[str, object]
    if wire == "openai":
        error = {"error": {"message": "Overloaded", "type": "server_error", "code": None}}
        bad = [chunks[0], chunks[1], f"data: {json.dumps(error)}\n\n".encode()]
    else:
        error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
        bad = [*chunks[:4], f"event: error\ndata: {json.dumps(error)}\n\n".encode()]
    history = [
        CanonicalMessage(role="user", content=[TextBlock(text="turn 1")]),
        CanonicalMessage(role="assistant", content=[TextBlock(text="answer 1")]),
        CanonicalMessage(role="user", content=[TextBlock(text="turn 2")]),
    ]
    server.push(Reply(chunks=bad), Reply(chunks=sse_for(wire, Turn(text=["whole"]))))
    got, _, notices = await _run(wire, server, request(messages=history))
    assert "text_delta" in got.types[: got.types.index("message_start", 1)]
    assert got.stop.content == [TextBlock(text="whole")]
    # the retry asked for this turn (turn 2) again, not for the task from turn 1
    assert len(server.requests) == 2
    assert server.requests[1].body == server.requests[0].body
    assert "turn 2" in json.dumps(server.requests[1].body["messages"][-1])
    assert len(notices) == 1
    assert "Overloaded" in notices[0].reason


@pytest.mark.parametrize("wire", WIRES)
async def test_a_read_stall_times_out_and_retries_the_turn(wire: Wire, server: LocalServer) -> None:
    chunks = sse_for(wire, Turn(text=["slow"]))
    server.push(
        Reply(chunks=chunks, stall_after=2, stall_s=2.0),
        Reply(chunks=sse_for(wire, Turn(text=["fast"]))),
    )
    got, manager, notices = await _run(wire, server, request(), read_timeout_s=0.3)
    assert got.stop.content == [TextBlock(text="fast")]
    assert manager.calls[-1].attempts == 2
    assert "connection failed" in notices[0].reason
    assert len(server.requests) == 2


@pytest.mark.parametrize("wire", WIRES)
async def test_cut_inside_a_tool_call_is_asked_again_with_more_tokens(
    wire: Wire, server: LocalServer
) -> None:
    cut = [("tool_use", ("toolu_1", "read_file", ['{"path": "src/ve']))]
    whole = [("tool_use", ("toolu_2", "read_file", ['{"path": "src/very/long.py"}']))]
    server.push(
        Reply(chunks=blocks_sse(_api(wire), cut, "max_tokens")),
        Reply(chunks=blocks_sse(_api(wire), whole, "tool_use")),
    )
    got, _, notices = await _run(wire, server, request(max_tokens=256))
    assert got.stop.content == [
        ToolUseBlock(id="toolu_2", name="read_file", input={"path": "src/very/long.py"})
    ]
    assert _max_tokens(server) == [256, 512]
    assert "max_tokens inside a call of tool read_file" in notices[0].reason
    assert notices[0].wait_s == 0


@pytest.mark.parametrize("wire", WIRES)
async def test_cut_inside_a_tool_call_at_the_ceiling_asks_for_smaller_input(
    wire: Wire, server: LocalServer
) -> None:
    cut = [("text", ["Writing."]), ("tool_use", ("toolu_1", "read_file", ['{"pa']))]
    whole = [("tool_use", ("toolu_2", "read_file", ['{"path": "a"}']))]
    server.push(
        Reply(chunks=blocks_sse(_api(wire), cut, "max_tokens")),
        Reply(chunks=blocks_sse(_api(wire), whole, "tool_use")),
    )
    at_ceiling = ProviderCompletionInput(
        provider_id="p", model_id="m1", messages=request().messages, tools=request().tools
    )
    got, _, _ = await _run(wire, server, at_ceiling, max_output_tokens=1024)
    assert got.stop.content == [ToolUseBlock(id="toolu_2", name="read_file", input={"path": "a"})]
    assert _max_tokens(server) == [1024, 1024]
    last = json.dumps(server.requests[1].body["messages"][-1])
    assert "cut off by the output limit" in last
    assert "hi" in last  # the note joins the same user turn: roles still alternate
    assert server.rejected == []


async def test_cut_again_at_the_ceiling_asks_once_then_gives_up(server: LocalServer) -> None:
    cut = [("tool_use", ("toolu_1", "read_file", ['{"pa']))]
    server.push(*(Reply(chunks=blocks_sse("anthropic", cut, "max_tokens")) for _ in range(3)))
    at_ceiling = ProviderCompletionInput(
        provider_id="p", model_id="m1", messages=request().messages, tools=request().tools
    )
    got, manager, notices = await _run("anthropic_http", server, at_ceiling, max_output_tokens=512)
    last = got.events[-1]
    assert last.type == "error"
    assert manager.calls[-1].attempts == 3  # FAST_RETRY's max_attempts
    assert len(notices) == 2
    bodies = [json.dumps(r.body["messages"][-1]) for r in server.requests]
    assert [b.count("cut off by the output limit") for b in bodies] == [0, 1, 1]


ANTHROPIC_WIRES = [w for w in WIRES if w != "openai"]


@pytest.mark.parametrize("wire", ANTHROPIC_WIRES)
async def test_a_reply_the_context_window_ended_is_kept_as_a_cut_reply(
    wire: Wire, server: LocalServer
) -> None:
    # Claude's stop reason since Sonnet 4.5 (before: "unknown stop_reason", a protocol error)
    server.push(Reply(chunks=blocks_sse("anthropic", [("text", ["half a"])], WINDOW)))
    got, _, notices = await _run(wire, server, request())
    stop = got.stop
    assert stop.stop_reason == StopReason.MODEL_CONTEXT_WINDOW_EXCEEDED
    assert stop.content == [TextBlock(text="half a")]
    assert notices == []


@pytest.mark.parametrize("wire", ANTHROPIC_WIRES)
async def test_a_tool_call_the_context_window_cut_is_asked_again_with_the_note_at_once(
    wire: Wire, server: LocalServer
) -> None:
    cut = [("tool_use", ("toolu_1", "read_file", ['{"path": "src/ve']))]
    whole = [("tool_use", ("toolu_2", "read_file", ['{"path": "a"}']))]
    server.push(
        Reply(chunks=blocks_sse("anthropic", cut, WINDOW)),
        Reply(chunks=blocks_sse("anthropic", whole, "tool_use")),
    )
    got, _, notices = await _run(wire, server, request(max_tokens=256))
    assert got.stop.content == [ToolUseBlock(id="toolu_2", name="read_file", input={"path": "a"})]
    assert _max_tokens(server) == [256, 256]  # more tokens cannot help a full window
    assert "the model's context window inside a call of tool read_file" in notices[0].reason
    assert "cut off by the output limit" in json.dumps(server.requests[1].body["messages"][-1])
    assert server.rejected == []


async def test_interleaved_parallel_tool_call_deltas_assemble(server: LocalServer) -> None:
    def chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
        body = {
            "id": "c",
            "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return f"data: {json.dumps(body)}\n\n".encode()

    def call(index: int, args: str, start: tuple[str, str] | None = None) -> bytes:
        item: dict[str, object] = {"index": index, "function": {"arguments": args}}
        if start is not None:
            item = {
                "index": index,
                "id": start[0],
                "type": "function",
                "function": {"name": start[1], "arguments": args},
            }
        return chunk({"tool_calls": [item]})

    chunks = [
        chunk({"role": "assistant", "content": None}),
        call(0, '{"pa', ("call_a", "read_file")),
        call(1, '{"pa', ("call_b", "read_file")),
        call(0, 'th": "a.py"}'),
        call(1, 'th": "b.py"}'),
        chunk({}, "tool_calls"),
        b"data: [DONE]\n\n",
    ]
    server.push(Reply(chunks=chunks))
    got, _, _ = await _run("openai", server, request())
    assert got.stop.content == [
        ToolUseBlock(id="call_a", name="read_file", input={"path": "a.py"}),
        ToolUseBlock(id="call_b", name="read_file", input={"path": "b.py"}),
    ]
    deltas = [e for e in got.events if e.type == "tool_use_input_delta"]
    assert [d.index for d in deltas] == [0, 1, 0, 1]


def test_a_retried_turn_is_visible_on_stderr_json_and_history(tmp_path: object) -> None:
    import os
    from pathlib import Path

    from air.testing.strict_servers import StrictServer
    from air.testing.wire_replies import openai_sse

    base = Path(str(tmp_path))
    root, home = base / "proj", base / "home"
    (root / ".air" / "shared").mkdir(parents=True)
    home.mkdir()
    (root / "batch.yaml").write_text(
        "version: 1\ntasks:\n  - id: look\n    type: review\n    title: Look\n"
        "    description: Say whether it is fine.\n"
    )
    verdict = json.dumps(
        {"status": "completed", "summary": "ok", "result": {"verdict": "approved", "findings": []}}
    )
    with StrictServer(api_key=FAKE_KEY) as server:
        (root / ".air" / "shared" / "models.yaml").write_text(
            "default: local/m\nretry: {base_delay_s: 0.01, max_delay_s: 0.05}\n"
            "providers:\n  local:\n    kind: openai_compatible\n"
            f"    base_url: {server.url}/v1\n    auth_ref: AIR_TEST_KEY\n    models: {{m: {{}}}}\n"
        )
        server.push(
            json_reply(529, _error_body("openai", "overloaded_error", "Overloaded right now")),
            Reply(chunks=openai_sse(Turn(text=[f"```json:result\n{verdict}\n```\n"]))),
        )
        trust_project(root, home)
        env = {**os.environ, "HOME": str(home), "AIR_TEST_KEY": FAKE_KEY}
        run = run_batch_json(root, env)
        history = air_cli(["history", "--json"], cwd=root, env=env, timeout=60)
    assert run.returncode == 0, run.stderr
    assert len(server.requests) == 2
    assert "look model turn retried" in run.stderr
    assert "Overloaded right now" in run.stderr
    streamed = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    failed = [e for e in streamed if e["type"] == "assistant.message.failed"]
    assert len(failed) == 1
    meta = failed[0]["payload"]["error"]["metadata"]
    assert (meta["task_id"], meta["attempt"], meta["will_retry"]) == ("look", 1, True)
    assert "HTTP 529" in meta["reason"]
    assert "assistant.message.failed" in history.stdout
    # one task attempt: the turn was retried, not the task
    assert sum(e["type"] == "task.started" for e in streamed) == 1


def _chunk(body: dict[str, object]) -> bytes:
    return f"data: {json.dumps(body)}\n\n".encode()


@pytest.mark.parametrize(
    "ending",
    [
        # OpenRouter: the error beside a choice that ends in "error"
        {"error": {"code": "server_error", "message": "Provider disconnected unexpectedly"}},
        {"error": {"code": 502, "message": "Provider returned error"}},
        {},  # a choice ending in "error" alone
    ],
    ids=["named", "status", "bare"],
)
async def test_a_gateway_s_error_inside_the_stream_retries_the_turn(
    server: LocalServer, ending: dict[str, object]
) -> None:
    choice = {"index": 0, "delta": {"content": ""}, "finish_reason": "error"}
    failed = [
        _chunk({"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"content": "par"}}]}),
        _chunk({"id": "c", "model": "m", **ending, "choices": [choice]}),
        b"data: [DONE]\n\n",
    ]
    server.push(Reply(chunks=failed), Reply(chunks=sse_for("openai", Turn(text=["whole"]))))
    got, manager, notices = await _run("openai", server, request())
    assert got.stop.content == [TextBlock(text="whole")]
    assert manager.calls[-1].attempts == 2
    assert "provider unavailable or overloaded" in notices[0].reason
    assert len(server.requests) == 2


@pytest.mark.parametrize("index", [{"index": 0}, {}], ids=["all-zero", "none"])
async def test_calls_at_one_reused_index_are_told_apart_by_their_ids(
    server: LocalServer, index: dict[str, int]
) -> None:
    # Ollama numbers every call of a reply 0 (ollama#15457, #15497); some proxies send no index
    def call(ident: str, path: str) -> bytes:
        item = {**index, "id": ident, "type": "function"}
        item["function"] = {"name": "read_file", "arguments": json.dumps({"path": path})}
        delta = {"role": "assistant", "tool_calls": [item]}
        return _chunk({"id": "c", "model": "m", "choices": [{"index": 0, "delta": delta}]})

    end = {"index": 0, "delta": {}, "finish_reason": "tool_calls"}
    chunks = [
        call("call_a", "a.py"),
        call("call_b", "b.py"),
        _chunk({"id": "c", "model": "m", "choices": [end]}),
        b"data: [DONE]\n\n",
    ]
    server.push(Reply(chunks=chunks))
    got, _, _ = await _run("openai", server, request())
    assert got.stop.content == [
        ToolUseBlock(id="call_a", name="read_file", input={"path": "a.py"}),
        ToolUseBlock(id="call_b", name="read_file", input={"path": "b.py"}),
    ]
