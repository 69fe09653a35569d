"""What the parent does with a worker's tool call, in the parent's own process (virtual time,
FakeLauncher workers): the agent file's tool list, the output cap, a streaming tool's progress
and its end, a worker that dies while its call is served, the stall window around a long call.
Each had tests only through real runs of ``air`` in a subprocess, which a mutation of the
parent's code could not reach (what a worker hands back: ``test_worker_results.py``)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import PurePosixPath
from typing import Any

import pytest
import trio
import trio.testing

from air.contracts.error import AirException, ErrorKind, make_air_error
from air.contracts.ids import new_id
from air.contracts.task import TaskAgent
from air.contracts.tool_runs import ToolEvent, ToolExecutionContext, ToolResultEnvelope
from air.supervision.seams import SuperviseRequest
from air.testing.launcher import FakeIO, scripted
from tests.supervision.conftest import REVIEWED, Rig, Tools, bounded_nursery, tool_result


def _as_agent(request: SuperviseRequest, tools: list[str] | None) -> SuperviseRequest:
    agent = TaskAgent(name="reader", source="project", tools=tools)
    spec = request.task_spec.model_copy(update={"agent": agent})
    return request.model_copy(update={"task_spec": spec})


async def _serve(
    rig: Rig, calls: list[tuple[str, dict[str, Any]]], tools: Any, **cfg: Any
) -> tuple[list[list[dict[str, Any]]], Any, SuperviseRequest]:
    """Run one worker making ``calls`` in turn; every message answering each call."""
    answers: list[list[dict[str, Any]]] = [[] for _ in calls]
    steps: list[dict[str, Any]] = [
        {"call": name, "input": input, "into": into}
        for (name, input), into in zip(calls, answers, strict=True)
    ]
    request = cfg.pop("request", None) or rig.request()
    streams = cfg.pop("streams", None)
    async with bounded_nursery() as nursery:
        manager, _ = rig.manager(nursery, scripted([*steps, REVIEWED]), **cfg)
        manager.tools, manager.tool_streams = tools, streams
        outcome = await manager.supervise(request)
    return answers, outcome, request


# -- the agent file's tool list --------------------------------------------------------------


async def test_a_tool_the_agent_does_not_list_is_denied_and_never_runs(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    tools = Tools({"fs.read": "text"})
    request = _as_agent(rig.request(), ["fs.read", "fs.list"])
    calls = [("shell.run", {"command": "id"}), ("fs.read", {"path": "a"}), ("git.commit", {})]
    answers, outcome, _ = await _serve(rig, calls, tools, request=request)
    assert outcome.kind == "result", outcome
    assert tools.ran == ["fs.read"]  # the parent ran only the listed tool
    for answer, name in ((answers[0], "shell.run"), (answers[2], "git.commit")):
        denied = tool_result(answer)
        assert denied["status"] == "denied"
        assert denied["tool_name"] == name
        assert denied["tool_run_id"].startswith("tr_")
        assert denied["error"]["kind"] == ErrorKind.PERMISSION_DENIED.value
        assert denied["error"]["message"] == (
            f"tool {name} is not among the tools of agent 'reader': fs.read, fs.list"
        )
    assert tool_result(answers[1])["status"] == "ok"
    assert tool_result(answers[1])["output"] == "text"
    # the tool ran with the worker's input, in this attempt's context
    assert tools.inputs == [{"path": "a"}]
    [ctx] = tools.contexts
    assert (ctx.task_id, ctx.agent_id, ctx.session_id) == (
        request.task_spec.id,
        request.agent_id,
        request.session_id,
    )
    assert ctx.headless is True
    assert ctx.workspace_root == request.workspace.path


async def test_an_agent_that_lists_no_tools_runs_none_and_one_without_a_list_runs_any(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    tools = Tools()
    answers, _, _ = await _serve(
        rig, [("fs.read", {"path": "a"})], tools, request=_as_agent(rig.request(), [])
    )
    assert tool_result(answers[0])["error"]["message"] == (
        "tool fs.read is not among the tools of agent 'reader': none"
    )
    assert tools.ran == []
    answers, _, _ = await _serve(
        rig, [("fs.read", {"path": "a"})], tools, request=_as_agent(rig.request(), None)
    )
    assert tool_result(answers[0])["status"] == "ok"
    assert tools.ran == ["fs.read"]


# -- the output cap (runner invariant 6) ------------------------------------------------------


async def _through_the_cap(rig: Rig, output: Any) -> tuple[dict[str, Any], SuperviseRequest]:
    """The ``tool.result`` of a tool answering ``output`` under a cap of 100 bytes, 5 lines."""
    calls: list[tuple[str, dict[str, Any]]] = [("t.x", {})]
    tools = Tools({"t.x": output})
    answers, _, request = await _serve(rig, calls, tools, max_result_bytes=100, max_result_lines=5)
    return tool_result(answers[0]), request


@pytest.mark.parametrize(
    "output",
    [
        "line one\nline two\nline three\nline four\nline five",
        "a" * 100,  # 100 bytes: at the cap, though four bytes a character is not
        "one line of many words, not many lines",
        7,
        True,
        None,
    ],
    ids=["lines-at-cap", "bytes-at-cap", "words", "int", "bool", "none"],
)
async def test_output_within_the_cap_goes_back_as_it_is(
    rig: Rig, autojump_clock: trio.testing.MockClock, output: Any
) -> None:
    result, _ = await _through_the_cap(rig, output)
    assert result["output"] == output
    assert result["truncated"] is False
    assert result["artifacts"] == []
    assert rig.artifacts.refs == {}


@pytest.mark.parametrize(
    ("output", "kept"),
    [
        ("1\n2\n3\n4\n5\n6", "1\n2\n3\n4\n5"),
        ("é" * 60, "é" * 50),  # 120 bytes: cut at 100, never inside a character
        ("b" * 101, "b" * 100),
        ({"k": "v" * 200}, '{"k": "' + "v" * 93),
        ({"k": "é" * 100}, '{"k": "' + "é" * 46),  # as UTF-8, not \u escapes
        ({"p": PurePosixPath("/x"), "v": "v" * 200}, '{"p": "/x", "v": "' + "v" * 82),
    ],
    ids=["six-lines", "multibyte", "one-byte-over", "json", "json-multibyte", "json-path"],
)
async def test_output_over_the_cap_is_cut_and_kept_whole_in_an_artifact(
    rig: Rig, autojump_clock: trio.testing.MockClock, output: Any, kept: str
) -> None:
    result, request = await _through_the_cap(rig, output)
    assert result["output"] == kept
    assert result["truncated"] is True
    [ref] = result["artifacts"]
    whole = (
        output if isinstance(output, str) else json.dumps(output, ensure_ascii=False, default=str)
    )
    assert rig.artifacts.read(ref["artifact_id"]).content == whole.encode()
    assert ref["path"].endswith("-t.x-output.txt")
    context = rig.artifacts.contexts[ref["artifact_id"]]
    assert (context.task_id, context.agent_id) == (request.task_spec.id, request.agent_id)
    assert context.tool_run_id == result["tool_run_id"]


# -- a streaming tool ------------------------------------------------------------------------


def _streaming(items: list[Any], fail: AirException | None = None) -> Any:
    @asynccontextmanager
    async def router(
        name: str, input: dict[str, Any], ctx: ToolExecutionContext
    ) -> AsyncIterator[AsyncIterator[Any]]:
        async def each() -> AsyncIterator[Any]:
            for item in items:
                yield item
            if fail is not None:
                raise fail

        yield each()

    return router


async def test_a_streaming_tools_progress_reaches_the_worker_before_its_result(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    items = [
        ToolEvent(tool_run_id="tr_s", kind="stdout", data="line 1\n"),
        ToolEvent(tool_run_id="tr_s", kind="progress", data={"done": 1}),
        ToolResultEnvelope(tool_run_id="tr_s", tool_name="shell.run", status="ok", output="x"),
    ]
    answers, outcome, _ = await _serve(
        rig, [("shell.run", {"command": "true"})], Tools(), streams=_streaming(items)
    )
    assert outcome.kind == "result", outcome
    assert [m["kind"] for m in answers[0]] == ["tool.stream", "tool.stream", "tool.result"]
    assert [m["payload"]["event"] for m in answers[0][:2]] == [
        {"tool_run_id": "tr_s", "kind": "stdout", "data": "line 1\n"},
        {"tool_run_id": "tr_s", "kind": "progress", "data": {"done": 1}},
    ]
    assert (tool_result(answers[0])["tool_run_id"], tool_result(answers[0])["output"]) == (
        "tr_s",
        "x",
    )


async def test_a_stream_without_a_result_or_that_raises_answers_an_error(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    progress = ToolEvent(tool_run_id="tr_s", kind="progress", data=1)
    answers, _, _ = await _serve(rig, [("cpp.build", {})], Tools(), streams=_streaming([progress]))
    ended = tool_result(answers[0])
    assert (ended["status"], ended["tool_name"]) == ("error", "cpp.build")
    assert ended["error"]["kind"] == ErrorKind.TOOL_ERROR.value
    assert ended["error"]["message"] == "tool cpp.build ended without a result"
    refused = AirException(make_air_error(kind=ErrorKind.PERMISSION_DENIED, message="no, not that"))
    answers, outcome, _ = await _serve(
        rig, [("cpp.build", {})], Tools(), streams=_streaming([progress], refused)
    )
    assert outcome.kind == "result", outcome  # the worker goes on after an error answer
    failed = tool_result(answers[0])
    assert (failed["status"], failed["tool_name"]) == ("error", "cpp.build")
    assert failed["tool_run_id"].startswith("tr_")
    assert failed["error"]["kind"] == ErrorKind.PERMISSION_DENIED.value
    assert failed["error"]["message"] == "no, not that"


# -- a worker that dies while its call is served ---------------------------------------------


async def test_a_worker_that_exits_while_its_call_is_served_crashed(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    started = trio.Event()

    async def slow(name: str, input: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        started.set()
        await trio.sleep(600)
        raise AssertionError("the call outlived its worker")

    async def worker(io: FakeIO) -> int:
        await io.handshake(1)
        await io.send("tool.call", {"name": "slow.tool", "input": {}}, id="msg_1")
        await started.wait()
        return 3

    async with bounded_nursery() as nursery:
        manager, _ = rig.manager(nursery, worker)
        manager.tools, manager.tool_streams = slow, None
        with trio.fail_after(60):
            outcome = await manager.supervise(rig.request())
    assert outcome.kind == "crashed", outcome
    assert outcome.transient is True
    assert outcome.exit_code == 3
    assert outcome.error is not None
    assert outcome.error.kind == ErrorKind.WORKER_CRASHED
    assert outcome.error.message == (
        "the worker exited with code 3 while the parent served its slow.tool call"
    )
    assert outcome.error.retryability.value == "transient"


# -- a call the parent serves is the worker's activity; silence after it is not ---------------

STALL: dict[str, Any] = {"stall_after_s": 10.0, "stall_kill_after_s": 5.0}


async def _slow_tool(name: str, input: dict[str, Any], ctx: ToolExecutionContext) -> Any:
    await trio.sleep(55)  # past the stall window and its probe: the worker waits on the parent
    return ToolResultEnvelope(tool_run_id=new_id("tr"), tool_name=name, status="ok", output=1)


async def test_a_long_call_is_no_stall_and_the_window_starts_again_after_it(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    steps: list[dict[str, Any]] = [{"call": "slow.tool", "input": {}}, {"sleep": 9}, REVIEWED]
    async with bounded_nursery() as nursery:
        manager, _ = rig.manager(nursery, scripted(steps, answer_probes=False), **STALL)
        manager.tools, manager.tool_streams = _slow_tool, None
        outcome = await manager.supervise(rig.request())
    assert outcome.kind == "result", outcome


async def test_a_worker_silent_after_a_call_is_stalled(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    steps: list[dict[str, Any]] = [{"call": "slow.tool", "input": {}}, {"hang": True}]
    async with bounded_nursery() as nursery:
        manager, _ = rig.manager(nursery, scripted(steps), kill_grace_s=1.0, **STALL)
        manager.tools, manager.tool_streams = _slow_tool, None
        start = trio.current_time()
        outcome = await manager.supervise(rig.request())
    assert outcome.kind == "stalled", outcome
    assert outcome.transient is True
    # stalled once the call ended (55 s) and a window and the probe's wait passed, not later
    assert trio.current_time() - start < 55 + 10 + 5 + 10
