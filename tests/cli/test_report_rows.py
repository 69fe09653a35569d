"""``air report`` reads its events as rows by type, and its page equals the page a full replay
of the log gives (IMPL-READ-6, issue 28)."""

from __future__ import annotations

from pathlib import Path

from air.cli.report import report_page
from air.cli.session_report import REPORT_TYPES, read_report_events, summarise
from air.contracts.event import EventFilter
from air.events.store import EventStore
from air.store.read_model import read_summary
from air.store.session_db import open_session_database
from air.testing.console_script import ConsoleEvents
from air.testing.sequences import realistic_sequence

SID = "ses_01REPORTROWS0000000000000"


def _session(tmp_path: Path) -> Path:
    """A realistic session of 4000 events with model calls of its tasks and Main Agent."""
    events = realistic_sequence(SID, "prj_rows", 4000, seed=7)
    calls = ConsoleEvents(SID, "prj_rows")
    tasks = [e.payload["task_spec"]["id"] for e in events if e.type == "task.created"]
    with_usage = []
    for event in events:
        with_usage.append(event)
        if event.type == "task.started":
            with_usage.append(calls.usage(event.payload["task_id"], 1000, 0.01))
        elif event.type == "user.message.created" and not event.payload.get("task_id"):
            with_usage.append(calls.usage(None, 400, None, purpose="main_agent"))
    assert len(tasks) > 2
    path = tmp_path / "session.db"
    db = open_session_database(path)
    try:
        EventStore(db).append_many(with_usage)
    finally:
        db.close()
    return path


def test_the_page_from_rows_by_type_equals_the_page_of_a_full_replay(tmp_path: Path) -> None:
    path = _session(tmp_path)
    db = open_session_database(path, must_exist=True)
    try:
        rows = read_report_events(db.conn, SID)
        everything = EventStore(db).query(EventFilter(session_id=SID))  # models, every event
        row = read_summary(db, SID)
    finally:
        db.close()
    assert {e.type for e in rows} <= set(REPORT_TYPES)
    assert len(rows) < len(everything)
    assert sum(1 for e in rows if e.type == "model.usage.recorded") > 5
    fast = summarise(rows)
    full = summarise(everything)
    assert fast.usage() == full.usage()
    out = tmp_path / "r.html"
    fast_page = report_page(fast, row, tmp_path, out)  # the span: the summary row's
    assert fast_page == report_page(full, row, tmp_path, out)
    assert fast == full
    assert fast_page.count('<h2 id="task-') == len(fast.tasks) > 2
