"""A correction while two tasks run (issue 24 item 3), the Main Agent's side: an execution
change is delivered to both running workers and ``requirement.delivered`` names both tasks; a
change the model says contradicts a running task cancels that task and plans again. Real session
DB and Scheduler, the fake runner (``FakeTaskRunner.steer``), cassette models."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from air.agents import MainAgentState
from air.testing.fake_runner import FakeStep
from tests.agents.conftest import AgentEnv, json_turn, spec, wait_until

S = MainAgentState


@pytest.fixture
def env(tmp_path: Path) -> Iterator[AgentEnv]:
    e = AgentEnv(tmp_path)
    yield e
    e.close()


def _two_tasks() -> dict[str, object]:
    return {
        "summary": "Two tasks.",
        "needs_plan": False,
        "tasks": [spec("t_a", "Work A", area="a.txt"), spec("t_b", "Work B", area="b.txt")],
    }


def _running(env: AgentEnv) -> set[str]:
    return {r.task_id for r in env.runner.log.records if r.ended_at is None}


async def test_an_execution_change_reaches_both_running_workers_and_is_recorded(
    env: AgentEnv,
) -> None:
    env.runner.script["t_a"] = [FakeStep(duration=1.0)]
    env.runner.script["t_b"] = [FakeStep(duration=1.0)]
    env.cassette(
        json_turn({"intent": "task"}),
        json_turn(_two_tasks()),
        json_turn({"change_class": "execution", "contradicted_task_ids": []}),
    )
    agent = env.agent(steering=env.runner)
    async with env.running(agent):
        await agent.submit("do both")
        await wait_until(lambda: _running(env) == {"t_a", "t_b"})
        await agent.submit("use tabs, not spaces")
        await wait_until(lambda: env.path()[-1] == "IDLE" and "SUMMARIZING" in env.path())
    notes = {r.task_id: r.notes for r in env.runner.log.records}
    assert notes == {"t_a": ["use tabs, not spaces"], "t_b": ["use tabs, not spaces"]}
    (change,) = env.payloads("requirement.changed")
    (delivered,) = env.payloads("requirement.delivered")
    assert delivered["requirement_id"] == change["requirement_id"]
    assert delivered["description"] == "use tabs, not spaces"
    assert sorted(delivered["task_ids"]) == ["t_a", "t_b"]
    assert len(delivered["agent_ids"]) == 2
    said = [t for t in env.assistant_texts() if t.startswith("Sent to the running work")]
    assert len(said) == 1
    assert "t_a" in said[0]
    assert "t_b" in said[0]
    assert "Noted for the running work; it continues." not in env.assistant_texts()
    assert env.path()[4:] == ["EXECUTING", "INTERRUPTING", "EXECUTING", "SUMMARIZING", "IDLE"]
    assert not any(r.cancelled for r in env.runner.log.records)


async def test_a_correction_that_contradicts_a_task_cancels_it_and_plans_again(
    env: AgentEnv,
) -> None:
    env.runner.script["t_a"] = [FakeStep(duration=5.0)]
    env.runner.script["t_b"] = [FakeStep(duration=0.5)]
    env.cassette(
        json_turn({"intent": "task"}),
        json_turn(_two_tasks()),
        json_turn(
            {
                "change_class": "execution",
                "impacted_task_ids": ["t_a"],
                "contradicted_task_ids": ["t_a", "t_ghost"],
            }
        ),
        json_turn(
            {"summary": "Redo A.", "needs_plan": False, "tasks": [spec("t_a2", "Work A again")]}
        ),
        json_turn({"result_class": "silent_continue", "summary": "Fits."}),
    )
    agent = env.agent(steering=env.runner)
    async with env.running(agent):
        await agent.submit("do both")
        await wait_until(lambda: _running(env) == {"t_a", "t_b"})
        await agent.submit("A must write JSON, not YAML")
        await wait_until(lambda: agent.state is S.CONFIRMING)
        await agent.submit("yes")
        await wait_until(lambda: env.path()[-1] == "IDLE" and "SUMMARIZING" in env.path())
    first = next(r for r in env.runner.log.records if r.task_id == "t_a")
    assert first.cancelled
    assert first.notes == []
    assert env.payloads("requirement.delivered") == []
    assert "Cancelled t_a: the correction contradicts them; planning again." in (
        env.assistant_texts()
    )
    assert "ARCHITECTURE_REVISING" in env.path()
    statuses = {r["id"]: r["status"] for r in env.rows("tasks")}
    assert statuses["t_a"] == "cancelled"
    assert statuses["t_a2"] == "completed"


async def test_without_a_steering_port_the_event_says_no_task_got_it(env: AgentEnv) -> None:
    env.runner.script["t_a"] = [FakeStep(duration=1.0)]
    env.cassette(
        json_turn({"intent": "task"}),
        json_turn({"summary": "One.", "needs_plan": False, "tasks": [spec("t_a", "Work A")]}),
        json_turn({"change_class": "execution"}),
    )
    agent = env.agent()
    async with env.running(agent):
        await agent.submit("do it")
        await wait_until(lambda: _running(env) == {"t_a"})
        await agent.submit("use tabs")
        await wait_until(lambda: env.path()[-1] == "IDLE" and "SUMMARIZING" in env.path())
    (delivered,) = env.payloads("requirement.delivered")
    assert delivered["task_ids"] == []
    assert delivered["agent_ids"] == []
    assert "No task was running to take it; the work continues." in env.assistant_texts()
    assert env.runner.log.records[0].notes == []
