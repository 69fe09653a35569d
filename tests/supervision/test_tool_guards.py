"""What the parent does with a worker's tool call, in the parent's own process (virtual time,
FakeLauncher workers): the agent file's tool list, the output cap, a streaming tool's progress
and its end, a worker that dies while its call is served. Each had tests only through real runs
of ``air`` in a subprocess, which a mutation of the parent's code could not reach."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import PurePosixPath
from typing import Any
from uuid import UUID

import pytest
import trio
import trio.testing

from air.contracts.error import AirException, ErrorKind, make_air_error
from air.contracts.ids import new_id, utc_now_iso
from air.contracts.task import TaskAgent, TaskType, VerificationPolicy
from air.contracts.tool_runs import ToolEvent, ToolExecutionContext, ToolResultEnvelope
from air.contracts.worker_result import WorkerStatus
from air.security.redact import REDACTED, SecretRedactor
from air.supervision.seams import SuperviseRequest
from air.testing.launcher import FakeIO, scripted
from tests.supervision.conftest import REVIEWED, Rig, bounded_nursery, tool_result


class Tools:
    """A tool router that answers each call with ``outputs[name]`` and keeps what it ran."""

    def __init__(self, outputs: dict[str, Any] | None = None) -> None:
        self.outputs = outputs or {}
        self.ran: list[str] = []
        self.inputs: list[dict[str, Any]] = []
        self.contexts: list[ToolExecutionContext] = []

    async def __call__(
        self, name: str, input: dict[str, Any], ctx: ToolExecutionContext
    ) -> ToolResultEnvelope:
        self.ran.append(name)
        self.inputs.append(input)
        self.contexts.append(ctx)
        return ToolResultEnvelope(
            tool_run_id=new_id("tr"), tool_name=name, status="ok", output=self.outputs.get(name)
        )


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


async def test_a_streaming_tools_progress_reaches_the_worker_before_itstool_result(
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


# -- what a worker sends is redacted before the parent keeps it -------------------------------

SECRET = "hunter2-registered-value"


async def test_a_secret_in_what_a_worker_sends_is_redacted_before_it_is_kept(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    """A registered secret the model saw (a key in a file it read) comes back in the worker's
    heartbeat, in the tool output the parent keeps as an artifact and in its result's summary;
    none of them keeps it."""
    beat = {"state": f"reading {SECRET}", "turn": 2}
    result = {
        "status": "completed",
        "summary": f"the key is {SECRET}",
        "result": {"verdict": "approved", "findings": []},
    }
    answers: list[dict[str, Any]] = []
    steps: list[dict[str, Any]] = [
        {"event": "agent.heartbeat", "payload": beat},
        {"call": "t.x", "input": {}, "into": answers},
        {"result": result},
    ]
    tools = Tools({"t.x": f"{SECRET}\n" * 10})
    async with bounded_nursery() as nursery:
        manager, _ = rig.manager(nursery, scripted(steps), max_result_lines=5)
        manager.tools, manager.tool_streams = tools, None
        manager.redactor = SecretRedactor([SECRET])
        before = utc_now_iso()
        request = rig.request()
        outcome = await manager.supervise(request)
    assert outcome.kind == "result", outcome
    assert outcome.result is not None
    assert outcome.result.summary == f"the key is {REDACTED}"
    [kept] = [e for _, e in rig.events.events if e.type == "agent.heartbeat"]
    assert kept.payload["state"] == f"reading {REDACTED}"
    assert kept.payload["turn"] == 2
    # the parent's own envelope: a fresh id, its clock, the version the worker named
    assert UUID(str(kept.id)).version in (4, 7)
    assert kept.version == 1
    assert before <= kept.timestamp <= utc_now_iso()
    assert (kept.session_id, kept.project_id) == (request.session_id, request.project_id)
    [ref] = tool_result(answers)["artifacts"]
    assert rig.artifacts.read(ref["artifact_id"]).content == f"{REDACTED}\n".encode() * 10


# -- the result's verification is the parent's record, not the worker's claim ----------------


async def test_each_verification_command_is_named_as_it_failed_or_never_ran(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    commands = ["make a", "make b", "make c", "make d"]
    tools = Tools({"shell.run": {"exit_code": 1, "stdout": "", "stderr": "no"}})
    request = rig.request(TaskType.EXECUTE)
    spec = request.task_spec.model_copy(
        update={"verification": VerificationPolicy(commands=commands)}
    )
    request = request.model_copy(update={"task_spec": spec})
    claim = {
        "status": "completed",
        "summary": "fixed",
        "changed_files": ["x.py"],
        "result": {"changes_made": True},
        "verification": [{"name": c, "status": "passed"} for c in commands],
    }
    steps: list[dict[str, Any]] = [
        {"call": "shell.run", "input": {"command": "make a"}},
        {"call": "shell.run", "input": {"command": "make b"}},
        {"result": claim},
    ]
    async with bounded_nursery() as nursery:
        manager, _ = rig.manager(nursery, scripted(steps))
        manager.tools, manager.tool_streams = tools, None
        outcome = await manager.supervise(request)
    assert outcome.kind == "result", outcome
    assert outcome.result is not None
    assert outcome.result.status == WorkerStatus.FAILED
    assert outcome.result.error is not None
    assert outcome.result.error.kind == ErrorKind.VERIFICATION_FAILED
    assert outcome.result.error.message == (
        "verification failed in shell.run: make a, make b; "
        "never ran through shell.run: make c, make d"
    )


async def test_a_summary_and_a_raw_text_over_the_cap_are_each_kept_whole(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    summary, raw = "s" * 150, "r\n" * 10
    result = {**REVIEWED["result"], "summary": summary, "raw_text": raw}
    async with bounded_nursery() as nursery:
        manager, _ = rig.manager(
            nursery, scripted([{"result": result}]), max_result_bytes=100, max_result_lines=5
        )
        outcome = await manager.supervise(rig.request())
    assert outcome.result is not None
    first, second = outcome.result.artifacts
    assert outcome.result.summary == "s" * 100 + (
        f"\n[truncated; full text in artifact {first.artifact_id}]"
    )
    assert outcome.result.raw_text == "r\n" * 4 + "r" + (
        f"\n[truncated; full text in artifact {second.artifact_id}]"
    )
    assert rig.artifacts.read(first.artifact_id).content == summary.encode()
    assert rig.artifacts.read(second.artifact_id).content == raw.encode()


async def test_a_workers_log_is_kept_cut_redacted_and_bounded_in_its_stderr_artifact(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    """Each log message is cut at 2,000 characters and redacted; one without a message is an
    empty line; past 1 MiB the oldest go, and the artifact says how many."""

    async def worker(io: FakeIO) -> int:
        await io.handshake(1)
        await io.send("log", {"level": "info", "message": SECRET + "x" * 3000})
        await io.send("log", {"level": "info"})
        for i in range(600):  # 600 x 2,000 characters: over the 1 MiB kept
            await io.send("log", {"level": "info", "message": f"{i:04d}" + "y" * 2000})
        await io.send("worker.result", _reviewed(io))
        await io.drain()
        return 0

    async with bounded_nursery() as nursery:
        manager, _ = rig.manager(nursery, worker)
        manager.redactor = SecretRedactor([SECRET])
        outcome = await manager.supervise(rig.request())
    assert outcome.kind == "result", outcome
    text = _stderr_log(rig)
    lines = text.split("\n")
    assert SECRET not in text
    dropped = int(lines[0].removeprefix("[").split()[0])
    assert lines[0] == f"[{dropped} earlier log messages not kept]"
    assert len(text) <= (1 << 20) + 100
    kept = lines[1:]
    assert [len(line) for line in kept] == [2000] * len(kept)
    assert kept[-1] == "0599" + "y" * 1996
    assert len(kept) == 602 - dropped


async def test_the_first_log_messages_are_kept_as_they_came(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    async def worker(io: FakeIO) -> int:
        await io.handshake(1)
        await io.send("log", {"level": "info", "message": SECRET + "x" * 3000})
        await io.send("log", {"level": "info"})
        await io.send("log", {"level": "info", "message": "last"})
        await io.send("worker.result", _reviewed(io))
        await io.drain()
        return 0

    async with bounded_nursery() as nursery:
        manager, _ = rig.manager(nursery, worker)
        manager.redactor = SecretRedactor([SECRET])
        outcome = await manager.supervise(rig.request())
    assert outcome.kind == "result", outcome
    first = (SECRET + "x" * 3000).replace(SECRET, REDACTED)[:2000]
    assert _stderr_log(rig) == first + "\n\nlast"


async def test_a_secret_across_a_log_messages_cut_leaves_none_of_it(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    """Found: a message was cut at 2,000 characters, then redacted: a registered value that
    began at character 1,990 was no longer whole, and its first ten characters were kept."""
    message = "x" * 1990 + SECRET + "after"
    async with bounded_nursery() as nursery:
        manager, _ = rig.manager(nursery, scripted([{"log": message}, REVIEWED]))
        manager.redactor = SecretRedactor([SECRET])
        outcome = await manager.supervise(rig.request())
    assert outcome.kind == "result", outcome
    assert _stderr_log(rig) == ("x" * 1990 + REDACTED)[:2000]
    assert SECRET[:10] not in _stderr_log(rig)


def _stderr_log(rig: Rig) -> str:
    """The text of the one worker-stderr artifact the attempt left."""
    [ref] = [r for r in rig.artifacts.refs.values() if r.path.endswith("-worker-stderr.txt")]
    return rig.artifacts.read(ref.artifact_id).content.decode()


def _reviewed(io: FakeIO) -> dict[str, Any]:
    """The ``worker.result`` of ``io``'s task that passes the parent's checks."""
    spec, runtime = io.start["task_spec"], io.start["runtime"]
    return {
        "task_id": spec["id"],
        "agent_id": runtime["agent_id"],
        "agent_type": "reviewer",
        **REVIEWED["result"],
    }


async def test_a_summary_cut_at_the_result_cap_keeps_no_part_of_a_secret(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    """Found: the summary was cut at the cap, then redacted: a registered value across the cut
    kept its first characters in the recorded result."""
    result = {**REVIEWED["result"], "summary": "s" * 95 + SECRET}
    async with bounded_nursery() as nursery:
        manager, _ = rig.manager(nursery, scripted([{"result": result}]), max_result_bytes=100)
        manager.redactor = SecretRedactor([SECRET])
        outcome = await manager.supervise(rig.request())
    assert outcome.result is not None
    [ref] = outcome.result.artifacts
    assert outcome.result.summary == (
        "s" * 95 + REDACTED[:5] + f"\n[truncated; full text in artifact {ref.artifact_id}]"
    )
    assert rig.artifacts.read(ref.artifact_id).content == ("s" * 95 + REDACTED).encode()


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


async def _garbled(io: FakeIO) -> int:
    await io.handshake(1)
    await io.write(b"this is not an envelope\n")
    await io.drain()
    return 0


async def test_a_protocol_violation_is_never_transient(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    """A worker that breaks the protocol does so again: its attempt is not retried as a
    transient failure would be."""
    for worker in (
        scripted([{"event": "agent.completed", "payload": {}}]),  # a parent-owned event
        scripted([{"result": {**REVIEWED["result"], "task_id": "task_other"}}]),  # another's
        _garbled,  # a line that is no envelope
    ):
        async with bounded_nursery() as nursery:
            manager, _ = rig.manager(nursery, worker)
            outcome = await manager.supervise(rig.request())
        assert outcome.kind == "protocol_error", outcome
        assert outcome.transient is False


async def test_a_verification_command_whose_call_failed_is_not_verified(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    """A shell.run of a verification command that ends in an error (no output at all) counts
    as a failed run."""

    async def failing(name: str, input: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        error = make_air_error(kind=ErrorKind.TIMEOUT, message="took too long")
        return ToolResultEnvelope(
            tool_run_id=new_id("tr"), tool_name=name, status="error", error=error
        )

    request = rig.request(TaskType.EXECUTE)
    spec = request.task_spec.model_copy(
        update={"verification": VerificationPolicy(commands=["make check"])}
    )
    claim = {
        "status": "completed",
        "summary": "fixed",
        "changed_files": ["x.py"],
        "result": {"changes_made": True},
        "verification": [{"name": "make check", "status": "passed"}],
    }
    steps: list[dict[str, Any]] = [
        {"call": "shell.run", "input": {"command": "make check"}},
        {"result": claim},
    ]
    async with bounded_nursery() as nursery:
        manager, _ = rig.manager(nursery, scripted(steps))
        manager.tools, manager.tool_streams = failing, None
        outcome = await manager.supervise(request.model_copy(update={"task_spec": spec}))
    assert outcome.kind == "result", outcome
    assert outcome.result is not None
    assert outcome.result.error is not None
    assert outcome.result.error.message == "verification failed in shell.run: make check"
