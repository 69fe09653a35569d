"""Knowledge recovery reads the log by event type through an index, never the whole log."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from air.contracts.event import EventFilter, RuntimeEvent
from air.events.bus import EventBus
from air.events.store import EventStore
from air.nursery.ledger import SessionLedger
from air.session.knowledge_recovery import recover_knowledge
from air.store.session_db import open_session_database
from air.testing.sequences import realistic_sequence

SESSION = "ses_01KNOWREADS0000000000000000"


class CountingLog:
    """A real EventStore that counts the ``events`` rows each read returns."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self.bus: EventBus | None = None
        self.rows_read = 0

    def append(self, event: RuntimeEvent) -> int:
        return self.store.append(event)

    def query_records(self, flt: EventFilter | None = None) -> list[dict[str, Any]]:
        rows = self.store.query_records(flt)
        self.rows_read += len(rows)
        return rows


async def test_recovery_reads_only_the_event_types_it_needs(tmp_path: Path) -> None:
    events = realistic_sequence(SESSION, "prj_reads", 3000, seed=5)
    db = open_session_database(tmp_path / "session.db")
    store = EventStore(db)
    store.append_many(events)
    log = CountingLog(store)
    ledger = SessionLedger(log, session_id=SESSION, project_id="prj_reads")
    (tmp_path / ".air" / "local").mkdir(parents=True)

    report = await recover_knowledge(ledger, tmp_path)

    assert report.debug_records_created == []
    types = Counter(e.type for e in events)
    needed = types["task.created"] + types["task.failed"] + types["task.completed"]
    assert 0 < log.rows_read <= needed < len(events) // 10
    db.close()


def test_the_type_lookup_is_an_index_search(tmp_path: Path) -> None:
    db = open_session_database(tmp_path / "session.db")
    plan = db.query(
        "EXPLAIN QUERY PLAN SELECT * FROM events WHERE session_id = ? AND type IN (?, ?) "
        "ORDER BY seq",
        (SESSION, "task.created", "task.failed"),
    )
    assert any("USING INDEX idx_events_type" in str(row[3]) for row in plan)
    db.close()
