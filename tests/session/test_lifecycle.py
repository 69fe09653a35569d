"""ProjectStore (locate / initialize / open) and SessionManager (open / reopen / close)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from air.contracts.error import AirException, ErrorKind
from air.contracts.project import OpenSessionOptions, ProjectInitOptions
from air.session.manager import SessionManager, list_session_ids
from air.session.project import ProjectStore


class FixedClock:
    def __init__(self) -> None:
        self.n = 0

    def now_iso(self) -> str:
        self.n += 1
        return f"2026-02-03T04:05:06.{self.n:06d}Z"


def test_initialize_creates_both_trees_and_a_stable_id(tmp_path: Path) -> None:
    store = ProjectStore()
    project = store.initialize(tmp_path, ProjectInitOptions(name="demo"))
    shared, local = tmp_path / ".air" / "shared", tmp_path / ".air" / "local"
    for sub in ("rules", "plan"):
        assert (shared / sub).is_dir()
    for sub in ("sessions", "state", "backups", "workspaces", "tmp", "locks"):
        assert (local / sub).is_dir()
    data = json.loads((shared / "project.json").read_text())
    assert data["project_id"] == project.project_id
    assert data["name"] == "demo"
    assert data["schema_version"] == 1
    assert "created_at" in data
    perms = (shared / "permissions.yaml").read_text()
    assert all(not line.strip() or line.startswith("#") for line in perms.splitlines())
    assert (shared / "rules" / "project-rules.md").is_file()
    assert (tmp_path / ".gitignore").read_text() == ".air/local/\n"
    again = store.initialize(tmp_path)
    assert again.project_id == project.project_id  # stable, not regenerated
    assert (tmp_path / ".gitignore").read_text() == ".air/local/\n"  # idempotent
    assert project.shared_root == str(shared)
    assert project.local_root == str(local)


def test_gitignore_is_appended_not_replaced(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("build/\n*.o")
    ProjectStore().initialize(tmp_path)
    assert (tmp_path / ".gitignore").read_text() == "build/\n*.o\n.air/local/\n"


def test_project_id_does_not_depend_on_the_path(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    pa = ProjectStore().initialize(a)
    (a).rename(tmp_path / "moved")
    moved = ProjectStore().open(tmp_path / "moved")
    assert moved.project_id == pa.project_id
    assert ProjectStore().initialize(b).project_id != pa.project_id


def test_locate_walks_up_and_open_refuses_non_projects(tmp_path: Path) -> None:
    store = ProjectStore()
    assert store.locate(tmp_path) is None
    project = store.initialize(tmp_path)
    deep = tmp_path / "src" / "lib" / "x"
    deep.mkdir(parents=True)
    (deep / "f.c").write_text("int x;")
    found = store.locate(deep / "f.c")
    assert found is not None
    assert found.project_id == project.project_id
    with pytest.raises(AirException) as info:
        store.open(deep)
    assert info.value.kind is ErrorKind.NOT_FOUND
    assert info.value.user_action
    (tmp_path / ".air" / "shared" / "project.json").write_text("{not json")
    with pytest.raises(AirException) as info:
        store.open(tmp_path)
    assert info.value.kind is ErrorKind.CONFIG_ERROR


def test_initialize_refuses_a_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(AirException) as info:
        ProjectStore().initialize(tmp_path / "nope")
    assert info.value.kind is ErrorKind.NOT_FOUND


def test_open_session_creates_then_reopens_without_a_second_session_created(
    tmp_path: Path,
) -> None:
    project = ProjectStore().initialize(tmp_path)
    manager = SessionManager(clock=FixedClock())
    opened = manager.open_session(
        project, OpenSessionOptions(title="first", model_provider_id="anthropic", model_id="m1")
    )
    sid = opened.session_id
    assert opened.created
    assert Path(opened.context.db_path) == (
        tmp_path / ".air" / "local" / "sessions" / sid / "session.db"
    )
    assert Path(opened.context.artifact_root).is_dir()
    assert opened.orphan_report is not None
    assert opened.orphan_report.clean
    row = opened.store.sessions.get(sid)
    assert row is not None
    assert (row["status"], row["title"], row["model_id"]) == ("active", "first", "m1")
    assert row["created_at"] == "2026-02-03T04:05:06.000001Z"
    manager.close_session(sid)
    assert opened.db.closed

    reopened = SessionManager().open_session(
        project, OpenSessionOptions(session_id=sid, model_id="other")
    )
    assert not reopened.created
    assert reopened.context.model_id == "m1"  # fixed at first open
    assert [e.type for e in reopened.events.query()] == ["session.created"]
    assert list_session_ids(project) == [sid]
    reopened.close()


def test_close_session_with_archive_records_it(tmp_path: Path) -> None:
    project = ProjectStore().initialize(tmp_path)
    manager = SessionManager()
    opened = manager.open_session(project)
    sid = opened.session_id
    manager.close_session(sid, archive=True)
    conn = sqlite3.connect(opened.context.db_path)
    assert conn.execute("SELECT status FROM sessions").fetchone()[0] == "archived"
    types = [r[0] for r in conn.execute("SELECT type FROM events ORDER BY seq")]
    conn.close()
    assert types == ["session.created", "session.archived"]


def test_migration_records_the_air_version_on_every_open(tmp_path: Path) -> None:
    project = ProjectStore().initialize(tmp_path)
    opened = SessionManager().open_session(project)
    opened.close()
    conn = sqlite3.connect(opened.context.db_path)
    conn.execute(
        "UPDATE schema_meta SET value = '0.0.1' WHERE key = 'aircoding_version_last_opened'"
    )
    conn.commit()
    conn.close()
    again = SessionManager().open_session(project, OpenSessionOptions(session_id=opened.session_id))
    meta = dict(again.db.conn.execute("SELECT key, value FROM schema_meta").fetchall())
    again.close()
    from air import __version__

    assert meta["aircoding_version_last_opened"] == __version__
    assert meta["schema_version"] == "1"


def test_a_corrupt_session_db_is_refused_with_its_kind(tmp_path: Path) -> None:
    project = ProjectStore().initialize(tmp_path)
    sid = "ses_BROKEN"
    session_dir = tmp_path / ".air" / "local" / "sessions" / sid
    session_dir.mkdir(parents=True)
    (session_dir / "session.db").write_bytes(b"\x00garbage" * 1000)
    with pytest.raises(AirException) as info:
        SessionManager().open_session(project, OpenSessionOptions(session_id=sid))
    assert info.value.kind is ErrorKind.CORRUPT_DATABASE
    assert info.value.user_action


def test_the_fk_off_check_at_open_runs_only_for_a_file_that_existed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a session.db created by this very open holds no row that could dangle (IMPL-BOOT-13)
    from air.store.repositories import SessionStore

    calls: list[str] = []
    real = SessionStore.referential_check

    def counted(self: SessionStore) -> object:
        calls.append(self.db.path)
        return real(self)

    monkeypatch.setattr(SessionStore, "referential_check", counted)
    project = ProjectStore().initialize(str(tmp_path), ProjectInitOptions())
    created = SessionManager().open_session(project)
    assert created.db.created
    assert created.orphan_report is not None
    assert created.orphan_report.clean
    assert calls == []
    created.close()
    again = SessionManager().open_session(
        project, OpenSessionOptions(session_id=created.session_id), must_exist=True
    )
    assert not again.db.created
    assert calls == [again.db.path]
    again.close()


def test_two_airs_initialising_a_project_at_once_keep_one_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another air made project.json between this one's look and its write (8 processes
    initialising one new folder at once: two ids in use, one of them no longer the project's).
    The first one made stays; nothing is left beside it."""
    shared = tmp_path / ".air" / "shared"
    shared.mkdir(parents=True)
    first = {"project_id": "the-first", "name": "p", "schema_version": 1, "created_at": "x"}
    (shared / "project.json").write_text(json.dumps(first))
    real_exists = Path.exists

    def looked_before_it_was_made(path: Path) -> bool:
        return False if path.name == "project.json" else real_exists(path)

    monkeypatch.setattr(Path, "exists", looked_before_it_was_made)
    project = ProjectStore().initialize(tmp_path)
    assert project.project_id == "the-first"
    assert json.loads((shared / "project.json").read_text())["project_id"] == "the-first"
    assert sorted(p.name for p in shared.iterdir() if p.name.endswith(".tmp")) == []


def test_a_project_on_a_file_system_without_hard_links_is_initialised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_links(src: object, dst: object) -> None:
        raise PermissionError(1, "Operation not permitted")  # as FAT and some mounts answer

    monkeypatch.setattr("air.session.project.os.link", no_links)
    project = ProjectStore().initialize(tmp_path)
    stored = json.loads((tmp_path / ".air" / "shared" / "project.json").read_text())
    assert stored["project_id"] == project.project_id
    assert [p.name for p in (tmp_path / ".air" / "shared").glob("*.tmp")] == []
