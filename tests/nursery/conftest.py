"""Shared fixtures: a real session database with its event store, as the Scheduler uses it;
a project that is a real git repository (``shared.txt`` committed on ``main``)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from air.contracts.event import EventSource, new_event
from air.contracts.task import TaskConstraints, TaskScope, TaskSpec
from air.events.store import EventStore, replay_events
from air.nursery.ledger import SessionLedger
from air.nursery.planner import WavePlanner
from air.nursery.scheduler import Scheduler, SchedulerOptions
from air.store.db import DatabaseManager
from air.store.integrity import dump_tables
from air.store.session_db import open_session_database
from air.workspace.manager import WorkspaceManager
from tests.gitrepo import init_repo


@dataclass
class SessionDB:
    path: str
    db: DatabaseManager
    events: EventStore
    ledger: SessionLedger

    def replay_matches(self, scratch: str) -> bool:
        """Replay this DB's events rows into a fresh DB; True when every table is equal."""
        target = open_session_database(scratch)
        try:
            replay_events(self.events.query_records(), target)
            return dump_tables(self.db) == dump_tables(target)
        finally:
            target.close()


def open_session_db(directory: str, session_id: str = "ses_test") -> SessionDB:
    """Create ``directory/session.db`` with its ``session.created`` event."""
    os.makedirs(directory, exist_ok=True)
    db = open_session_database(os.path.join(directory, "session.db"))
    events = EventStore(db)
    events.append(
        new_event(
            "session.created",
            {"session_id": session_id, "project_id": "prj_test", "mode": "headless"},
            session_id=session_id,
            project_id="prj_test",
            source=EventSource(kind="system"),
        )
    )
    ledger = SessionLedger(events, session_id=session_id, project_id="prj_test")
    return SessionDB(os.path.join(directory, "session.db"), db, events, ledger)


def git_scheduler(
    repo: Path,
    ledger: SessionLedger,
    runner: Any,
    workspaces: WorkspaceManager,
    workers: int = 1,
) -> Scheduler:
    """The real Scheduler over ``repo`` (a git project: its writers get worktrees)."""
    return Scheduler(
        ledger,
        runner,
        project_root=str(repo),
        workspaces=workspaces,
        planner=WavePlanner(git_repo=True),
        options=SchedulerOptions(max_workers=workers),
    )


def task_writing(path: str, retry_budget: int) -> TaskSpec:
    """Task ``t``, an executor that may write ``path`` only, with ``retry_budget`` retries."""
    return TaskSpec(
        id="t",
        type="execute",
        title="t",
        description="t",
        scope=TaskScope(write_area=[path]),
        constraints=TaskConstraints(retry_budget=retry_budget),
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "shared.txt").write_text("base\n")
    (root / ".gitignore").write_text(".air/\n")
    return init_repo(root, message="init")


@pytest.fixture
def session_db(tmp_path: str) -> Iterator[SessionDB]:
    sdb = open_session_db(os.path.join(str(tmp_path), "s"))
    yield sdb
    sdb.db.close()
