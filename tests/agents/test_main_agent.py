"""The Main Agent end to end on a real session DB, a real Scheduler (fake workers) and scripted
models (cassettes; a strict Anthropic server on 127.0.0.1 where a turn must stall for Esc)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from air.agents import MainAgentState, load_conversation
from air.contracts.project import OpenSessionOptions
from air.session.manager import SessionManager
from air.testing.fake_runner import FakeStep
from tests.agents.conftest import AgentEnv, json_turn, spec, text_turn, wait_until

S = MainAgentState


@pytest.fixture
def env(tmp_path: Path) -> Iterator[AgentEnv]:
    e = AgentEnv(tmp_path)
    yield e
    e.close()


def plan(*tasks: dict[str, object], needs_plan: bool = False) -> dict[str, object]:
    return {"summary": "The plan.", "needs_plan": needs_plan, "tasks": list(tasks)}


async def test_a_chat_turn_is_classified_streamed_and_stored(env: AgentEnv) -> None:
    env.cassette(json_turn({"intent": "chat"}), text_turn("air ", "runs ", "tasks."))
    agent = env.agent()
    async with env.running(agent):
        await agent.submit("what does air do?")
        await wait_until(lambda: env.path()[-1] == "IDLE" and len(env.path()) > 1)
        await env.session.bus.drain()
    assert env.path() == ["IDLE", "CLASSIFYING", "ANSWERING", "IDLE"]
    deltas = [e.payload["text"] for e in env.seen if e.type == "assistant.message.delta"]
    assert deltas == ["air ", "runs ", "tasks."]
    started = env.payloads("assistant.message.started")
    created = env.payloads("assistant.message.created")
    assert [p["message_id"] for p in started] == [p["message_id"] for p in created]
    assert [
        (r["role"], json.loads(r["content_json"])[0]["text"]) for r in env.rows("messages")
    ] == [
        ("user", "what does air do?"),
        ("assistant", "air runs tasks."),
    ]
    assert env.rows("message_drafts") == []
    # every transition names the message that caused it
    moves = env.payloads("main_agent.state.changed")
    user_id = env.payloads("user.message.created")[0]["message_id"]
    assert {m["message_id"] for m in moves} == {user_id}


async def test_a_task_request_becomes_specs_the_scheduler_runs_then_a_summary(
    env: AgentEnv,
) -> None:
    env.cassette(
        json_turn({"intent": "task"}),
        json_turn(plan(spec("t_add", "Add add()"), spec("t_test", "Test add()", after=["t_add"]))),
    )
    agent = env.agent()
    async with env.running(agent):
        await agent.submit("add an add() function with a test")
        await wait_until(lambda: "SUMMARIZING" in env.path() and env.path()[-1] == "IDLE")
    assert env.path() == [
        "IDLE",
        "CLASSIFYING",
        "DELEGATING",
        "SCHEDULING",
        "EXECUTING",
        "SUMMARIZING",
        "IDLE",
    ]
    created = env.payloads("task.created")
    assert [p["task_spec"]["id"] for p in created] == ["t_add", "t_test"]
    assert created[1]["dependencies"][0]["depends_on_task_id"] == "t_add"
    assert {r["id"]: r["status"] for r in env.rows("tasks")} == {
        "t_add": "completed",
        "t_test": "completed",
    }
    assert [r.task_id for r in env.runner.log.records] == ["t_add", "t_test"]
    texts = env.assistant_texts()
    assert texts[0].startswith("Scheduled:\nThe plan.")
    assert any(t.startswith("Progress: 2/2 tasks finished") for t in texts)
    assert texts[-1].splitlines() == [
        "Run completed.",
        "- t_add completed: Add add()",
        "- t_test completed: Test add()",
    ]


async def test_an_invalid_plan_gets_one_repair_round(env: AgentEnv) -> None:
    models = env.cassette(
        json_turn({"intent": "task"}),
        json_turn(plan({"id": "t_x", "type": "execute", "title": "X"})),  # no description
        json_turn(plan(spec("t_x", "X"))),
    )
    agent = env.agent()
    async with env.running(agent):
        await agent.submit("do x")
        await wait_until(lambda: env.path()[-1] == "IDLE" and "SUMMARIZING" in env.path())
    assert len(models.calls) == 3
    assert [p["task_spec"]["id"] for p in env.payloads("task.created")] == ["t_x"]


async def test_a_plan_with_a_deadline_no_clock_holds_is_repaired_not_run(env: AgentEnv) -> None:
    """``"hard_timeout_ms": 1e400`` (an int Python's json reads whole) ended the Main Agent with
    an OverflowError arming the task's deadline; now the repair round names the field."""
    huge = {**spec("t_x", "X"), "constraints": {"hard_timeout_ms": 10**400}}
    models = env.cassette(
        json_turn({"intent": "task"}), json_turn(plan(huge)), json_turn(plan(spec("t_x", "X")))
    )
    agent = env.agent()
    async with env.running(agent):
        await agent.submit("do x")
        await wait_until(lambda: env.path()[-1] == "IDLE" and "SUMMARIZING" in env.path())
    assert len(models.calls) == 3  # the plan, its repair
    (created,) = env.payloads("task.created")
    assert created["task_spec"]["constraints"]["hard_timeout_ms"] == 900_000


async def test_a_plan_invalid_twice_is_a_clear_failure_and_nothing_runs(env: AgentEnv) -> None:
    bad = plan(spec("t_x", "X"), spec("t_x", "X again"))
    env.cassette(json_turn({"intent": "task"}), json_turn(bad), text_turn("sorry, no JSON"))
    agent = env.agent()
    async with env.running(agent):
        await agent.submit("do x")
        await wait_until(lambda: env.path()[-1] == "IDLE" and len(env.path()) > 1)
    assert env.path() == ["IDLE", "CLASSIFYING", "DELEGATING", "IDLE"]
    assert env.payloads("task.created") == []
    (failed,) = env.payloads("assistant.message.failed")
    assert failed["error"]["kind"] == "validation_error"
    assert "repair" in failed["error"]["message"]
    assert "JSON" in failed["error"]["detail"]
    assert failed["error"]["user_action"]
    (draft,) = env.rows("message_drafts")
    assert draft["status"] == "error"


async def test_a_plan_that_needs_confirmation_is_shown_and_runs_only_on_yes(
    env: AgentEnv,
) -> None:
    env.cassette(
        json_turn({"intent": "task"}),
        json_turn(plan(spec("t_api", "Change the public API"), needs_plan=True)),
        json_turn({"result_class": "requires_user_confirmation", "summary": "API changes."}),
        json_turn({"intent": "task"}),
        json_turn(plan(spec("t_api2", "Change it again"), needs_plan=True)),
        json_turn({"result_class": "requires_user_confirmation", "summary": "Again."}),
    )
    agent = env.agent()
    async with env.running(agent):
        await agent.submit("rename the public API")
        await wait_until(lambda: agent.state is S.CONFIRMING)
        assert env.payloads("task.created") == []
        assert "Run this plan?" in env.assistant_texts()[-1]
        assert "[t_api] Change the public API" in env.assistant_texts()[-1]
        await agent.submit("maybe")  # not an answer: asked again, still confirming
        await wait_until(lambda: env.assistant_texts()[-1].startswith("Reply yes"))
        assert agent.state is S.CONFIRMING
        await agent.submit("yes")
        await wait_until(lambda: "SUMMARIZING" in env.path() and agent.state is S.IDLE)
        await agent.submit("and again")
        await wait_until(lambda: agent.state is S.CONFIRMING)
        await agent.submit_confirmation(False)
        await wait_until(lambda: agent.state is S.IDLE)
    assert env.path() == [
        "IDLE",
        "CLASSIFYING",
        "DELEGATING",
        "ARCHITECTURE_DESIGNING",
        "CONFIRMING",
        "EXECUTING",
        "SUMMARIZING",
        "IDLE",
        "CLASSIFYING",
        "DELEGATING",
        "ARCHITECTURE_DESIGNING",
        "CONFIRMING",
        "IDLE",
    ]
    assert [p["task_spec"]["id"] for p in env.payloads("task.created")] == ["t_api"]


async def test_an_execution_only_change_while_executing_resumes(env: AgentEnv) -> None:
    env.runner.script["t_long"] = [FakeStep(duration=1.0)]
    env.cassette(
        json_turn({"intent": "task"}),
        json_turn(plan(spec("t_long", "Long work"))),
        json_turn({"change_class": "execution", "impacted_task_ids": ["t_long", "t_ghost"]}),
    )
    agent = env.agent()
    async with env.running(agent):
        await agent.submit("do the long work")
        await wait_until(lambda: env.runner.log.records != [])
        assert agent.state is S.EXECUTING
        await agent.submit("use tabs, not spaces")
        await wait_until(lambda: env.path()[-1] == "IDLE" and "SUMMARIZING" in env.path())
    (change,) = env.payloads("requirement.changed")
    assert change["change_class"] == "execution"
    assert change["description"] == "use tabs, not spaces"
    assert change["impacted_task_ids"] == ["t_long"]
    assert change["origin_message_id"] == env.payloads("user.message.created")[1]["message_id"]
    assert env.path()[4:] == ["EXECUTING", "INTERRUPTING", "EXECUTING", "SUMMARIZING", "IDLE"]
    assert env.rows("tasks")[0]["status"] == "completed"
    assert not env.runner.log.records[0].cancelled


async def test_a_design_change_while_executing_replans_and_runs_after_confirmation(
    env: AgentEnv,
) -> None:
    env.runner.script["t_long"] = [FakeStep(duration=0.5)]
    env.cassette(
        json_turn({"intent": "task"}),
        json_turn(plan(spec("t_long", "Long work"))),
        json_turn({"change_class": "design_interface_goal"}),
        json_turn(plan(spec("t_new", "Follow the new interface"))),
        json_turn({"result_class": "silent_continue", "summary": "Fits."}),
    )
    agent = env.agent()
    async with env.running(agent):
        await agent.submit("do the long work")
        await wait_until(lambda: env.runner.log.records != [])
        await agent.submit("actually the interface must take a list")
        await wait_until(lambda: agent.state is S.CONFIRMING)
        await wait_until(lambda: env.runner.log.records[0].ended_at is not None)
        await trio.sleep(0.05)  # the first run ends while the person reads the new plan
        await agent.submit("yes")
        await wait_until(lambda: env.path()[-1] == "IDLE" and "SUMMARIZING" in env.path())
    assert env.path()[4:] == [
        "EXECUTING",
        "INTERRUPTING",
        "ARCHITECTURE_REVISING",
        "CONFIRMING",
        "EXECUTING",
        "SUMMARIZING",
        "IDLE",
    ]
    assert env.payloads("requirement.changed")[0]["change_class"] == "design_interface_goal"
    assert {r["id"]: r["status"] for r in env.rows("tasks")} == {
        "t_long": "completed",
        "t_new": "completed",
    }


async def test_the_conversation_is_rebuilt_from_the_database(env: AgentEnv) -> None:
    env.cassette(json_turn({"intent": "chat"}), text_turn("Hello."))
    agent = env.agent()
    async with env.running(agent):
        await agent.submit("hi")
        await wait_until(lambda: env.path()[-1] == "IDLE" and len(env.path()) > 1)
    # a turn that was streaming when the process died leaves a draft
    await env.session.ingestor.ingest(
        env.session.event("assistant.message.started", {"message_id": "msg_dead"})
    )
    sid = env.session.session_id
    env.session.close()
    # a new process: a fresh SessionManager reopens the session from its file
    env.session = SessionManager().open_session(
        env.project, OpenSessionOptions(session_id=sid), must_exist=True
    )
    entries = load_conversation(env.session.store.messages, env.session.store.message_drafts, sid)
    assert [(e.role, e.text, e.status) for e in entries] == [
        ("user", "hi", "complete"),
        ("assistant", "Hello.", "complete"),
        ("assistant", "", "interrupted"),
    ]
    env.cassette(json_turn({"intent": "chat"}), text_turn("Again."))
    reopened = env.agent(history=entries)
    assert [m.role for m in await reopened._model_messages()] == ["user", "assistant"]


async def test_a_blocked_task_is_presented_and_named_in_the_summary(env: AgentEnv) -> None:
    env.runner.script["t_stuck"] = [FakeStep(duration=0.05, ending="blocked")]
    env.cassette(json_turn({"intent": "task"}), json_turn(plan(spec("t_stuck", "Stuck work"))))
    agent = env.agent()
    async with env.running(agent):
        await agent.submit("do the stuck work")
        await wait_until(lambda: env.path()[-1] == "IDLE" and "SUMMARIZING" in env.path())
        await wait_until(lambda: any("is blocked" in t for t in env.assistant_texts()))
    (blocked,) = env.payloads("task.blocked")
    texts = env.assistant_texts()
    notice = next(t for t in texts if "is blocked" in t)
    assert notice.startswith("Task t_stuck (Stuck work) is blocked: ")
    assert blocked["reason"] in notice
    summary = next(t for t in texts if t.startswith("Run "))
    # the reason is added when the bus delivered task.blocked before the run's end was seen
    assert any(line.startswith("- t_stuck blocked: Stuck work") for line in summary.splitlines())
