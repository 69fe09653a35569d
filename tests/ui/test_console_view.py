"""The console opens a long session from its stored view (IMPL-READ-2): the first open stores
the view at the end of the log it read; the next open starts there and its projection equals a
fold of the whole log.

A real project (git + `air init` layout), a session written through the EventStore from the
generator the tests and `bench/sessions.py` share, the real `air` plain console in a
subprocess.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from air.events.fold_snapshot import SNAPSHOT_EVERY
from air.events.store import EventStore
from air.projection.store import ProjectionStore
from air.projection.view_snapshot import KIND, check_view, load_view
from air.session.project import ProjectStore
from air.store.read_model import load_snapshot
from air.store.session_db import open_session_database
from air.testing.sequences import realistic_sequence
from tests.gitrepo import init_repo

SID = "ses_01CONSOLEVIEW00000000000AA"


def _console(root: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env["HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "air", "--session", SID, "--cassette", str(root / "cassettes"),
         "--plain"],
        cwd=root, env=env, input="/quit\n", capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_the_console_stores_its_view_and_opens_from_it(tmp_path: Path) -> None:
    root, home = tmp_path / "proj", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    init_repo(root)
    project = ProjectStore().initialize(root)
    (root / "cassettes").mkdir()
    (root / "cassettes" / "main.jsonl").write_text("")
    path = Path(project.local_root) / "sessions" / SID / "session.db"
    path.parent.mkdir(parents=True)
    db = open_session_database(path)
    events = realistic_sequence(SID, project.project_id, SNAPSHOT_EVERY + 100, seed=11)
    EventStore(db).append_many(events)
    (read,) = db.conn.execute("SELECT max(seq) FROM events").fetchone()
    db.close()

    first = _console(root, home)
    assert first.returncode == 0, first.stderr
    db = open_session_database(path)
    try:
        stored = load_snapshot(db, f"{KIND}:{SID}")
        assert stored is not None  # the open folded a long tail: it stored its view
        assert stored.event_seq >= read  # at the end of the log it read
        log = EventStore(db)
        assert check_view(log, SID) is None  # view + tail == a fold of the whole log
        artifacts = Path(project.local_root) / "sessions" / SID / "artifacts"
        console = ProjectionStore(artifact_root=artifacts)  # as the console makes its store
        assert load_view(log, SID, console) is not None
    finally:
        db.close()
    again = _console(root, home)
    assert again.returncode == 0, again.stderr
