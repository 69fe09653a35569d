"""Esc, direct mode and the UiCommandChannel, on a real session with a real Scheduler.

Esc needs a model turn that is still streaming: those tests talk to a ``StrictServer`` on
127.0.0.1 over the real anthropic SDK, with a reply that stalls after its first text delta.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from air.agents import MainAgentChannel, MainAgentState, PendingPrompts
from air.contracts.error import AirException
from air.contracts.ui import UiCommand
from air.testing.fake_runner import FakeStep
from air.testing.strict_servers import StrictServer
from air.testing.wire_replies import Reply, Turn, anthropic_sse
from tests.agents.conftest import (
    KEY,
    AgentEnv,
    AllowAll,
    PendingBroker,
    json_turn,
    spec,
    text_turn,
    tool_turn,
    wait_until,
)

S = MainAgentState


@pytest.fixture
def env(tmp_path: Path) -> Iterator[AgentEnv]:
    e = AgentEnv(tmp_path)
    yield e
    e.close()


def sse_json(value: object) -> Reply:
    return Reply(chunks=anthropic_sse(Turn(text=[json.dumps(value)])))


def stalled(*pieces: str) -> Reply:
    """A text reply that stops after its first delta (message_start, block_start, ping,
    delta 1)."""
    return Reply(chunks=anthropic_sse(Turn(text=list(pieces))), stall_after=4, stall_s=3.0)


def plan(*tasks: dict[str, object]) -> dict[str, object]:
    return {"summary": "The plan.", "tasks": list(tasks)}


# -- Esc -----------------------------------------------------------------------------------


async def test_esc_interrupts_the_streaming_answer_and_the_agent_stays_ready(
    env: AgentEnv,
) -> None:
    with StrictServer(api_key=KEY) as server:
        server.push(
            sse_json({"intent": "chat"}),
            stalled("Let me ", "think about it at length"),
            sse_json({"intent": "chat"}),
            Reply(chunks=anthropic_sse(Turn(text=["Short answer."]))),
        )
        env.strict_models(server.url)
        agent = env.agent()
        channel = MainAgentChannel(agent, env.scheduler, PendingPrompts())
        async with env.running(agent):
            await channel.send(UiCommand(kind="user_message", text="explain everything"))
            await wait_until(lambda: any(e.type == "assistant.message.delta" for e in env.seen))
            assert agent.state is S.ANSWERING
            await channel.send(UiCommand(kind="interrupt"))
            await wait_until(lambda: agent.state is S.IDLE)
            await channel.send(UiCommand(kind="user_message", text="short, please"))
            await wait_until(lambda: len(env.payloads("assistant.message.created")) == 1)
        assert server.rejected == []
    (failed,) = env.payloads("assistant.message.failed")
    assert failed["error"]["kind"] == "cancelled"
    assert env.rows("message_drafts")[0]["status"] == "error"
    assert env.assistant_texts() == ["Short answer."]
    assert env.path() == ["IDLE", *["CLASSIFYING", "ANSWERING", "IDLE"] * 2]
    # the second request carries the conversation without the interrupted turn
    roles = [m["role"] for m in server.requests[-1].body["messages"]]
    assert roles == ["user"]
    assert "explain everything" in json.dumps(server.requests[-1].body["messages"])


async def test_esc_while_executing_stops_the_turn_and_no_task(env: AgentEnv) -> None:
    env.runner.script["t_long"] = [FakeStep(duration=1.0)]
    with StrictServer(api_key=KEY) as server:
        server.push(
            sse_json({"intent": "task"}),
            sse_json(plan(spec("t_long", "Long work"))),
            stalled('{"change_', 'class": "execution"}'),
        )
        env.strict_models(server.url)
        agent = env.agent()
        async with env.running(agent):
            await agent.submit("do the long work")
            await wait_until(lambda: env.runner.log.records != [])
            await agent.submit("one more thing")
            await wait_until(lambda: agent.state is S.INTERRUPTING and agent.turns.in_turn)
            assert agent.interrupt()
            await wait_until(lambda: env.path()[-1] == "IDLE" and "SUMMARIZING" in env.path())
    assert env.path()[4:] == ["EXECUTING", "INTERRUPTING", "EXECUTING", "SUMMARIZING", "IDLE"]
    assert env.payloads("requirement.changed") == []
    assert env.rows("tasks")[0]["status"] == "completed"
    assert not env.runner.log.records[0].cancelled
    assert not agent.interrupt()  # nothing to interrupt now


# -- direct mode ---------------------------------------------------------------------------


async def test_direct_mode_writes_in_the_main_workspace_through_the_registry(
    env: AgentEnv,
) -> None:
    env.cassette(
        tool_turn("toolu_1", "fs.write", {"path": "notes.txt", "content": "direct\n"}),
        text_turn("Wrote notes.txt."),
    )
    agent = env.agent()
    async with env.running(agent):
        await agent.submit("/direct write the notes")
        await wait_until(lambda: len(env.payloads("assistant.message.created")) == 1)
        assert agent.state is S.DIRECT_MODE
        await agent.submit("/done")
        await wait_until(lambda: agent.state is S.IDLE)
    assert (env.root / "notes.txt").read_text() == "direct\n"
    (run,) = env.rows("tool_runs")
    assert run["tool_name"] == "fs.write"
    assert run["status"] == "ok"
    user_ids = [p["message_id"] for p in env.payloads("user.message.created")]
    assert run["origin_message_id"] == user_ids[0]
    (decision,) = env.payloads("permission.decision.recorded")
    assert decision["decision"]["action"] == "allow"
    assert env.path() == ["IDLE", "CLASSIFYING", "DIRECT_MODE", "IDLE"]
    assert env.assistant_texts() == ["Wrote notes.txt."]


async def test_a_number_no_json_holds_in_a_direct_tool_call_is_told_to_the_model(
    tmp_path: Path,
) -> None:
    """The model's server sends ``"timeout_s": NaN`` (Python's json reads it): the registry
    refuses it as invalid input, the model hears why and answers; it ended the Main Agent (and
    the console around it) with a ValueError from ``trio.move_on_after`` (IMPL-NUM-1)."""
    env = AgentEnv(tmp_path, prompts=AllowAll())
    args = '{"command": "touch ran.txt", "timeout_s": NaN}'
    try:
        with StrictServer(api_key=KEY) as server:
            server.push(
                Reply(
                    chunks=anthropic_sse(
                        Turn(tool=("toolu_1", "shell_run", [args]), stop="tool_use")
                    )
                ),
                Reply(chunks=anthropic_sse(Turn(text=["The timeout was no number."]))),
            )
            env.strict_models(server.url)
            agent = env.agent()
            async with env.running(agent):
                await agent.submit("/direct touch a file")
                await wait_until(lambda: len(env.payloads("assistant.message.created")) == 1)
                assert agent.state is S.DIRECT_MODE
            assert server.rejected == []
            told = json.dumps(server.requests[-1].body["messages"][-1])
        assert "input.timeout_s is nan, which is no JSON number" in told
        assert env.assistant_texts() == ["The timeout was no number."]
        assert not (env.root / "ran.txt").exists()
        assert env.rows("tool_runs") == []
    finally:
        env.close()


async def test_direct_mode_cannot_write_outside_the_main_workspace_even_if_approved(
    tmp_path: Path,
) -> None:
    env = AgentEnv(tmp_path, prompts=AllowAll())  # a person who would approve anything
    try:
        victim = env.outside / "victim.txt"
        env.cassette(
            tool_turn("toolu_1", "fs.write", {"path": str(victim), "content": "owned"}),
            tool_turn("toolu_2", "fs.write", {"path": "../outside/v2.txt", "content": "owned"}),
            tool_turn("toolu_3", "fs.write", {"path": ".air/shared/x.md", "content": "owned"}),
            text_turn("Could not write there."),
        )
        agent = env.agent()
        async with env.running(agent):
            await agent.submit("/direct write outside")
            await wait_until(lambda: len(env.payloads("assistant.message.created")) == 1)
        assert not victim.exists()
        assert not (env.outside / "v2.txt").exists()
        assert not (env.root / ".air" / "shared" / "x.md").exists()
        assert env.rows("tool_runs") == []  # refused before anything ran
        actions = [d["decision"]["action"] for d in env.payloads("permission.decision.recorded")]
        assert actions == ["block", "block", "deny"]  # .air is air's own: denied outright
        assert env.payloads("permission.prompt.requested") == []
    finally:
        env.close()


async def test_a_permission_answer_reaches_the_waiting_prompt(tmp_path: Path) -> None:
    pending = PendingPrompts()
    broker = PendingBroker(pending)
    env = AgentEnv(tmp_path, prompts=broker)
    try:
        env.cassette(
            tool_turn("toolu_1", "fs.write", {"path": ".env", "content": "A=1\n"}),
            tool_turn("toolu_2", "fs.write", {"path": ".env", "content": "A=2\n"}),
            text_turn("Done."),
        )
        agent = env.agent()
        channel = MainAgentChannel(agent, env.scheduler, pending)
        async with env.running(agent):
            await channel.send(UiCommand(kind="direct", text="set A"))
            await wait_until(lambda: len(pending.open()) == 1)
            first = pending.open()[0]
            with pytest.raises(AirException) as caught:
                await channel.send(
                    UiCommand(kind="permission_response", prompt_id="prm_nope", decision="deny")
                )
            assert caught.value.kind == "validation_error"
            await channel.send(
                UiCommand(kind="permission_response", prompt_id=first, decision="allow_once")
            )
            await wait_until(lambda: len(pending.open()) == 1 and pending.open()[0] != first)
            await channel.send(
                UiCommand(kind="permission_response", prompt_id=pending.open()[0], decision="deny")
            )
            await wait_until(lambda: len(env.payloads("assistant.message.created")) == 1)
        assert (env.root / ".env").read_text() == "A=1\n"
        resolved = env.payloads("permission.prompt.resolved")
        assert [(r["prompt_id"] == first, r["decision"]) for r in resolved] == [
            (True, "allow_once"),
            (False, "deny"),
        ]
        assert [r["status"] for r in env.rows("tool_runs")] == ["ok"]  # the denied one never ran
        actions = [d["decision"]["action"] for d in env.payloads("permission.decision.recorded")]
        assert actions == ["ask_user", "allow", "ask_user", "deny"]
    finally:
        env.close()


async def test_direct_mode_commands_outside_their_state_change_nothing(env: AgentEnv) -> None:
    env.runner.script["t_long"] = [FakeStep(duration=0.5)]
    env.cassette(json_turn({"intent": "task"}), json_turn(plan(spec("t_long", "Long"))))
    agent = env.agent()
    async with env.running(agent):
        await agent.submit("/done")
        await wait_until(lambda: len(env.assistant_texts()) == 1)
        assert env.path() == ["IDLE"]  # no transition
        await agent.submit("do the long work")
        await wait_until(lambda: env.runner.log.records != [])
        await agent.submit("/direct edit it myself")
        await wait_until(lambda: any("Direct mode starts only" in t for t in env.assistant_texts()))
        assert agent.state is S.EXECUTING
        await wait_until(lambda: env.path()[-1] == "IDLE" and "SUMMARIZING" in env.path())
    assert env.assistant_texts()[0].startswith("Direct mode is not on")
    assert env.payloads("requirement.changed") == []
    assert "DIRECT_MODE" not in env.path()
    assert (env.root / "notes.txt").exists() is False


# -- the channel ---------------------------------------------------------------------------


async def test_cancel_task_cancels_exactly_that_task(env: AgentEnv) -> None:
    env.runner.script["t_a"] = [FakeStep(duration=30.0)]
    env.runner.script["t_b"] = [FakeStep(duration=0.5)]
    env.cassette(
        json_turn({"intent": "task"}),
        json_turn(plan(spec("t_a", "A", area="a/"), spec("t_b", "B", area="b/"))),
    )
    agent = env.agent()
    channel = MainAgentChannel(agent, env.scheduler, PendingPrompts())
    async with env.running(agent):
        await channel.send(UiCommand(kind="user_message", text="do a and b"))
        await wait_until(lambda: len(env.runner.log.records) == 2)
        await channel.send(UiCommand(kind="cancel_task", task_id="t_a"))
        await wait_until(lambda: env.path()[-1] == "IDLE" and "SUMMARIZING" in env.path())
    assert {r["id"]: r["status"] for r in env.rows("tasks")} == {
        "t_a": "cancelled",
        "t_b": "completed",
    }
    summary = env.assistant_texts()[-1]
    assert "- t_b completed: B" in summary
    assert "- t_a cancelled: A" in summary


async def test_cancel_run_ends_running_tasks_interrupted_and_force_goes_to_the_hook(
    env: AgentEnv,
) -> None:
    env.runner.script["t_a"] = [FakeStep(duration=30.0)]
    forced: list[bool] = []
    env.cassette(json_turn({"intent": "task"}), json_turn(plan(spec("t_a", "A"))))
    agent = env.agent()
    channel = MainAgentChannel(
        agent, env.scheduler, PendingPrompts(), on_force_cancel=lambda: forced.append(True)
    )
    async with env.running(agent):
        await channel.send(UiCommand(kind="user_message", text="do a"))
        await wait_until(lambda: len(env.runner.log.records) == 1)
        await channel.send(UiCommand(kind="cancel_run", force=True))
        assert forced == [True]
        assert agent.state is S.EXECUTING
        await channel.send(UiCommand(kind="cancel_run"))
        await wait_until(lambda: env.path()[-1] == "IDLE" and "SUMMARIZING" in env.path())
    assert env.rows("tasks")[0]["status"] == "interrupted"
    summary = env.assistant_texts()[-1]
    assert summary.startswith("Run cancelled.")
    assert "- t_a interrupted: A" in summary  # the task's own end, not the run's word


async def test_commands_missing_their_field_are_clear_errors(env: AgentEnv) -> None:
    env.cassette()
    agent = env.agent()
    channel = MainAgentChannel(agent, env.scheduler, PendingPrompts())
    for command in (
        UiCommand(kind="user_message"),
        UiCommand(kind="cancel_task"),
        UiCommand(kind="permission_response", prompt_id="prm_1"),
        UiCommand(kind="confirm"),
    ):
        with pytest.raises(AirException) as caught:
            await channel.send(command)
        assert caught.value.kind == "validation_error"
        assert caught.value.user_action
    quits: list[bool] = []

    async def on_quit(force: bool) -> None:
        quits.append(force)

    channel.on_quit = on_quit
    await channel.send(UiCommand(kind="quit", force=True))
    assert quits == [True]
    await trio.lowlevel.checkpoint()
