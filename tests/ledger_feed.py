"""How the tests record a session as a headless run does: the events appended in batches, the
runtime's ``SessionLedger`` folding each batch as it arrives (and so storing a fold snapshot,
with its ``on_snapshot`` and memory give-back, every ``SNAPSHOT_EVERY`` events)."""

from __future__ import annotations

from collections.abc import Sequence

from air.contracts.event import RuntimeEvent
from air.events.store import EventStore
from air.nursery.ledger import SessionLedger

BATCH = 500


def append_as_the_runtime(
    store: EventStore, ledger: SessionLedger, events: Sequence[RuntimeEvent], batch: int = BATCH
) -> None:
    """Append ``events`` in batches of ``batch``, the ledger folding after each."""
    for start in range(0, len(events), batch):
        store.append_many(list(events[start : start + batch]))
        ledger.state()
