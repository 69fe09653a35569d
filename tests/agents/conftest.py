"""Fixtures for the Main Agent tests: a git project with a real air session, a real Scheduler.

``AgentEnv`` initialises ``.air`` with ``ProjectStore``, opens a session with ``SessionManager``
(real SQLite file, real EventIngestor and EventBus), builds the ToolRegistry over the session
and a real ``Scheduler`` whose TaskRunner is the scripted ``FakeTaskRunner``. The model is a
``ProviderManager`` replaying a cassette written by the test (``cassette``) or talking to a
``StrictServer`` on 127.0.0.1 over the real anthropic SDK (``strict_models``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from air.agents import MainAgent, PendingPrompts, PromptAnswer
from air.contracts.event import EventFilter, RuntimeEvent
from air.contracts.permission_records import PermissionPromptRequest, PermissionPromptResponse
from air.contracts.provider import (
    ModelConfig,
    ModelsConfig,
    ProviderConfig,
    ProviderKind,
    TextBlock,
    ToolUseBlock,
)
from air.llm.cassette import CassetteTurn
from air.llm.manager import ProviderManager
from air.nursery.ledger import SessionLedger
from air.nursery.scheduler import Scheduler, SchedulerOptions
from air.security.engine import PermissionEngine
from air.security.paths import PathClassifier
from air.security.redact import SecretRedactor
from air.session.manager import OpenSession, SessionManager
from air.session.project import ProjectStore
from air.testing.fake_runner import FakeStep, FakeTaskRunner
from air.tools import PromptBroker, ToolRegistry, register_builtin_tools
from tests.gitrepo import git

KEY = "sk-agent-test"


def text_turn(*pieces: str) -> CassetteTurn:
    """A cassette turn answering with text streamed as ``pieces``."""
    return CassetteTurn(
        content=[TextBlock(text="".join(pieces))],
        stop_reason="end_turn",
        chunks=[list(pieces)],
    )


def json_turn(value: Any) -> CassetteTurn:
    return text_turn(json.dumps(value))


def tool_turn(tool_id: str, name: str, input: dict[str, Any]) -> CassetteTurn:
    return CassetteTurn(
        content=[ToolUseBlock(id=tool_id, name=name, input=input)], stop_reason="tool_use"
    )


def spec(
    task_id: str, title: str, *, after: Sequence[str] = (), area: str | None = None
) -> dict[str, Any]:
    """A TaskSpec as a model writes it (JSON); ``area`` is its write area."""
    out: dict[str, Any] = {
        "id": task_id,
        "type": "execute",
        "title": title,
        "description": f"{title}.",
        "dependencies": [{"depends_on_task_id": d} for d in after],
    }
    if area is not None:
        out["scope"] = {"write_area": [area]}
    return out


class PendingBroker:
    """The composition root's adapter: a ToolRegistry PromptBroker over PendingPrompts."""

    def __init__(self, pending: PendingPrompts) -> None:
        self.pending = pending
        self.asked: list[PermissionPromptRequest] = []

    async def ask(self, request: PermissionPromptRequest) -> PermissionPromptResponse:
        self.asked.append(request)
        answer: PromptAnswer = await self.pending.wait(request.prompt_id)
        return PermissionPromptResponse(approved=answer.approved, scope=answer.scope)


class AllowAll:
    """A person who approves every prompt (to prove a guard holds even then)."""

    async def ask(self, request: PermissionPromptRequest) -> PermissionPromptResponse:
        return PermissionPromptResponse(approved=True)


