"""`air history` and `air session list` start without pydantic or Trio (IMPL-READ-3) and print
what the full way prints; anything they cannot read lightly goes the full way.

Real projects (`air init` layout through ProjectStore), real session databases written through
the EventStore, the real `air` command in a subprocess.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from air.cli.history import PROJECT_SCHEMA, STATUS_ORDER
from air.contracts.project import PROJECT_SCHEMA_VERSION
from air.contracts.task import TaskStatus
from air.events.store import EventStore
from air.session.project import ProjectStore
from air.store.session_db import open_session_database
from air.testing.sequences import realistic_sequence

SID = "ses_01LIGHTREADERS000000000000A"


def _project(tmp_path: Path, events: int = 150) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    project = ProjectStore().initialize(root)
    path = Path(project.local_root) / "sessions" / SID / "session.db"
    path.parent.mkdir(parents=True)
    db = open_session_database(path)
    EventStore(db).append_many(realistic_sequence(SID, project.project_id, events, seed=4))
    db.close()
    return root


def _run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(root.parent)}
    return subprocess.run(
        [sys.executable, "-m", "air", *args],
        cwd=root, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


_WATCH = """
import io, json, sys, contextlib
from air.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(sys.argv[1:])
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"pydantic", "trio", "urwid", "httpx"})
print(json.dumps({"code": code, "heavy": heavy, "lines": len(out.getvalue().splitlines())}))
"""


@pytest.mark.parametrize("command", [["history"], ["session", "list"]])
def test_the_readers_load_neither_pydantic_nor_trio(tmp_path: Path, command: list[str]) -> None:
    root = _project(tmp_path)
    env = {**os.environ, "HOME": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", _WATCH, *command],
        cwd=root, env=env, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    seen = json.loads(proc.stdout.splitlines()[-1])
    assert seen["code"] == 0
    assert seen["lines"] >= 1
    assert seen["heavy"] == []


def test_history_prints_what_the_full_way_prints(tmp_path: Path) -> None:
    root = _project(tmp_path)
    light = _run(root, "history")
    assert light.returncode == 0, light.stderr
    db = root / ".air" / "local" / "sessions" / SID / "session.db"
    with sqlite3.connect(db) as conn:  # no summary row: the database is opened the full way
        conn.execute("DELETE FROM session_summary")
    full = _run(root, "history")
    assert full.returncode == 0, full.stderr
    assert light.stdout == full.stdout
    assert len(light.stdout.splitlines()) == 151  # the header and a line per event


def test_a_project_file_it_cannot_read_goes_the_full_way(tmp_path: Path) -> None:
    root = _project(tmp_path)
    project_json = root / ".air" / "shared" / "project.json"
    data = json.loads(project_json.read_text())
    project_json.write_text(json.dumps({**data, "schema_version": PROJECT_SCHEMA + 1}))
    newer = _run(root, "session", "list")
    assert newer.returncode == 2
    assert "newer than this air" in newer.stderr  # ProjectStore's word, not a guess
    project_json.write_text("{not json")
    broken = _run(root, "history")
    assert broken.returncode == 2
    assert "not a valid project file" in broken.stderr


def test_the_light_constants_agree_with_the_contracts() -> None:
    assert STATUS_ORDER == tuple(s.value for s in TaskStatus)
    assert PROJECT_SCHEMA == PROJECT_SCHEMA_VERSION
