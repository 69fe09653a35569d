"""Misbehaving workers from ``air.testing.workers`` run concurrently in one nursery next to a
healthy worker: each ends with a recorded reason, no process survives, the healthy one finishes."""

from __future__ import annotations

from typing import Any

import trio

from air.contracts.task import TaskType
from air.contracts.worker_result import WorkerStatus
from air.supervision.runs import RunRecordStore
from air.supervision.seams import SuperviseRequest
from air.supervision.task_outcome import TaskOutcome
from air.testing.workers import MISBEHAVIOURS, command_for
from tests.workers.conftest import (
    Env,
    read_text,
    result_text,
    survivors,
    text_turn,
    tool_turn,
)

FAST = {"kill_grace_s": 0.5, "exit_grace_s": 1.0, "handshake_timeout_s": 20.0}


async def test_misbehaving_workers_end_with_reasons_and_leave_nothing(env: Env) -> None:
    outcomes: dict[str, TaskOutcome] = {}
    requests: dict[str, SuperviseRequest] = {}

    async def one(name: str) -> None:
        stall = {"stall_after_s": 0.4, "stall_kill_after_s": 0.4} if name == "stall" else {}
        manager = env.manager([], command=command_for(name), **FAST, **stall)
        kwargs: dict[str, Any] = {"type": TaskType.REVIEW}
        if name == "ignore_sigterm":
            kwargs["hard_timeout_ms"] = 800
        request = env.request(**kwargs)
        requests[name] = request
        outcomes[name] = await manager.supervise(request)

    async def healthy() -> None:
        turns = [
            tool_turn("fs.read", {"path": "src/app.py"}),
            text_turn(result_text("completed", "looks fine", {"verdict": "approved"})),
        ]
        request = env.request(type=TaskType.REVIEW)
        requests["healthy"] = request
        outcomes["healthy"] = await env.manager(turns, **FAST).supervise(request)

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            for name in MISBEHAVIOURS:
                nursery.start_soon(one, name)
            nursery.start_soon(healthy)

    healthy_result = outcomes["healthy"].result
    assert healthy_result is not None
    assert healthy_result.status == WorkerStatus.COMPLETED
    records = RunRecordStore(env.state_dir)
    for name, expected in MISBEHAVIOURS.items():
        outcome = outcomes[name]
        assert outcome.kind == expected, (name, outcome)
        agent_id = requests[name].agent_id
        record = records.read(agent_id)
        assert record is not None, name
        assert record["state"] == "terminal", name
        assert survivors(int(record["pid"]), str(record["marker"])) == [], name
        types = env.events.types(agent_id)
        assert types[0] == "agent.started", (name, types)
        if expected == "result":
            assert types[-1] == "agent.completed"
        else:
            assert types[-1] == "agent.failed", (name, types)
            failed = env.events.of_type("agent.failed", agent_id)[0]
            assert failed["error"]["message"], name
            assert outcome.error is not None
            assert outcome.error.message == failed["error"]["message"]

    codes = {}
    for n in ("garbage", "huge_line", "wrong_direction"):
        error = outcomes[n].error
        assert error is not None
        codes[n] = (error.metadata or {}).get("code")
    assert codes == {
        "garbage": "invalid_json",
        "huge_line": "line_too_long",
        "wrong_direction": "wrong_direction",
    }
    bad_version = outcomes["bad_version"].error
    assert bad_version is not None
    assert "protocol version mismatch" in bad_version.message
    assert outcomes["ignore_sigterm"].exit_code == 5
    assert outcomes["crash_in_tool"].transient
    assert outcomes["crash_in_tool"].exit_code == 1
    assert not outcomes["bad_version"].transient
    stalled = outcomes["stall"]
    assert stalled.transient
    assert stalled.error is not None
    assert stalled.error.kind == "worker_stalled"
    log_id = stalled.error.metadata["stderr_artifact_id"] if stalled.error.metadata else None
    assert log_id is not None
    assert "probe received" in read_text(env.artifacts.refs[str(log_id)].path)
