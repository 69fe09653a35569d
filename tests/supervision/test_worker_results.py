"""What a worker hands back and says, checked by the parent in its own process (virtual time,
FakeLauncher workers): a result's verification is the parent's record of ``shell.run``, never the
worker's claim; a result, a heartbeat, a kept tool output and a log are redacted before the
parent keeps them, and redacted before any cut (a secret across a cut kept its first
characters); logs are bounded; a protocol violation is never transient."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import trio
import trio.testing

from air.contracts.error import ErrorKind, make_air_error
from air.contracts.ids import new_id, utc_now_iso
from air.contracts.task import TaskType, VerificationPolicy
from air.contracts.tool_runs import ToolExecutionContext, ToolResultEnvelope
from air.contracts.worker_result import WorkerStatus
from air.security.redact import REDACTED, SecretRedactor
from air.testing.launcher import FakeIO, scripted
from tests.supervision.conftest import REVIEWED, Rig, Tools, bounded_nursery, tool_result

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

    logs = [{"message": SECRET + "x" * 3000}, {}]
    logs += [{"message": f"{i:04d}" + "y" * 2000} for i in range(600)]  # over the 1 MiB kept
    outcome = await _logging(rig, logs)
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
    outcome = await _logging(rig, [{"message": SECRET + "x" * 3000}, {}, {"message": "last"}])
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


async def _logging(rig: Rig, logs: list[dict[str, Any]]) -> Any:
    """A worker sending each of ``logs`` (a ``log`` message's fields but its level), then a
    result, under a redactor that knows ``SECRET``: its outcome."""

    async def worker(io: FakeIO) -> int:
        await io.handshake(1)
        for fields in logs:
            await io.send("log", {"level": "info", **fields})
        await io.send("worker.result", _reviewed(io))
        await io.drain()
        return 0

    async with bounded_nursery() as nursery:
        manager, _ = rig.manager(nursery, worker)
        manager.redactor = SecretRedactor([SECRET])
        return await manager.supervise(rig.request())


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
