"""EventPages: a session's stored events as a sequence read from SQLite a page at a time.

Owns ``EventPages``: ``len`` comes from the session's summary row (``air.store.read_model``),
``pages[i]`` is the i-th event (oldest first) read with its page of ``PAGE`` rows by ``seq``
when first asked for; at most ``KEEP`` pages are held (least recently used dropped). The
replay of a 100,000-event session reads one page before its first frame, and holds a few
pages whatever the session's length.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import overload

from air.contracts.event import RuntimeEvent
from air.events.store import record_to_event
from air.store.db import DatabaseManager
from air.store.read_model import read_summary

__all__ = ["KEEP", "PAGE", "EventPages"]

PAGE = 512
"""Events read at once."""
KEEP = 8
"""Pages held in memory."""


class EventPages(Sequence[RuntimeEvent]):
    """The events of ``session_id`` in ``db``, oldest first, paged.

    Args:
        db: the session database (kept open by the caller while this is used).
        session_id: the session.
    """

    def __init__(self, db: DatabaseManager, session_id: str) -> None:
        self.db = db
        self.session_id = session_id
        row = read_summary(db, session_id)
        self._len = row.events if row is not None else 0
        self._pages: OrderedDict[int, list[RuntimeEvent]] = OrderedDict()
        self.pages_read = 0
        """How many pages were read from the database (for tests and the bench)."""

    def __len__(self) -> int:
        return self._len

    def held_pages(self) -> int:
        return len(self._pages)

    def _page(self, number: int) -> list[RuntimeEvent]:
        page = self._pages.get(number)
        if page is not None:
            self._pages.move_to_end(number)
            return page
        cursor = self.db.conn.execute(
            "SELECT * FROM events WHERE session_id = ? ORDER BY seq LIMIT ? OFFSET ?",
            (self.session_id, PAGE, number * PAGE),
        )
        names = [d[0] for d in cursor.description]
        page = [record_to_event(dict(zip(names, row, strict=True))) for row in cursor]
        self.pages_read += 1
        self._pages[number] = page
        while len(self._pages) > KEEP:
            self._pages.popitem(last=False)
        return page

    @overload
    def __getitem__(self, index: int) -> RuntimeEvent: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[RuntimeEvent]: ...

    def __getitem__(self, index: int | slice) -> RuntimeEvent | Sequence[RuntimeEvent]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._len))]
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError(index)
        page = self._page(index // PAGE)
        offset = index % PAGE
        if offset >= len(page):
            raise IndexError(index)  # the log is shorter than its summary row said
        return page[offset]
