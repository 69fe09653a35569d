"""The parent gives the allocator's free memory back at each fold snapshot (IMPL-RSS-1): the
session's ledger calls ``release_free_memory`` (glibc's ``malloc_trim``) after every snapshot it
stores, and a trim leaves what the process holds as it was."""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

from air.events.fold_snapshot import SNAPSHOT_EVERY
from air.events.store import EventStore
from air.nursery.allocator import release_free_memory
from air.nursery.ledger import SessionLedger
from air.store.session_db import open_session_database
from air.testing.sequences import realistic_sequence
from tests.ledger_feed import append_as_the_runtime

SID = "ses_01GIVEBACK0000000000000000"
GLIBC = sys.platform.startswith("linux") and hasattr(ctypes.CDLL(None), "malloc_trim")


def test_the_ledger_releases_memory_after_each_fold_snapshot(tmp_path: Path) -> None:
    events = realistic_sequence(SID, "prj_giveback", 3 * SNAPSHOT_EVERY, seed=5)
    db = open_session_database(tmp_path / "session.db")
    try:
        store = EventStore(db)
        ledger = SessionLedger(store, session_id=SID, project_id="prj_giveback", snapshots=db)
        calls: list[str] = []
        ledger.on_snapshot = lambda: calls.append("snapshot")
        ledger.release_memory = lambda: calls.append("release")
        append_as_the_runtime(store, ledger, events)
        assert calls == ["snapshot", "release"] * 3  # one give-back per snapshot, after it
        ledger.state()  # no new events, no snapshot: nothing to give back
        assert len(calls) == 6
    finally:
        db.close()


def test_a_fold_snapshot_without_a_client_still_releases_memory(tmp_path: Path) -> None:
    events = realistic_sequence(SID, "prj_giveback", SNAPSHOT_EVERY + 10, seed=6)
    db = open_session_database(tmp_path / "session.db")
    try:
        store = EventStore(db)
        ledger = SessionLedger(store, session_id=SID, project_id="prj_giveback", snapshots=db)
        assert ledger.release_memory is release_free_memory  # the default: the real trim
        released: list[bool] = []
        ledger.release_memory = lambda: released.append(release_free_memory())
        store.append_many(events)
        state = ledger.state()
        assert len(released) == 1
        assert released[0] is GLIBC  # musl, macOS: nothing to call, nothing done
        unsaved = SessionLedger(store, session_id=SID, project_id="prj_giveback")
        assert state == unsaved.state()  # the fold is what a ledger storing no snapshot folds
    finally:
        db.close()


def test_a_trim_keeps_every_live_object_intact() -> None:
    assert GLIBC, "air's supported machines (Debian) have glibc's malloc_trim"
    kept = [bytes([i % 251]) * 4096 for i in range(256)]  # malloc'd, not pymalloc'd
    freed = [b"x" * 8192 for _ in range(1024)]
    del freed
    assert release_free_memory() is True
    assert all(block == bytes([i % 251]) * 4096 for i, block in enumerate(kept))
