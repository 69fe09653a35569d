"""Fixtures for the tool tests: a git project on disk with a real air session.

``Env`` initialises ``.air`` with ``ProjectStore``, opens a session with ``SessionManager`` and
wires the registry to the session's real ingestor and artifact store, so every event lands in
the session's SQLite file and its projections (tool_runs, command_runs, artifacts). A bus
subscriber keeps everything published (durable and ephemeral) for the tests to inspect.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from air.contracts.event import RuntimeEvent
from air.contracts.tool_runs import ToolExecutionContext
from air.events.payloads import payload_model
from air.security.engine import PermissionEngine
from air.security.paths import PathClassifier
from air.security.redact import SecretRedactor
from air.session.manager import OpenSession, SessionManager
from air.session.project import ProjectStore
from air.tools import PromptBroker, SandboxRunner, ToolRegistry, register_builtin_tools
from tests.gitrepo import git
from tests.tools.sandbox_probe import IDENTITIES, Sandboxed


class Env:
    def __init__(
        self,
        tmp: Path,
        runner: SandboxRunner | None = None,
        prompts: PromptBroker | None = None,
        engine: PermissionEngine | None = None,
    ) -> None:
        self.tmp = tmp
        self.home = tmp / "home"
        self.home.mkdir()
        self.root = tmp / "proj"
        self.root.mkdir()
        git(self.root, "init", "-q")
        git(self.root, "config", "user.email", "t@example.com")
        git(self.root, "config", "user.name", "T")
        (self.root / "src").mkdir()
        (self.root / "src" / "app.py").write_text("print('hello')\n")
        self.outside = tmp / "outside"
        self.outside.mkdir()
        (self.outside / "victim.txt").write_text("untouched\n")
        self.project = ProjectStore().initialize(self.root)
        self.session: OpenSession = SessionManager().open_session(self.project)
        self.seen: list[RuntimeEvent] = []
        self.session.bus.subscribe(None, self.seen.append, queue_bound=100_000)
        self.redactor = SecretRedactor()
        self.engine = engine or PermissionEngine(
            classifier=PathClassifier(home=str(self.home)),
            redactor=self.redactor,
            sink=self.session.ingestor.ingest,
        )
        self.registry = ToolRegistry(
            engine=self.engine,
            recorder=self.session.ingestor,
            artifacts=self.session.artifacts,
            redactor=self.redactor,
            prompts=prompts,
        )
        self.runner = register_builtin_tools(self.registry, runner)

    @property
    def session_id(self) -> str:
        return self.session.session_id

    @property
    def session_dir(self) -> Path:
        return Path(self.session.context.db_path).parent

    def ctx(self, **kw: Any) -> ToolExecutionContext:
        fields: dict[str, Any] = {
            "session_id": self.session_id,
            "task_id": "task_1",
            "project_root": str(self.root),
            "workspace_root": str(self.root),
        }
        fields.update(kw)
        return ToolExecutionContext.model_validate(fields)

    def events(self) -> list[RuntimeEvent]:
        """Every durable event stored in the session DB, in order."""
        return self.session.events.query()

    def types(self) -> list[str]:
        return [e.type for e in self.events()]

    def payloads(self, type: str) -> list[dict[str, Any]]:
        return [dict(e.payload) for e in self.events() if e.type == type]

    async def published(self) -> list[RuntimeEvent]:
        """Everything published on the session bus so far (durable and ephemeral)."""
        await self.session.bus.drain()
        return list(self.seen)

    def rows(self, table: str) -> list[dict[str, Any]]:
        cursor = self.session.db.conn.execute(f"SELECT * FROM {table} ORDER BY rowid")
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def close(self) -> None:
        self.session.close()


def assert_payloads_valid(events: list[RuntimeEvent]) -> None:
    """Each payload validates against its model in air/events/payloads.py."""
    for event in events:
        model = payload_model(event.type, event.version)
        assert model is not None, event.type
        model.model_validate(event.payload)


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    made = Env(tmp_path)
    yield made
    made.close()


@pytest.fixture(params=IDENTITIES)
def box(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Sandboxed]:
    """A sandbox probe as the suite's user, and as ``nobody`` when that is root (a test module
    with its own ``box`` overrides it)."""
    made = Sandboxed(tmp_path, request.param, {})
    yield made
    made.close()
