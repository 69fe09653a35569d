"""Fixtures for the context tests: a real temporary project tree and a real session DB."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from air.contracts.project import ProjectContext
from air.store.repositories import SessionStore
from air.store.session_db import open_session_database


def make_project(root: Path) -> ProjectContext:
    """A project tree as ``air init`` lays it out (the parts the context reads)."""
    shared = root / ".air" / "shared"
    (shared / "rules").mkdir(parents=True)
    (shared / "plan").mkdir()
    (root / ".air" / "local").mkdir()
    return ProjectContext(
        project_id="prj_test",
        project_root=str(root),
        shared_root=str(shared),
        local_root=str(root / ".air" / "local"),
        name="demo",
    )


@pytest.fixture
def project(tmp_path: Path) -> ProjectContext:
    return make_project(tmp_path / "proj")


@pytest.fixture
def home_air(tmp_path: Path) -> Path:
    """An empty stand-in for ~/.air (never the real home)."""
    path = tmp_path / "home" / ".air"
    path.mkdir(parents=True)
    return path


@pytest.fixture
def session_store(tmp_path: Path) -> Iterator[SessionStore]:
    db = open_session_database(tmp_path / "session.db")
    try:
        yield SessionStore(db)
    finally:
        db.close()