class AgentEnv:
    def __init__(self, tmp: Path, prompts: PromptBroker | None = None) -> None:
        self.tmp = tmp
        self.home = tmp / "home"
        self.home.mkdir()
        self.root = tmp / "proj"
        self.root.mkdir()
        for args in (
            ("init", "-q"),
            ("config", "user.email", "t@example.com"),
            ("config", "user.name", "T"),
        ):
            git(self.root, *args)
        (self.root / "README.md").write_text("calc\n")
        self.outside = tmp / "outside"
        self.outside.mkdir()
        self.project = ProjectStore().initialize(self.root)
        self.manager = SessionManager()
        self.session: OpenSession = self.manager.open_session(self.project)
        self.seen: list[RuntimeEvent] = []
        self.session.bus.subscribe(None, self.seen.append, queue_bound=100_000)
        redactor = SecretRedactor()
        engine = PermissionEngine(
            classifier=PathClassifier(home=str(self.home)),
            redactor=redactor,
            sink=self.session.ingestor.ingest,
        )
        self.registry = ToolRegistry(
            engine=engine,
            recorder=self.session.ingestor,
            artifacts=self.session.artifacts,
            redactor=redactor,
            prompts=prompts,
        )
        register_builtin_tools(self.registry)
        self.runner = FakeTaskRunner(default=FakeStep(duration=0.05))
        ledger = SessionLedger(
            self.session.events,
            session_id=self.session.session_id,
            project_id=self.project.project_id,
        )
        self.scheduler = Scheduler(
            ledger, self.runner, project_root=str(self.root), options=SchedulerOptions(2)
        )
        self.models: ProviderManager | None = None

    # -- models ----------------------------------------------------------------------------
    def cassette(self, *turns: CassetteTurn) -> ProviderManager:
        path = self.tmp / "main.jsonl"
        path.write_text("".join(t.model_dump_json(exclude_none=True) + "\n" for t in turns))
        self.models = ProviderManager.for_cassette(str(path))
        return self.models

    def strict_models(self, url: str) -> ProviderManager:
        config = ModelsConfig(
            default="p/m1",
            providers={
                "p": ProviderConfig(
                    kind=ProviderKind.ANTHROPIC,
                    base_url=url,
                    auth_ref="AIR_AGENT_TEST_KEY",
                    read_timeout_s=30,
                    models={"m1": ModelConfig(api_model="claude-test", max_output_tokens=1024)},
                )
            },
        )
        self.models = ProviderManager(config, env={"AIR_AGENT_TEST_KEY": KEY})
        return self.models

    def agent(self, **kw: Any) -> MainAgent:
        assert self.models is not None, "set a model first (cassette / strict_models)"
        fields: dict[str, Any] = {
            "session_id": self.session.session_id,
            "project_id": self.project.project_id,
            "project_root": str(self.root),
            "events": self.session.ingestor,
            "models": self.models,
            "scheduler": self.scheduler,
            "tools": self.registry,
        }
        fields.update(kw)
        return MainAgent(**fields)

    @asynccontextmanager
    async def running(self, agent: MainAgent) -> AsyncIterator[MainAgent]:
        """The agent served in a nursery, following the session's task events."""
        async with self.session.bus.serving(), trio.open_nursery() as nursery:
            self.session.bus.subscribe(EventFilter(type_prefix="task."), agent.observe)
            await nursery.start(agent.run)
            yield agent
            nursery.cancel_scope.cancel(reason="test over")

    # -- reading ---------------------------------------------------------------------------
    def events(self) -> list[RuntimeEvent]:
        return self.session.events.query()

    def payloads(self, type: str) -> list[dict[str, Any]]:
        return [dict(e.payload) for e in self.events() if e.type == type]

    def path(self) -> list[str]:
        """The Main Agent's states in order, from its durable transitions."""
        moves = self.payloads("main_agent.state.changed")
        return ["IDLE", *(m["to_state"] for m in moves)]

    def rows(self, table: str) -> list[dict[str, Any]]:
        cursor = self.session.db.conn.execute(f"SELECT * FROM {table} ORDER BY rowid")
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def assistant_texts(self) -> list[str]:
        out = []
        for p in self.payloads("assistant.message.created"):
            out.append("".join(b.get("text", "") for b in p["content"]))
        return out

    def close(self) -> None:
        self.session.close()


async def wait_until(check: Callable[[], bool], *, limit: float = 15.0) -> None:
    """Poll ``check`` on the real clock, failing after ``limit`` seconds (the agent's state,
    the fake runner's log and the DB change without one event to wait on)."""
    with trio.fail_after(limit):
        while True:
            if check():
                return
            await trio.sleep(0.01)


def serve_anthropic(env: AgentEnv, url: str, model: str, **fields: Any) -> None:
    """``env``'s models: one Anthropic provider ``p`` at ``url`` (a strict server), ``model``
    (its ``ModelConfig`` ``fields`` besides 4,096 output tokens) the default."""
    provider = ProviderConfig(
        kind=ProviderKind.ANTHROPIC,
        base_url=url,
        auth_ref="AIR_AGENT_TEST_KEY",
        models={model: ModelConfig(max_output_tokens=4096, **fields)},
    )
    config = ModelsConfig(default=f"p/{model}", providers={"p": provider})
    env.models = ProviderManager(config, env={"AIR_AGENT_TEST_KEY": KEY})


async def one_direct_message(env: AgentEnv, text: str) -> None:
    """A Main Agent on ``env`` answers ``/direct text`` once, then leaves direct mode."""
    from air.agents import MainAgentState

    agent = env.agent()
    async with env.running(agent):
        await agent.submit(f"/direct {text}")
        await wait_until(lambda: len(env.payloads("assistant.message.created")) == 1)
        await agent.submit("/done")
        await wait_until(lambda: agent.state is MainAgentState.IDLE)


@pytest.fixture
def direct_env(tmp_path: Path) -> Iterator[AgentEnv]:
    """An ``AgentEnv`` for a direct-mode test, closed after it."""
    e = AgentEnv(tmp_path)
    yield e
    e.close()
