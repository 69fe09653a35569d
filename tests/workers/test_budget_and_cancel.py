"""Budgets end ``partial`` with the wrap-up answer delivered; cancellation kills the whole tree
and records ``agent.cancelled``; tool output over the caps goes to an artifact; the worker child
never imports the store, tools, providers or their HTTP/UI libraries."""

from __future__ import annotations

import json
import sys

import pytest
import trio

from air.contracts.ids import new_id
from air.contracts.provider import ModelPrice
from air.contracts.task import TaskType
from air.contracts.worker_result import WorkerStatus
from air.supervision.runs import RunRecordStore
from air.supervision.task_outcome import TaskOutcome
from air.testing.workers import command_for
from tests.workers.conftest import Env, read_text, result_text, survivors, text_turn, tool_turn


async def test_max_turns_breach_wraps_up_and_ends_partial(env: Env) -> None:
    turns = [
        tool_turn("fs.read", {"path": "src/app.py"}),
        tool_turn("fs.list", {"path": "src"}),
        text_turn(
            result_text(
                "completed",
                "wrapped up early",
                {"verdict": "changes_requested", "findings": ["VALUE is 1"]},
            )
        ),
    ]
    request = env.request(type=TaskType.REVIEW, max_turns=2)
    outcome = await env.manager(turns, grace_turns=2).supervise(request)
    assert outcome.kind == "result"
    result = outcome.result
    assert result is not None
    assert result.status == WorkerStatus.PARTIAL
    assert result.stop_reason == "max_turns"
    assert result.result == {"verdict": "changes_requested", "findings": ["VALUE is 1"]}
    assert result.usage is not None
    assert result.usage["wrapped_up"] is True
    assert result.usage["turns"] == 3


async def test_cost_breach_wraps_up_and_ends_partial_with_the_answer(env: Env) -> None:
    # 10 input + 5 output tokens a turn at $1,000 / $2,000 per million tokens = $0.02 a turn:
    # after two paid turns the spend ($0.04) passes max_cost_usd ($0.03) while max_turns (20)
    # is far away, so only the cost budget can trigger the wrap-up.
    price = ModelPrice(input=1000.0, output=2000.0)
    turns = [
        tool_turn("fs.read", {"path": "src/app.py"}),
        tool_turn("fs.list", {"path": "src"}),
        text_turn(
            result_text(
                "completed",
                "wrapped up on cost",
                {"verdict": "changes_requested", "findings": ["VALUE is 1"]},
            )
        ),
        text_turn("this turn must never be requested"),
    ]
    request = env.request(type=TaskType.REVIEW, max_cost_usd=0.03)
    outcome = await env.manager(turns, price=price, grace_turns=2).supervise(request)
    assert outcome.kind == "result"
    result = outcome.result
    assert result is not None
    assert result.status == WorkerStatus.PARTIAL
    assert result.stop_reason == "max_cost"
    assert result.summary == "wrapped up on cost"
    assert result.result == {"verdict": "changes_requested", "findings": ["VALUE is 1"]}
    assert result.usage is not None
    assert result.usage["wrapped_up"] is True
    assert result.usage["turns"] == 3
    assert result.usage["cost_usd"] == pytest.approx(0.06)


async def test_grace_exhausted_forces_partial_stop_keeping_text(env: Env) -> None:
    turns = [
        tool_turn("fs.read", {"path": "src/app.py"}, "first look"),
        tool_turn("fs.list", {"path": "src"}, "still looking"),
        tool_turn("fs.list", {"path": "."}, "ignoring the wrap-up"),
    ]
    request = env.request(type=TaskType.REVIEW, max_turns=2)
    outcome = await env.manager(turns, grace_turns=1).supervise(request)
    result = outcome.result
    assert result is not None
    assert result.status == WorkerStatus.PARTIAL
    assert result.stop_reason == "max_turns"
    assert result.raw_text == "ignoring the wrap-up"
    assert result.error is not None
    assert result.error.kind == "budget_exceeded"


