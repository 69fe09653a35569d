"""Fold snapshots: snapshot + the fold from its position == the full fold; readers start there.

Real session databases (SQLite) written through the EventStore; the sequences come from the
generator the tests and ``bench/sessions.py`` share (``air.testing.sequences``).
"""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from air.contracts.event import EventFilter, EventSource, RuntimeEvent
from air.events.fold import FoldCursor, replay
from air.events.fold_snapshot import (
    SCHEDULER_FOLD,
    SNAPSHOT_EVERY,
    FoldAt,
    check_snapshot,
    decode_state,
    encode_parts,
    encode_state,
    fold_session,
    save_fold,
)
from air.events.fold_state import SessionState
from air.events.store import EventStore
from air.nursery.ledger import SessionLedger
from air.store.db import DatabaseManager
from air.store.read_model import load_snapshot
from air.store.session_db import open_session_database
from air.testing.sequences import drawn_sequence, realistic_sequence

SID = "ses_01SNAPSHOT000000000000000A"
NOW = "2026-01-01T00:00:00.000000Z"


def _db(events: list[RuntimeEvent], path: str = ":memory:") -> DatabaseManager:
    db = open_session_database(path)
    EventStore(db).append_many(events)
    return db


def _scheduler(events: list[RuntimeEvent]) -> SessionState:
    """The scheduler's fold of ``events`` (IMPL-MEM-1), what the ledger keeps and snapshots."""
    return FoldCursor(SCHEDULER_FOLD).feed_all(events)


def _stored(db: DatabaseManager) -> list[RuntimeEvent]:
    """The log as stored (payload defaults filled in): what a reader of the database folds."""
    return EventStore(db).query(EventFilter(session_id=SID))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), cut=st.floats(0.0, 1.0))
def test_snapshot_plus_the_fold_from_its_position_is_the_full_fold(
    data: st.DataObject, cut: float
) -> None:
    db = _db(drawn_sequence(data, SID, "prj_snap", 60))
    events = _stored(db)
    k = int(cut * len(events))
    fold = _scheduler if data.draw(st.booleans()) else replay  # IMPL-MEM-1's fold or the whole
    save_fold(db, SID, FoldAt(fold(events[:k]), k, 0), NOW)  # seq == position: one session
    resumed = fold_session(db, SID)
    assert resumed.state == fold(events)
    assert (resumed.seq, resumed.snapshot_seq) == (len(events), k)
    assert check_snapshot(db, SID) is None
    db.close()


def test_a_snapshot_is_encoded_without_its_whole_tree_in_memory(tmp_path: Path) -> None:
    """IMPL-RSS-1: storing a snapshot allocates about twice its text, never the tree of JSON
    values for the whole state (7x the text here, every ``SNAPSHOT_EVERY`` events); the
    parts join to the very text ``encode_state`` gives."""
    state = replay(realistic_sequence(SID, "prj_snap", 6000, seed=5))
    body = encode_state(state)
    db = open_session_database(tmp_path / "session.db")
    try:
        save_fold(db, SID, FoldAt(state, 1, 0), NOW)  # the statements are prepared
        gc.collect()
        tracemalloc.start()
        try:
            save_fold(db, SID, FoldAt(state, 2, 0), NOW)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        stored = load_snapshot(db, f"session_fold:{SID}")
        assert stored is not None
        assert stored.body == body
    finally:
        db.close()
    assert peak < 3 * len(body.encode()), f"{peak} bytes to store {len(body)} characters"
    assert len(encode_parts(state)) > 1
    assert b"".join(encode_parts(state)).decode() == body


def test_the_codec_gives_back_an_equal_state() -> None:
    state = replay(realistic_sequence(SID, "prj_snap", 2500, seed=3))
    assert state.agent_events
    assert state.tool_runs
    assert decode_state(encode_state(state)) == state
    # a map of one kind of fact is stored as rows, not a tagged object per fact
    assert '"f":"ToolRunFact"' in encode_state(state)
    assert any(run.error is not None for run in state.tool_runs.values())  # models in rows


def test_a_decoded_fold_shares_one_string_per_id() -> None:
    """IMPL-RSS-1: as in the live fold, a task's key, its fact and the agents naming it hold one
    id string after a snapshot is read back (not a decoded copy each)."""
    state = decode_state(encode_state(_scheduler(realistic_sequence(SID, "prj_ids", 800, seed=4))))
    shared = 0
    for agent in state.agents.values():
        key = next(k for k in state.agents if k == agent.agent_id)
        assert key is agent.agent_id
        if agent.task_id is not None and agent.task_id in state.tasks:
            task_key = next(k for k in state.tasks if k == agent.task_id)
            assert task_key is state.tasks[task_key].task_id is agent.task_id
            shared += 1
    assert shared  # not vacuous: agents of known tasks were read back


def test_an_unreadable_snapshot_is_refused_not_trusted() -> None:
    for body in ("not json", '{"t": "os.system", "v": []}', '{"p": "TaskSpec", "v": {}}', "[]"):
        with pytest.raises(ValueError, match="fold snapshot"):
            decode_state(body)


def test_the_ledger_starts_from_the_snapshot_and_keeps_it(tmp_path: Path) -> None:
    db = _db(
        realistic_sequence(SID, "prj_snap", SNAPSHOT_EVERY + 300, seed=4), str(tmp_path / "s.db")
    )
    store = EventStore(db)
    events = _stored(db)

    def ledger() -> SessionLedger:
        source = EventSource(kind="scheduler")
        return SessionLedger(
            store, session_id=SID, project_id="prj_snap", source=source, snapshots=db
        )

    first = ledger()
    assert first.state() == _scheduler(events)
    stored = load_snapshot(db, f"session_fold:{SID}")
    assert stored is not None
    assert stored.event_seq == len(events)
    # a second reader folds nothing before the snapshot's position: a planted snapshot (the
    # empty session, claimed at the last event) is what it reads
    save_fold(db, SID, FoldAt(FoldCursor().state, len(events), 0), NOW)
    assert ledger().state() == FoldCursor().state
    db.close()


def test_a_snapshot_that_differs_from_the_log_is_a_defect(tmp_path: Path) -> None:
    db = _db(realistic_sequence(SID, "prj_snap", 400, seed=6), str(tmp_path / "session.db"))
    events = _stored(db)
    save_fold(db, SID, FoldAt(replay(events[:100]), 300, 0), NOW)  # the wrong position
    found = check_snapshot(db, SID)
    assert found is not None
    assert "differs from a full replay" in found
    assert "tasks" in found or "tool_runs" in found or "counts" in found
    save_fold(db, SID, FoldAt(replay(events), len(events) + 5, 0), NOW)
    assert "past the end of the log" in str(check_snapshot(db, SID))
    with db.transaction() as conn:
        conn.execute("UPDATE fold_snapshots SET body = 'garbage'")
    assert "cannot be read" in str(check_snapshot(db, SID))
    assert fold_session(db, SID).state == _scheduler(events)  # a reader falls back to the log
    db.close()
