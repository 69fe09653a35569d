"""The event bus keeps its bound (issue 23 item 5, IMPL-AGENT-6): a subscriber that never reads
never grows the parent past its outbox bound plus its channel, the publishers that wait for room
are held back once (bounded), never forever, and the subscriber is told it lagged; a slow but
live subscriber gets every durable event, because the ingestor and the Ledger wait for room.
Virtual time (``autojump_clock``): nothing here runs a child process."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from air.contracts.event import EventFilter, EventSource, RuntimeEvent, new_event
from air.events.bus import EventBus, Subscription
from air.events.ingestor import EventIngestor
from air.events.store import EventStore
from air.nursery.ledger import SessionLedger
from air.store.session_db import open_session_database

SRC = EventSource(kind="scheduler", id="sched")
LIMIT = 5.0  # EventBus.wait_for_room's default limit


def ev(type_: str, **payload: object) -> RuntimeEvent:
    return new_event(type_, dict(payload), session_id="ses_B", source=SRC)


def message(n: int) -> RuntimeEvent:
    return ev("user.message.created", message_id=f"m{n}", content=[])


def _store(tmp: Path, bus: EventBus) -> EventStore:
    store = EventStore(open_session_database(tmp / "s.db"), bus=bus)
    store.append(ev("session.created", session_id="ses_B", project_id="prj"))
    return store


async def test_a_subscriber_that_never_reads_stays_bounded_and_is_told_it_lagged(
    autojump_clock: trio.testing.MockClock,
) -> None:
    bus = EventBus()
    lagged: list[Subscription] = []
    async with bus.serving():
        sub, _never_read = bus.subscribe_channel(None, on_lag=lagged.append)
        await trio.sleep(0.01)  # the pump fills the channel, then waits on it
        start = trio.current_time()
        event = ev("task.created", task_id="t")
        peak = 0
        for _ in range(50_000):
            bus.publish(event)
            assert await bus.wait_for_room() or sub.needs_rehydrate
            peak = max(peak, bus.stats()["subscriptions"][0]["queued"])
        held = trio.current_time() - start
        assert peak <= sub.bound + 256  # the outbox bound plus the channel, never 50,000
        assert lagged == [sub]  # told once
        assert sub.needs_rehydrate
        assert sub.lags >= 48  # the backlog was discarded each time it filled again
        assert held == pytest.approx(LIMIT)  # the publisher waited once, for the limit
        sub.close()


async def test_a_dead_handler_holds_the_ingestor_back_once_and_the_store_keeps_every_event(
    tmp_path: Path, autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    bus = EventBus(queue_bound=64)
    store = _store(tmp_path, bus)
    ingestor = EventIngestor(store, bus)

    async def dead(e: RuntimeEvent) -> None:
        await trio.sleep_forever()

    async with bus.serving():
        sub = bus.subscribe(None, dead)
        await trio.sleep(0.01)
        start = trio.current_time()
        peak = 0
        for n in range(1_000):
            assert await ingestor.ingest(message(n)) is not None
            peak = max(peak, sub.pending)
        assert trio.current_time() - start == pytest.approx(LIMIT)
        assert peak <= 64 + 64  # outbox bound + the handler channel's buffer
        assert sub.needs_rehydrate
        sub.close()
    assert len(store.query(EventFilter(types=["user.message.created"]))) == 1_000
    assert "lags (made no room in 5.0s)" in caplog.text


async def test_a_slow_reader_gets_every_durable_event_through_the_ingestor(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    bus = EventBus(queue_bound=16, max_buffer=4)
    ingestor = EventIngestor(_store(tmp_path, bus), bus)
    got: list[str] = []

    async def slow(e: RuntimeEvent) -> None:
        await trio.sleep(0.001)
        got.append(str(e.payload["message_id"]))

    async with bus.serving():
        sub = bus.subscribe(EventFilter(types=["user.message.created"]), slow)
        for n in range(1_000):
            await ingestor.ingest(message(n))
            assert sub.durable_pending <= sub.high_water + 1
        await bus.drain()
    assert got == [f"m{n}" for n in range(1_000)]
    assert (sub.lags, sub.dropped) == (0, 0)


async def test_the_ledger_takes_the_same_backpressure(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    bus = EventBus(queue_bound=16, max_buffer=4)
    ledger = SessionLedger(_store(tmp_path, bus), session_id="ses_B", project_id="prj")
    got: list[str] = []

    async def slow(e: RuntimeEvent) -> None:
        await trio.sleep(0.001)
        got.append(str(e.payload["message_id"]))

    async with bus.serving():
        sub = bus.subscribe(EventFilter(types=["user.message.created"]), slow)
        for n in range(300):
            await ledger.record("user.message.created", {"message_id": f"m{n}", "content": []})
        await bus.drain()
    assert got == [f"m{n}" for n in range(300)]
    assert sub.lags == 0


async def test_a_handler_that_publishes_never_waits_for_its_own_backlog(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    bus = EventBus(queue_bound=16, max_buffer=1)
    store = _store(tmp_path, bus)
    ingestor = EventIngestor(store, bus)
    answered: list[str] = []

    async def answer(e: RuntimeEvent) -> None:
        # a handler that records a fact of its own (as the Main Agent's observer does)
        await ingestor.ingest(message(len(answered)))
        answered.append(str(e.payload["task_id"]))

    async with bus.serving():
        sub = bus.subscribe(EventFilter(types=["task.created"]), answer)
        for n in range(16):  # past the high-water mark (8) before the handler first runs
            bus.publish(ev("task.created", task_id=f"t{n}"))
        start = trio.current_time()
        await bus.drain()
        assert trio.current_time() - start == 0
    assert answered == [f"t{n}" for n in range(16)]
    assert sub.lags == 0


async def test_waiting_for_room_without_a_service_returns_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    bus = EventBus(queue_bound=8)
    got: list[str] = []
    sub = bus.subscribe(None, lambda e: got.append(e.type))
    for n in range(6):
        bus.publish(ev("task.created", task_id=f"t{n}"))
    assert sub.holds_back  # nothing delivers until drain(): waiting could only time out
    assert await bus.wait_for_room()
    assert trio.current_time() == 0
    assert sub.lags == 0
    await bus.drain()
    assert got == ["task.created"] * 6
