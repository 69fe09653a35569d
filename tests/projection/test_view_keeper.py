"""A session that grows headless keeps its console view stored: a reopen is the view and a
short tail, and the view still equals a fold of the whole log (IMPL-READ-7, issue 28)."""

from __future__ import annotations

from pathlib import Path

from air.events.fold_snapshot import SNAPSHOT_EVERY
from air.events.store import EventStore
from air.nursery.ledger import SessionLedger
from air.projection.store import ProjectionStore
from air.projection.view_snapshot import ViewKeeper, check_view, load_view
from air.store.session_db import open_session_database
from air.testing.sequences import realistic_sequence
from tests.ledger_feed import BATCH, append_as_the_runtime

SID = "ses_01VIEWKEEPER000000000000000"


def test_a_session_written_headless_reopens_from_its_stored_view(tmp_path: Path) -> None:
    events = realistic_sequence(SID, "prj_keeper", 3 * SNAPSHOT_EVERY, seed=3)
    db = open_session_database(tmp_path / "session.db")
    try:
        store = EventStore(db)
        # the runtime's ledger: the scheduler reads its fold as events arrive
        ledger = SessionLedger(store, session_id=SID, project_id="prj_keeper", snapshots=db)
        ledger.on_snapshot = ViewKeeper(store, SID, tmp_path / "artifacts")
        append_as_the_runtime(store, ledger, events)
        reopen = ProjectionStore(artifact_root=tmp_path / "artifacts")
        stored = load_view(store, SID, reopen)
        assert stored is not None  # the console never opened this session: the runtime stored it
        reopen.restore(stored.state, stored.revision, stored.seq)
        tail = reopen.hydrate(store, SID)  # what a reopen reads of the log
        assert tail < SNAPSHOT_EVERY + BATCH
        assert tail < len(events) // 2
        full = ProjectionStore(artifact_root=tmp_path / "artifacts")
        assert full.hydrate(store, SID) == len(events)
        assert reopen.snapshot() == full.snapshot()
        assert check_view(store, SID) is None  # doctor's check: view + tail == replay
    finally:
        db.close()
