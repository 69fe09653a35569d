"""The report's stored fold (IMPL-READ-8, issue 28): a stored fold + the tail after it equals a
fold of the whole log (any split, any window), the runtime keeps it with each fold snapshot, a
difference is reported, a long task's lists are paged with counts and `--task` shows them all."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from air.cli.factory import _opened
from air.cli.report import report_page
from air.cli.report_snapshot import (
    KIND,
    ReportKeeper,
    check_report,
    decode_fold,
    encode_fold,
    open_report,
)
from air.cli.session_report import REPORT_TYPES, ReportFold, read_report_events, summarise
from air.events.fold_snapshot import SNAPSHOT_EVERY
from air.events.store import EventStore
from air.nursery.ledger import SessionLedger
from air.store.read_model import load_snapshot
from air.store.session_db import open_session_database
from air.testing.console_script import ConsoleEvents
from air.testing.sequences import realistic_sequence
from tests.doctor.helpers import air, make_project
from tests.ledger_feed import BATCH, append_as_the_runtime

SID = "ses_01REPORTFOLD00000000000000"


def _events(length: int, seed: int) -> list[Any]:
    """A realistic session with model calls of its tasks and of the Main Agent's turns."""
    events = realistic_sequence(SID, "prj_fold", length, seed=seed)
    calls = ConsoleEvents(SID, "prj_fold")
    out = []
    for event in events:
        out.append(event)
        if event.type == "task.started":
            out.append(calls.usage(event.payload["task_id"], 1000, 0.01))
        elif event.type == "user.message.created" and not event.payload.get("task_id"):
            out.append(calls.usage(None, 400, None, purpose="main_agent"))
    return out


def _page(summary: Any, tmp: Path) -> str:
    return report_page(summary, None, tmp, tmp / "r.html")


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**16), split=st.floats(0, 1), keep=st.integers(1, 6))
def test_a_stored_fold_and_its_tail_equal_the_fold_of_the_whole_log(
    seed: int, split: float, keep: int
) -> None:
    events = [e for e in _events(800, seed) if e.type in REPORT_TYPES]
    at = int(len(events) * split)
    fold = ReportFold(keep=keep)
    for event in events[:at]:
        fold.feed(event)
    resumed = decode_fold(encode_fold(fold))  # stored and read back at `at`
    for event in events[at:]:
        resumed.feed(event)
    whole = summarise(events, keep=keep)
    got = resumed.summary()
    assert got == whole
    assert got.usage() == whole.usage()
    assert _page(got, Path("/nonexistent")) == _page(whole, Path("/nonexistent"))
    unbounded = summarise(events)  # every list whole: the windows are its latest
    assert len(got.by_turn) <= 2 * keep
    assert got.earlier_turn_count + len(got.by_turn) == len(unbounded.by_turn)
    assert got.earlier_turns.calls + sum(u.calls for u in got.by_turn.values()) == sum(
        u.calls for u in unbounded.by_turn.values()
    )
    for task in got.tasks.values():
        every = unbounded.tasks[task.task_id]
        assert task.commands == every.commands[-keep:]
        assert task.command_count == len(every.commands)
        assert sum(task.command_counts.values()) == task.command_count
        assert task.evidence == every.evidence[-keep:]
        assert task.evidence_count == len(every.evidence)
        diffs = [a for a in every.artifacts if a.get("type") == "diff"]
        assert (task.artifacts, task.diff_count) == (diffs[-keep:], len(diffs))
    full = _fold(events, keep)
    full.summary()  # sets the tasks' tokens, as it did on ``resumed``
    assert encode_fold(resumed) == encode_fold(full)  # the same state, stored


def _fold(events: list[Any], keep: int) -> ReportFold:
    fold = ReportFold(keep=keep)
    for event in events:
        fold.feed(event)
    return fold


def _write_headless(path: Path, events: list[Any]) -> None:
    """As a headless run records a session: the ledger folds each batch, and with each fold
    snapshot the runtime's keepers run (``air.cli.factory._opened``)."""
    db = open_session_database(path)
    try:
        store = EventStore(db)
        ledger = SessionLedger(store, session_id=SID, project_id="prj_fold", snapshots=db)
        session = SimpleNamespace(events=store, artifacts=SimpleNamespace(root=path.parent))
        _opened(session, ledger, None)
        append_as_the_runtime(store, ledger, events)
    finally:
        db.close()


def test_the_runtime_keeps_the_report_fold_and_a_report_folds_only_the_tail(
    tmp_path: Path,
) -> None:
    events = _events(3 * SNAPSHOT_EVERY, seed=5)
    path = tmp_path / "session.db"
    _write_headless(path, events)
    db = open_session_database(path, must_exist=True)
    try:
        stored = load_snapshot(db, f"{KIND}:{SID}")
        assert stored is not None  # no report was asked for: the runtime stored it
        assert stored.event_seq > len(events) // 2
        tail = read_report_events(db.conn, SID, after=stored.event_seq)
        assert len(tail) < SNAPSHOT_EVERY + BATCH  # what a report reads of the log
        at = open_report(db, SID)
        whole = summarise(read_report_events(db.conn, SID), keep=at.fold.keep)
        assert at.fold.summary() == whole
        assert at.fold.summary().usage() == whole.usage()
        assert check_report(db, SID) is None  # stored fold + tail == a fold of the whole log
    finally:
        db.close()


