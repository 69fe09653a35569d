"""The console's stored view (IMPL-READ-2): view + the events after it == a fold of the whole
log; a reopen reads only the events after the view; each list keeps its newest entries.

Real session databases (SQLite) written through the EventStore; the sessions come from the
generators the tests and ``bench/sessions.py`` share (``air.testing.sequences``).
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from air.contracts.event import RuntimeEvent
from air.events.payloads import EPHEMERAL_TYPES
from air.events.store import EventStore
from air.projection.store import ProjectionStore
from air.projection.view_snapshot import (
    KIND,
    check_view,
    load_view,
    open_projection,
)
from air.store.db import DatabaseManager
from air.store.read_model import load_snapshot, save_snapshot
from air.store.session_db import open_session_database
from air.testing.sequences import drawn_sequence, realistic_sequence

SID = "ses_01VIEWSNAPSHOT00000000000A"
NOW = "2026-01-01T00:00:00.000000Z"


def _log(events: list[RuntimeEvent]) -> tuple[DatabaseManager, EventStore]:
    db = open_session_database(":memory:")
    log = EventStore(db)
    log.append_many([e for e in events if e.type not in EPHEMERAL_TYPES])
    return db, log


def _full(log: EventStore, window: int) -> ProjectionStore:
    store = ProjectionStore(window=window)
    store.hydrate(log, SID)
    return store


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), cut=st.floats(0.0, 1.0), window=st.integers(2, 12))
def test_view_plus_the_events_after_it_is_the_fold_of_the_whole_log(
    data: st.DataObject, cut: float, window: int
) -> None:
    events = [e for e in drawn_sequence(data, SID, "prj_view", 80) if e.type not in EPHEMERAL_TYPES]
    k = max(1, int(cut * len(events)))
    db, log = _log(events[:k])
    first = open_projection(log, SID, save_after=1, window=window)  # stores the view at k
    assert first.rows_read == k
    log.append_many(events[k:])
    reopened = open_projection(log, SID, save_after=len(events) + 1, window=window)
    assert reopened.rows_read == len(events) - k  # only the tail was read
    assert reopened.snapshot() == _full(log, window).snapshot()  # revision included
    assert check_view(log, SID) is None
    db.close()


def test_a_reopen_reads_only_the_events_after_the_stored_view() -> None:
    events = realistic_sequence(SID, "prj_view", 1200, seed=3)
    db, log = _log(events)
    rows: list[str] = []
    db.conn.set_trace_callback(rows.append)
    first = open_projection(log, SID, save_after=1000)
    total = first.rows_read
    assert total == len([e for e in events if e.type not in EPHEMERAL_TYPES])
    log.append_many(realistic_sequence(SID, "prj_view", 1300, seed=3)[len(events) :])
    rows.clear()
    again = open_projection(log, SID, save_after=1000)
    assert 0 < again.rows_read < 200  # the view's position, then the new events only
    reads = [sql for sql in rows if "FROM events" in sql and "max(seq)" not in sql]
    assert len(reads) == 1, reads
    assert "seq >" in reads[0]
    assert again.snapshot() == _full(log, again.window).snapshot()
    db.close()


def test_each_list_keeps_its_newest_entries() -> None:
    events = realistic_sequence(SID, "prj_view", 400, seed=5)
    db, log = _log(events)
    whole = _full(log, 10_000).snapshot()
    small = _full(log, 7).snapshot()
    assert len(whole.tool_runs) > 7
    assert [t.tool_run_id for t in small.tool_runs] == [t.tool_run_id for t in whole.tool_runs[-7:]]
    for shown in (small.messages, small.command_runs, small.artifacts, small.evidence):
        assert len(shown) <= 7
    assert small.tasks == whole.tasks  # tasks are the fold's: never windowed
    db.close()


def test_a_view_that_does_not_fit_is_not_used() -> None:
    events = realistic_sequence(SID, "prj_view", 300, seed=7)
    db, log = _log(events)
    stored = open_projection(log, SID, save_after=1)
    assert load_view(log, SID, ProjectionStore()) is not None
    # another window, another artifact root: the log is folded whole
    assert open_projection(log, SID, window=3).rows_read == stored.rows_read
    assert load_view(log, SID, ProjectionStore(artifact_root="/nonexistent")) is None
    # a view past the end of the log (a log rebuilt shorter) is refused and reported
    row = load_snapshot(db, f"{KIND}:{SID}")
    assert row is not None
    save_snapshot(db, row.kind, row.event_seq + 5, row.codec, row.body, NOW)
    assert open_projection(log, SID, save_after=10**9).rows_read == stored.rows_read
    assert "past the end of the log" in str(check_view(log, SID))
    db.close()


def test_a_damaged_or_wrong_view_is_reported_and_never_shown() -> None:
    events = realistic_sequence(SID, "prj_view", 300, seed=8)
    db, log = _log(events)
    open_projection(log, SID, save_after=1)
    row = load_snapshot(db, f"{KIND}:{SID}")
    assert row is not None
    save_snapshot(db, row.kind, row.event_seq, row.codec, row.body[:-9], NOW)
    assert "cannot be read" in str(check_view(log, SID))
    assert open_projection(log, SID, save_after=10**9).rows_read > 0  # folded whole instead
    # a view that reads but says something else than the log: a defect, named
    wrong = row.body.replace('"main_state":"', '"main_state":"X', 1)
    save_snapshot(db, row.kind, row.event_seq, row.codec, wrong, NOW)
    assert "main_agent" in str(check_view(log, SID))
    db.close()


def test_an_event_a_hydration_read_is_skipped_on_the_live_feed() -> None:
    events = realistic_sequence(SID, "prj_view", 120, seed=2)
    db, log = _log(events)
    store = ProjectionStore()
    store.hydrate(log, SID)
    before = store.snapshot()
    durable = [e for e in events if e.type not in EPHEMERAL_TYPES]
    for event in durable[-20:]:  # still queued on the bus when the hydration read them
        assert not store.apply(event)
    assert store.snapshot() is before
    db.close()
