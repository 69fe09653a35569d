"""Compaction's production trigger on the Main Agent (issue #14, SDD §10.3/§19.3, IMPL-COMPACT-1):
a real MainAgent on a real session DB, cassette models for the agent and for the compactor.
When the conversation grows past the threshold of the agent's budget the runtime's
SessionCompactor runs once; from then on every request carries the summary (pinned facts
verbatim) and the messages after it, within the budget; ``air history`` still shows every
original message. ``/compact`` through the UiCommandChannel compacts now and says the outcome;
it is refused while the agent is mid-turn."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from air.agents import MainAgent, MainAgentChannel, PendingPrompts
from air.agents.window import SUMMARY_PREFIX, message_tokens, window_messages
from air.context.compaction import CompactionRules
from air.context.compactor import SessionCompactor
from air.contracts.error import AirException
from air.contracts.provider import ProviderCompletionInput, TextBlock
from air.contracts.ui import UiCommand
from air.llm.cassette import CassetteTurn
from air.llm.manager import ProviderManager
from air.nursery.ledger import SessionLedger
from air.testing.recording import RecordingProvider
from air.ui_urwid.commands import SLASH_COMMANDS, parse_input
from tests.agents.conftest import AgentEnv, json_turn, text_turn, wait_until

BUDGET = 2_000
DECISION = "Decision: the users table keeps soft deletes (deleted_at), never hard deletes"
TURNS = 12


@pytest.fixture
def env(tmp_path: Path) -> Iterator[AgentEnv]:
    e = AgentEnv(tmp_path)
    yield e
    e.close()


def question(i: int) -> str:
    text = f"Question {i}: how should the users endpoint page its results? " * 4
    return text + ("\n" + DECISION if i == 0 else "")


def answer(i: int) -> str:
    return f"Answer {i}: page with a cursor on the id column, 50 rows a page. " * 4


def chat_turns(count: int) -> list[CassetteTurn]:
    return [t for i in range(count) for t in (json_turn({"intent": "chat"}), text_turn(answer(i)))]


def compactor_models(tmp: Path, count: int = 40) -> RecordingProvider:
    path = tmp / "compactor.jsonl"
    turns = [
        CassetteTurn(
            content=[TextBlock(text=f"Earlier: paging talk, part {i}.")], stop_reason="end_turn"
        )
        for i in range(count)
    ]
    path.write_text("".join(t.model_dump_json(exclude_none=True) + "\n" for t in turns))
    return RecordingProvider(ProviderManager.for_cassette(str(path)))


def session_compactor(env: AgentEnv, models: RecordingProvider) -> SessionCompactor:
    ledger = SessionLedger(
        env.session.events,
        session_id=env.session.session_id,
        project_id=env.project.project_id,
    )
    return SessionCompactor(
        ledger=ledger,
        store=env.session.store,
        models=models,
        session_id=env.session.session_id,
        rules=CompactionRules(),
        request_budget=BUDGET,
        chunk_output_tokens=200,
    )


def texts(request: ProviderCompletionInput) -> str:
    return "\n".join(getattr(b, "text", "") for m in request.messages for b in m.content)


async def chat(env: AgentEnv, agent: MainAgent, count: int) -> None:
    for i in range(count):
        await agent.submit(question(i))

        def answered(n: int = i) -> bool:
            return len(env.payloads("assistant.message.created")) > n

        await wait_until(answered)
        await wait_until(lambda: env.path()[-1] == "IDLE")


async def test_the_main_agent_compacts_once_and_its_requests_carry_the_summary(
    env: AgentEnv, tmp_path: Path
) -> None:
    main = RecordingProvider(env.cassette(*chat_turns(TURNS)))
    squeeze = compactor_models(tmp_path)
    agent = env.agent(models=main, compactor=session_compactor(env, squeeze), context_budget=BUDGET)
    async with env.running(agent):
        await chat(env, agent, TURNS)
    requested = env.payloads("context.compaction.requested")
    # once, not on every turn: the turns after it stay under the threshold
    assert len(requested) == 1
    assert requested[0]["accepted"] is True
    assert "Main Agent's next request" in requested[0]["reason"]
    types = [e.type for e in env.events() if e.type.startswith(("context.compaction.", "summary."))]
    assert types == [
        "context.compaction.requested",
        "context.compaction.started",
        "summary.created",
        "context.compaction.completed",
    ]
    [summary] = env.rows("summaries")
    assert DECISION in summary["content"]  # the pinned fact, verbatim
    assert squeeze.requests
    assert all(r.tools == [] for r in squeeze.requests)
    # every request of the agent is within its conversation budget
    assert all(message_tokens(r.messages) <= BUDGET for r in main.requests)
    with_summary = [r for r in main.requests if texts(r).startswith(SUMMARY_PREFIX)]
    before = main.requests[: len(main.requests) - len(with_summary)]
    assert before
    assert with_summary
    assert all(not texts(r).startswith(SUMMARY_PREFIX) for r in before)
    last = with_summary[-1]
    assert DECISION in texts(last)
    assert summary["content"] in texts(last)
    # the covered originals left the request; the newest messages are in it verbatim
    assert "Question 1:" not in texts(last)
    assert question(TURNS - 1) in texts(last)
    # the originals stay in the session: `air history` shows all of them
    sid = env.session.session_id
    env.session.close()
    home = tmp_path / "home"
    shown = subprocess.run(  # noqa: ASYNC221 - the agent is stopped; nothing else runs
        [sys.executable, "-m", "air", "history", "--project", str(env.root), "--session", sid],
        capture_output=True,
        text=True,
        env={**os.environ, "HOME": str(home)},
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    for i in range(TURNS):
        assert f"Question {i}: how should" in shown.stdout
        assert f"Answer {i}: page with" in shown.stdout


async def test_without_the_trigger_the_requests_carry_no_summary(
    env: AgentEnv, tmp_path: Path
) -> None:
    """The same conversation with no compactor: nothing is compacted and no summary is sent
    (what the test above would see if the trigger were removed); the window still cuts the
    oldest messages so no request passes the budget."""
    main = RecordingProvider(env.cassette(*chat_turns(TURNS)))
    agent = env.agent(models=main, context_budget=BUDGET // 2)
    async with env.running(agent):
        await chat(env, agent, TURNS)
    assert env.payloads("context.compaction.requested") == []
    assert all(not texts(r).startswith(SUMMARY_PREFIX) for r in main.requests)
    assert all(message_tokens(r.messages) <= BUDGET // 2 for r in main.requests)
    assert DECISION not in texts(main.requests[-1])  # cut away: only a summary keeps it


def test_the_window_puts_the_summary_first_and_drops_what_it_covers() -> None:
    from air.agents.conversation import ConversationEntry
    from air.context.compactor import CompactionView

    entries = [
        ConversationEntry(f"m{i}", "user" if i % 2 == 0 else "assistant", f"text {i} " * 50)
        for i in range(10)
    ]
    pinned = "Pinned facts (verbatim):\n- Decision: x"
    view = CompactionView("sum_1", pinned, frozenset({"m0", "m1"}))
    messages = window_messages(entries, view, 100_000)
    assert messages[0].role == "user"
    first = "".join(getattr(b, "text", "") for b in messages[0].content)
    assert first.startswith(SUMMARY_PREFIX + "Pinned facts")
    assert "text 0 " not in first
    assert "text 2 " in first
    tight = window_messages(entries, view, 400)
    assert message_tokens(tight) <= 400
    assert "Decision: x" in "".join(getattr(b, "text", "") for b in tight[0].content)


async def test_slash_compact_compacts_now_and_says_the_outcome(
    env: AgentEnv, tmp_path: Path
) -> None:
    assert "/compact" in SLASH_COMMANDS
    assert parse_input("/compact").command == UiCommand(kind="compact")
    assert parse_input("/compact now").error
    main = env.cassette(*chat_turns(8))
    agent = env.agent(
        models=main,
        compactor=session_compactor(env, compactor_models(tmp_path)),
        context_budget=100_000,  # far from the threshold: only /compact compacts
    )
    channel = MainAgentChannel(agent, env.scheduler, PendingPrompts())
    async with env.running(agent):
        await chat(env, agent, 8)
        assert env.payloads("context.compaction.requested") == []
        await channel.send(parse_input("/compact").command)  # type: ignore[arg-type]
        await wait_until(lambda: any(t.startswith("Compacted:") for t in env.assistant_texts()))
    [row] = env.rows("summaries")
    said = next(t for t in env.assistant_texts() if t.startswith("Compacted:"))
    # 16 messages, the newest 6 kept: the summary covers 10, up to the 10th
    assert f"summary {row['summary_id']} covers 10 messages" in said
    assert row["covers_until_message_id"] == env.rows("messages")[9]["id"]
    [requested] = env.payloads("context.compaction.requested")
    assert requested["accepted"] is True
    assert requested["reason"] == "/compact"


async def test_slash_compact_is_refused_while_the_agent_is_mid_turn(env: AgentEnv) -> None:
    env.cassette(json_turn({"intent": "chat"}), text_turn("hi"))
    agent = env.agent()
    channel = MainAgentChannel(agent, env.scheduler, PendingPrompts())
    async with env.running(agent):
        async with agent._lock:  # a message being handled
            with pytest.raises(AirException) as refused:
                await channel.send(UiCommand(kind="compact"))
        assert "current turn" in refused.value.error.message
        await channel.send(UiCommand(kind="compact"))
        await wait_until(lambda: bool(env.assistant_texts()))
    assert env.assistant_texts() == ["Compaction is not available in this session."]