def test_a_report_reads_only_and_ignores_a_fold_of_other_windows(tmp_path: Path) -> None:
    events = [e for e in _events(1500, seed=9) if e.type in REPORT_TYPES]
    path = tmp_path / "session.db"
    db = open_session_database(path)
    try:
        EventStore(db).append_many(events)
        at = open_report(db, SID)
        assert load_snapshot(db, f"{KIND}:{SID}") is None  # a report never writes
        ReportKeeper(db, SID, keep=2)()  # a fold of other windows is stored
        again = open_report(db, SID)
        assert again.fold.keep == at.fold.keep
        assert encode_fold(again.fold) == encode_fold(at.fold)
    finally:
        db.close()


def _stored_body(db: Any) -> dict[str, Any]:
    stored = load_snapshot(db, f"{KIND}:{SID}")
    assert stored is not None
    return dict(json.loads(stored.body))


def _store(path: Path, body: dict[str, Any] | str, seq: int | None = None) -> None:
    with sqlite3.connect(path) as conn:
        text = body if isinstance(body, str) else json.dumps(body)
        conn.execute("UPDATE fold_snapshots SET body = ? WHERE kind = ?", (text, f"{KIND}:{SID}"))
        if seq is not None:
            conn.execute(
                "UPDATE fold_snapshots SET event_seq = ? WHERE kind = ?", (seq, f"{KIND}:{SID}")
            )


def test_a_stored_fold_that_differs_from_the_log_is_reported(tmp_path: Path) -> None:
    events = _events(1500, seed=13)
    path = tmp_path / "session.db"
    db = open_session_database(path)
    try:
        EventStore(db).append_many(events)
        ReportKeeper(db, SID)()
        assert check_report(db, SID) is None
        whole = summarise(read_report_events(db.conn, SID), keep=10)
        body = _stored_body(db)
        good = dict(body)
        body["tasks"][0]["status"] = (
            "completed" if body["tasks"][0]["status"] != "completed" else "failed"
        )
        _store(path, body)
        assert "in tasks" in str(check_report(db, SID))
        body = dict(good, ledger_used=not good["ledger_used"], before_ledger=[{"input_tokens": 7}])
        body["ledger"] = dict(good["ledger"], by_task=[])
        _store(path, body)
        assert "usage" in str(check_report(db, SID))
        _store(path, "{not json")
        assert "cannot be read" in str(check_report(db, SID))
        assert open_report(db, SID).fold.summary() == whole  # a cache miss: the log
        _store(path, encode_fold(ReportFold(keep=10)), seq=10**9)  # of another, longer log
        assert "past the end of the log" in str(check_report(db, SID))
        assert open_report(db, SID).fold.summary() == whole
    finally:
        db.close()


def _long_task_session(project: Path, sid: str) -> None:
    """One task that ran 40 commands (every fourth exit 1, the last cancelled), 12 diffs and
    15 evidence items."""
    calls = ConsoleEvents(sid, "prj_fold")
    events = [*calls.session(), *calls.task("t1", "the long one"), *calls.start("t1")]
    for n in range(40):
        cid, started = calls.command("t1", f"make check{n}")
        events += started
        events += (
            calls.command_cancelled(cid) if n == 39 else calls.command_done(cid, int(n % 4 == 3))
        )
    for n in range(12):
        events += calls.artifact("t1", f"/nowhere/{n}.diff")
    for n in range(15):
        events += calls.evidence("t1", f"claim {n}")
    events += calls.complete("t1", "done")
    path = project / ".air" / "local" / "sessions" / sid / "session.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    db = open_session_database(path)
    try:
        EventStore(db).append_many(events)
    finally:
        db.close()


LONG = "ses_01REPORTLONGTASK00000000000"


def test_a_long_task_lists_its_latest_with_counts_and_task_shows_every_one(
    tmp_path: Path,
) -> None:
    project, home = make_project(tmp_path)
    _long_task_session(project, LONG)
    done = air(project, home, "report", "--html", "r.html", "--session", LONG)
    assert done.returncode == 0, done.stderr
    page = (project / "r.html").read_text()
    shown = [int(n) for n in re.findall(r'<li data-n="(\d+)">', page)]
    # the last 10 (31-40) and the last 5 that did not succeed (24, 28, 32, 36, 40)
    assert shown == [24, 28, *range(31, 41)]
    assert 'data-commands="40"' in page
    assert "30 exit 0, 9 another exit code, 1 cancelled" in page
    assert 'data-shown="12" data-total="40"' in page
    assert 'data-shown="10" data-total="15"' in page  # evidence
    assert 'data-shown="10" data-total="12"' in page  # diffs
    assert "air report --html FILE --task t1" in page
    one = air(project, home, "report", "--html", "t.html", "--session", LONG, "--task", "t1")
    assert one.returncode == 0, one.stderr
    task_page = (project / "t.html").read_text()
    assert [int(n) for n in re.findall(r'<li data-n="(\d+)">', task_page)] == list(range(1, 41))
    assert task_page.count("data-evidence=") == 15
    assert 'class="more"' not in task_page
    bad = air(project, home, "report", "--html", "x.html", "--session", LONG, "--task", "nope")
    assert bad.returncode == 2
    assert "has no task 'nope'" in bad.stderr
    assert "Traceback" not in bad.stderr
    assert not (project / "x.html").exists()
