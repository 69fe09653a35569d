"""``/model PROVIDER/MODEL`` at the Main Agent (issue 24 item 4): a configured model becomes the
Main Agent's and the session row's (``session.model.changed``), tasks made afterwards record it
in their spec; a model not configured is refused with ``config_error`` and changes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from air.contracts.error import AirException
from tests.agents.conftest import AgentEnv, json_turn, spec, wait_until


@pytest.fixture
def env(tmp_path: Path) -> Iterator[AgentEnv]:
    e = AgentEnv(tmp_path)
    yield e
    e.close()


async def test_a_switch_is_recorded_and_names_the_model_of_later_tasks(env: AgentEnv) -> None:
    env.cassette(
        json_turn({"intent": "task"}),
        json_turn({"summary": "One.", "needs_plan": False, "tasks": [spec("t_a", "Work A")]}),
    )
    agent = env.agent()
    async with env.running(agent):
        await agent.switch_model("scripted/scripted")
        await agent.submit("do it")
        await wait_until(lambda: env.path()[-1] == "IDLE" and "SUMMARIZING" in env.path())
    (changed,) = env.payloads("session.model.changed")
    assert changed["model_provider_id"] == "scripted"
    assert changed["model_id"] == "scripted"
    (created,) = env.payloads("task.created")
    assert created["task_spec"]["constraints"]["model_id"] == "scripted/scripted"
    (row,) = env.rows("sessions")
    assert (row["model_provider_id"], row["model_id"]) == ("scripted", "scripted")


async def test_tasks_made_without_a_switch_name_no_model(env: AgentEnv) -> None:
    env.cassette(
        json_turn({"intent": "task"}),
        json_turn({"summary": "One.", "needs_plan": False, "tasks": [spec("t_a", "Work A")]}),
    )
    agent = env.agent()
    async with env.running(agent):
        await agent.submit("do it")
        await wait_until(lambda: env.path()[-1] == "IDLE" and "SUMMARIZING" in env.path())
    (created,) = env.payloads("task.created")
    assert created["task_spec"]["constraints"]["model_id"] is None


async def test_a_model_not_configured_is_refused_and_changes_nothing(env: AgentEnv) -> None:
    env.cassette()
    agent = env.agent()
    before = agent.turns.model
    with pytest.raises(AirException) as caught:
        await agent.switch_model("nope/x")
    assert caught.value.kind.value == "config_error"
    assert agent.turns.model == before
    assert agent.task_model is None
    assert env.payloads("session.model.changed") == []
