"""A project moved (or renamed) after a session recorded its artifacts: the ``artifacts`` rows
keep the paths the files were written at, and every reader finds them where they are now, by
their names in the session's artifact directory: `air doctor` finds no stray file and `--fix`
moves none to quarantine, `air report` inlines them, the ArtifactStore reads them."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from air.artifacts.store import ArtifactStore, recover_orphan_artifacts
from air.events.store import EventStore
from air.store.session_db import open_session_database
from tests.doctor.helpers import air


def test_a_moved_project_keeps_its_artifacts(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    demo = air(tmp_path, home, "demo", "--dir", str(tmp_path / "before"))
    assert demo.returncode == 0, demo.stderr
    shutil.move(tmp_path / "before", tmp_path / "after")
    project = tmp_path / "after" / "mathx"
    (sid,) = os.listdir(project / ".air" / "local" / "sessions")
    session = project / ".air" / "local" / "sessions" / sid
    files = sorted(p.name for p in (session / "artifacts").iterdir())
    assert files

    checked = air(project, home, "doctor", "--json")
    issues = [i for i in json.loads(checked.stdout)["issues"] if i["check"].startswith("artifacts")]
    assert issues == []
    air(project, home, "doctor", "--fix")
    assert sorted(p.name for p in (session / "artifacts").iterdir()) == files
    assert not (session / "quarantine").exists()

    page = tmp_path / "report.html"
    made = air(project, home, "report", "--html", str(page))
    assert made.returncode == 0, made.stderr
    text = page.read_text()
    assert "not in the session directory" not in text
    assert "return a + b" in text  # the diff artifact, inlined from where it is now

    db = open_session_database(session / "session.db", must_exist=True)
    try:
        store = ArtifactStore(
            EventStore(db), project_id="p", session_id=sid, artifact_root=session / "artifacts"
        )
        (row,) = [r for r in db.query("SELECT artifact_id, path FROM artifacts") if ".diff" in r[1]]
        assert str(tmp_path / "before") in row["path"]  # as recorded
        read = store.read(row["artifact_id"])
        recovered = recover_orphan_artifacts(store)  # the scan --fix runs: nothing is stray
        assert (recovered.registered, recovered.quarantined) == ([], [])
    finally:
        db.close()
    assert read.ref.path == str(session / "artifacts" / os.path.basename(row["path"]))
    assert b"return a + b" in read.content
