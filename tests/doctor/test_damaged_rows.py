"""A session database SQLite still reads whose ``events`` rows are damaged (a payload that is no
JSON, a task's creation unreadable): `air report` and `air resume` refuse it by name, `air
doctor` reports it without a traceback, `--fix` rebuilds the session from the rows it can still
read (the old file quarantined), and what the log itself lacks is reported once, with no
repair that would only make it again."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from air.events.store import EventStore
from air.store.session_db import open_session_database
from tests.doctor.helpers import air, doctor_json, make_project, write_session

SID = "ses_damaged"


def test_damaged_rows_are_reported_then_the_readable_rest_is_kept(tmp_path: Path) -> None:
    project, home = make_project(tmp_path)
    path = write_session(project, SID, length=60)
    with sqlite3.connect(path) as conn:
        total = conn.execute("SELECT count(*) FROM events").fetchone()[0]
        created = conn.execute(
            "SELECT seq FROM events WHERE type = 'task.created' ORDER BY seq LIMIT 1"
        ).fetchone()[0]
        conn.execute(
            "UPDATE events SET payload_json = 'not json' WHERE seq IN (?, ?)", (created, total)
        )

    # a report would be wrong without the row: refused, naming it and the repair
    page = air(project, home, "report", "--html", str(tmp_path / "r.html"), "--session", SID)
    assert page.returncode == 2, page.stderr
    assert f"stored event {created} cannot be read" in page.stderr
    assert "air doctor --fix" in page.stderr

    # nor is it resumed: refused by name, nothing appended
    resumed = air(project, home, "resume", "--session", SID)
    assert resumed.returncode == 2, resumed.stderr
    assert f"stored event {created} cannot be read" in resumed.stderr
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM events").fetchone()[0] == total

    code, report, done = doctor_json(project, home)
    assert code == 1
    assert "Traceback" not in done.stderr
    found = {i["check"]: i for i in report["issues"]}
    projection = found[f"databases.session.{SID}.projection"]
    assert f"stored event {created} cannot be read" in projection["message"]

    code, report, done = doctor_json(project, home, "--fix")
    assert "Traceback" not in done.stderr
    fixed = [f for f in report["fixes"] if f["check"].startswith(f"databases.session.{SID}")]
    assert [f["status"] for f in fixed] == ["fixed"], report["fixes"]
    said = re.search(r"rebuilt from (\d+) events \((\d+) unreadable .*seq ([\d, …]+)\)", str(fixed))
    assert said is not None, fixed
    replayed, left_out = int(said[1]), int(said[2])
    assert said[3].startswith(f"{created}, ")
    assert replayed + left_out == total
    assert 2 <= left_out < total // 2  # the two bad rows and what depended on them, no more
    assert list((project / ".air" / "local" / "quarantine").rglob(f"{SID}/session.db"))
    db = open_session_database(path, must_exist=True)
    try:
        kept = [e.type for e in EventStore(db).query()]
    finally:
        db.close()
    assert len(kept) == replayed
    assert kept[0] == "session.created"

    # the events that referred to the lost task stay; no repair is offered that would only
    # rebuild the same tables again
    code, report, done = doctor_json(project, home)
    assert "Traceback" not in done.stderr
    left = [i for i in report["issues"] if i["check"].startswith(f"databases.session.{SID}")]
    assert all(i["fix_hint"] is None for i in left), left
    code, report, _ = doctor_json(project, home, "--fix")
    assert [f for f in report["fixes"] if f["check"].startswith("databases.session")] == []
