"""``air doctor`` checks a session's stored console view and report fold against a fold of its
whole log (issue 28 item 1): a stored copy that differs, cannot be read or claims events past
the log's end is a reported warning, and ``--fix`` drops it (a cache: the next reader folds the
log); a faithful one is no issue."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from air.cli.report_snapshot import KIND as REPORT_KIND
from air.cli.report_snapshot import ReportKeeper
from air.events.store import EventStore
from air.projection.store import ProjectionStore
from air.projection.view_snapshot import KIND as VIEW_KIND
from air.projection.view_snapshot import save_view
from air.store.session_db import open_session_database
from tests.doctor.helpers import doctor_json, make_project, write_session

SID = "ses_views"


def _issues(report: dict[str, object]) -> list[dict[str, str]]:
    issues = report["issues"]
    assert isinstance(issues, list)
    return [i for i in issues if i["check"].startswith("stored_views")]


def test_stored_views_that_differ_from_the_log_are_reported_and_dropped(tmp_path: Path) -> None:
    project, home = make_project(tmp_path)
    path = write_session(project, SID, length=160, seed=7)
    db = open_session_database(path)
    try:
        events = EventStore(db)
        store = ProjectionStore()
        store.hydrate(events, SID)
        save_view(events, SID, store, "2026-01-01T00:00:00.000000Z")
        ReportKeeper(db, SID)()
    finally:
        db.close()
    _code, report, _ = doctor_json(project, home)
    assert _issues(report) == []  # faithful copies

    with sqlite3.connect(path) as conn:
        conn.execute(
            "UPDATE fold_snapshots SET body = '{not json' WHERE kind = ?", (f"{VIEW_KIND}:{SID}",)
        )
        conn.execute(
            "UPDATE fold_snapshots SET event_seq = 1000000000 WHERE kind = ?",
            (f"{REPORT_KIND}:{SID}",),
        )
    _code, report, _ = doctor_json(project, home)
    found = _issues(report)
    assert [i["check"] for i in found] == [f"stored_views.{SID}"] * 2
    assert "console view" in found[0]["message"]
    assert "cannot be read" in found[0]["message"]
    assert "report fold" in found[1]["message"]
    assert "past the end of the log" in found[1]["message"]
    assert {i["severity"] for i in found} == {"warning"}

    _code, report, _ = doctor_json(project, home, "--fix")
    assert [f["status"] for f in report["fixes"] if f["check"].startswith("stored_views")] == [
        "fixed",
        "fixed",
    ]
    with sqlite3.connect(path) as conn:
        kinds = {k for (k,) in conn.execute("SELECT kind FROM fold_snapshots")}
    assert f"{VIEW_KIND}:{SID}" not in kinds
    assert f"{REPORT_KIND}:{SID}" not in kinds
    _code, report, _ = doctor_json(project, home)
    assert _issues(report) == []
