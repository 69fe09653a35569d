"""`air doctor` checks a session's fold snapshot against a full replay of its log."""

from __future__ import annotations

from pathlib import Path

from air.contracts.event import EventFilter
from air.events.fold import replay
from air.events.fold_snapshot import FoldAt, save_fold
from air.events.store import EventStore
from air.store.session_db import open_session_database
from tests.doctor.helpers import doctor_json, make_project, write_session

SID = "ses_snapshot"


def test_a_snapshot_that_differs_from_its_log_is_a_reported_defect(tmp_path: Path) -> None:
    project, home = make_project(tmp_path)
    path = write_session(project, SID, length=120, seed=4)
    db = open_session_database(path)
    events = EventStore(db).query(EventFilter(session_id=SID))
    # the state after 30 events, claimed to be the state after 100
    save_fold(db, SID, FoldAt(replay(events[:30]), 100, 0), "2026-01-01T00:00:00.000000Z")
    db.close()

    _code, report, _ = doctor_json(project, home)
    found = [i for i in report["issues"] if i["check"].endswith(".snapshot")]
    assert [i["check"] for i in found] == [f"databases.session.{SID}.snapshot"]
    assert "differs from a full replay" in found[0]["message"]
    assert found[0]["severity"] == "warning"
    assert found[0]["user_action"]

    _code, report, _ = doctor_json(project, home, "--fix")
    assert (f"databases.session.{SID}.snapshot", "fixed") in {
        (f["check"], f["status"]) for f in report["fixes"]
    }
    _code, report, _ = doctor_json(project, home)
    assert not [i for i in report["issues"] if i["check"].endswith(".snapshot")]