async def test_scope_cancellation_kills_tree_and_records_cancelled(env: Env) -> None:
    manager = env.manager([], command=command_for("stall"), kill_grace_s=0.5)
    request = env.request(type=TaskType.REVIEW)
    with trio.move_on_after(1.5) as scope:
        await manager.supervise(request)
    assert scope.cancelled_caught
    types = env.events.types(request.agent_id)
    assert types == ["agent.started", "agent.cancelled"]
    record = RunRecordStore(env.state_dir).read(request.agent_id)
    assert record is not None
    assert record["terminal_state"] == "cancelled"
    assert survivors(int(record["pid"]), str(record["marker"])) == []


async def test_manager_cancel_sends_control_then_kills(env: Env) -> None:
    manager = env.manager([], command=command_for("stall"), kill_grace_s=0.3, exit_grace_s=0.3)
    request = env.request(type=TaskType.REVIEW)
    async with trio.open_nursery() as nursery:
        box: list[TaskOutcome] = []

        async def run() -> None:
            box.append(await manager.supervise(request))

        nursery.start_soon(run)
        for _ in range(400):
            if env.events.of_type("agent.started", request.agent_id):
                break
            await trio.sleep(0.05)
        await manager.cancel(request.agent_id, "user asked")
    outcome = box[0]
    assert outcome.error is not None
    assert outcome.error.kind == "cancelled"
    cancelled = env.events.of_type("agent.cancelled", request.agent_id)
    assert cancelled[0]["reason"] == "user asked"


async def test_big_tool_output_is_capped_with_the_full_text_in_an_artifact(env: Env) -> None:
    from air.contracts.tool_runs import ToolExecutionContext, ToolResultEnvelope

    big = "\n".join(f"line {i}" for i in range(5000))

    async def router(
        name: str, input: dict[str, object], ctx: ToolExecutionContext
    ) -> ToolResultEnvelope:
        return ToolResultEnvelope(tool_run_id=new_id("tr"), tool_name=name, status="ok", output=big)

    manager = env.manager(
        [
            tool_turn("big.dump", {}),
            text_turn(result_text("completed", "ok", {"verdict": "approved"})),
        ]
    )
    manager.tools, manager.tool_streams = router, None
    request = env.request(type=TaskType.REVIEW)
    outcome = await manager.supervise(request)
    assert outcome.result is not None
    assert outcome.result.status == WorkerStatus.COMPLETED
    full = [r for r in env.artifacts.refs.values() if r.path.endswith("big.dump-output.txt")]
    assert len(full) == 1
    assert read_text(full[0].path) == big


@pytest.mark.parametrize(
    "forbidden",
    [("anthropic", "httpx", "urwid", "sqlite3", "air.tools", "air.llm", "air.store", "air.events")],
)
async def test_worker_child_stays_lean(env: Env, forbidden: tuple[str, ...]) -> None:
    probe = (
        "import atexit, runpy, sys\n"
        "def dump():\n"
        "    sys.stderr.write('MODULES=' + json.dumps(sorted(sys.modules)) + '\\n')\n"
        "atexit.register(dump)\n"
        "import json\n"
        "sys.argv = ['air.roles']\n"
        "runpy.run_module('air.roles', run_name='__main__', alter_sys=True)\n"
    )
    turns = [text_turn(result_text("completed", "ok", {"verdict": "approved"}))]
    manager = env.manager(turns, command=[sys.executable, "-c", probe])
    request = env.request(type=TaskType.REVIEW)
    outcome = await manager.supervise(request)
    assert outcome.result is not None
    assert outcome.result.status == WorkerStatus.COMPLETED
    logs = [r for r in env.artifacts.refs.values() if "worker-stderr" in r.path]
    assert len(logs) == 1
    line = next(x for x in read_text(logs[0].path).splitlines() if x.startswith("MODULES="))
    modules = set(json.loads(line.removeprefix("MODULES=")))
    assert "air.roles.loop" in modules
    leaked = {m for m in modules for f in forbidden if m == f or m.startswith(f + ".")}
    assert leaked == set()
