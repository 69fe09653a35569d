"""Replay seeks: events paged from SQLite as the replay reaches them, steps both ways, the
times shown are the events' own."""

from __future__ import annotations

from pathlib import Path

import trio
import trio.testing

from air.contracts.event import EventFilter, RuntimeEvent
from air.contracts.ui import ProjectionSnapshot, UiCommand
from air.events.store import EventStore
from air.projection import ProjectionStore, ReplayPlayer
from air.projection.event_pages import KEEP, PAGE, EventPages
from air.store.db import DatabaseManager
from air.store.session_db import open_session_database
from air.testing.sequences import realistic_sequence

SID = "ses_01REPLAYSEEKS0000000000000"


def _session(tmp_path: Path, length: int) -> tuple[DatabaseManager, list[RuntimeEvent]]:
    db = open_session_database(tmp_path / "session.db")
    EventStore(db).append_many(realistic_sequence(SID, "prj_replay", length, seed=9))
    return db, list(EventStore(db).query(EventFilter(session_id=SID)))


def test_pages_read_only_what_is_asked_and_hold_a_few(tmp_path: Path) -> None:
    db, events = _session(tmp_path, PAGE * (KEEP + 4) + 17)
    pages = EventPages(db, SID)
    assert len(pages) == len(events)
    assert pages[0] == events[0]
    assert pages.pages_read == 1  # the first frame needs the first page only
    assert [pages[i].id for i in range(len(events))] == [e.id for e in events]
    assert pages.held_pages() == KEEP
    assert pages[-1] == events[-1]
    assert list(pages[3:6]) == events[3:6]
    db.close()


def _screen(store: ProjectionStore) -> ProjectionSnapshot:
    return store.snapshot().model_copy(update={"revision": 0})


async def test_steps_both_ways_give_the_projection_of_that_position(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    db, events = _session(tmp_path, 300)
    pages = EventPages(db, SID)
    player = ReplayPlayer(pages, ProjectionStore(), paused=True)
    assert pages.pages_read == 0  # the player reads the log as it reaches it
    client = player.client()  # what the console reads: it follows every step back
    seen: list[int] = []
    client.subscribe(seen.append)
    async with trio.open_nursery() as nursery:
        await nursery.start(player.run)
        for _ in range(40):
            await player.send(UiCommand(kind="replay_step"))
        at_40 = _screen(player.store)
        assert client.snapshot() == player.store.snapshot().model_copy(
            update={"revision": player.revision}
        )
        await player.send(UiCommand(kind="replay_step"))
        await player.send(UiCommand(kind="replay_back"))
        assert player.position == 40
        assert _screen(player.store) == at_40
        for _ in range(40):
            await player.send(UiCommand(kind="replay_back"))
        assert player.position == 0
        assert client.snapshot().session is None
        assert seen == sorted(seen)  # the revision never goes back, steps back included
        assert len(set(seen)) > 80
        assert client.snapshot().revision == seen[-1]
        await player.send(UiCommand(kind="replay_back"))  # at the start: nothing to undo
        assert player.position == 0
        await player.send(UiCommand(kind="quit"))
    fresh = ProjectionStore()
    fresh.hydrate_events(events[:40])
    assert _screen(fresh) == at_40
    db.close()


def test_the_hud_shows_the_time_of_the_event_not_the_clock(tmp_path: Path) -> None:
    db, events = _session(tmp_path, 50)
    player = ReplayPlayer(EventPages(db, SID), ProjectionStore(), paused=True)
    assert player.hud_text().endswith(f"0/{len(events)} at --:--:--")
    player.step()
    player.step()
    stamp = events[1].timestamp[11:19]
    assert player.hud_text().endswith(f"2/{len(events)} at {stamp}")
    db.close()
