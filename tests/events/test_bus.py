"""EventBus: non-blocking publish, a bounded channel per subscriber, coalescing, backpressure,
the rehydrate policy, failing handlers, drain. ``sub.queue`` is now the outbox in front of the
subscriber's channel (without a running service every event waits there, as before)."""

from __future__ import annotations

import threading

import pytest
import trio

from air.contracts.event import EventFilter, EventSource, RuntimeEvent, new_event
from air.events.bus import EventBus, Subscription, event_matches

SRC = EventSource(kind="system")


def ev(type_: str, **payload: object) -> RuntimeEvent:
    return new_event(type_, dict(payload), session_id="ses_1", source=SRC)


async def test_subscribers_get_matching_events_in_order() -> None:
    bus = EventBus()
    tasks: list[str] = []
    everything: list[str] = []
    async with bus.serving():
        bus.subscribe(EventFilter(type_prefix="task."), lambda e: tasks.append(e.type))
        bus.subscribe(None, lambda e: everything.append(e.type))
        for t in ("task.created", "tool.started", "task.started", "task.completed"):
            bus.publish(ev(t, task_id="t1"))
        await bus.drain()
    assert tasks == ["task.created", "task.started", "task.completed"]
    assert everything == ["task.created", "tool.started", "task.started", "task.completed"]


async def test_a_failing_handler_is_logged_and_the_subscription_stays(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bus = EventBus()
    seen: list[str] = []

    def flaky(e: RuntimeEvent) -> None:
        if e.payload.get("n") == 1:
            raise RuntimeError("handler bug")
        seen.append(str(e.payload["n"]))

    async with bus.serving():
        bus.subscribe(None, flaky)
        for n in range(3):
            bus.publish(ev("user.message.created", n=n))
        await bus.drain()
    assert seen == ["0", "2"]
    assert "handler bug" in caplog.text


class Collector:
    """A handler that records payload values and signals when it has ``want`` of them."""

    def __init__(self, want: int, key: str = "n") -> None:
        self.want = want
        self.key = key
        self.items: list[object] = []
        self.done = trio.Event()

    def __call__(self, e: RuntimeEvent) -> None:
        self.items.append(e.payload.get(self.key, e.type))
        if len(self.items) >= self.want:
            self.done.set()

    async def wait(self) -> None:
        with trio.fail_after(5):
            await self.done.wait()


async def test_a_slow_subscriber_does_not_delay_a_fast_one() -> None:
    bus = EventBus()
    fast = Collector(5)
    release = trio.Event()

    async def slow(e: RuntimeEvent) -> None:
        await release.wait()

    async with bus.serving():
        bus.subscribe(None, slow)
        bus.subscribe(None, fast)
        for n in range(5):
            bus.publish(ev("user.message.created", n=n))
        await fast.wait()
        release.set()
    assert fast.items == [0, 1, 2, 3, 4]


def test_publish_without_a_service_queues_until_drained_and_never_blocks() -> None:
    bus = EventBus(queue_bound=60)
    got: list[str] = []
    sub = bus.subscribe(None, lambda e: got.append(e.type))
    for i in range(50):
        bus.publish(ev("task.created", task_id=f"t{i}"))  # durable: within the bound, kept
    for i in range(50):
        bus.publish(ev("tool.progress", tool_run_id=f"tr{i}"))  # ephemeral: bounded
    assert len(sub.queue) == 60  # the outbox is at its bound: the other ephemeral ones dropped
    assert sub.dropped == 40
    trio.run(bus.drain)
    assert got == ["task.created"] * 50 + ["tool.progress"] * 10


def test_ephemeral_events_are_coalesced_per_entity_but_deltas_are_kept() -> None:
    bus = EventBus()
    got: list[RuntimeEvent] = []
    sub = bus.subscribe(None, got.append)
    for turn in range(5):
        bus.publish(ev("agent.heartbeat", agent_id="a1", state="thinking", turn=turn))
        bus.publish(ev("agent.heartbeat", agent_id="a2", state="thinking", turn=turn))
    for i in range(3):
        bus.publish(ev("command.stdout.delta", command_run_id="c1", data=f"line {i}\n"))
    assert sub.coalesced == 8
    trio.run(bus.drain)
    beats = [(e.payload["agent_id"], e.payload["turn"]) for e in got if e.type == "agent.heartbeat"]
    assert beats == [("a1", 4), ("a2", 4)]
    assert [e.payload["data"] for e in got if e.type == "command.stdout.delta"] == [
        "line 0\n",
        "line 1\n",
        "line 2\n",
    ]


async def test_subscribe_channel_delivers_and_close_ends_the_reader() -> None:
    bus = EventBus()
    received: list[str] = []
    six = trio.Event()
    async with bus.serving():
        sub, channel = bus.subscribe_channel(EventFilter(types=["task.created"]), max_buffer=2)
        async with trio.open_nursery() as nursery:

            async def reader() -> None:
                async for e in channel:  # ends when the subscription closes the channel
                    received.append(e.payload["task_id"])
                    if len(received) == 6:
                        six.set()

            nursery.start_soon(reader)
            for i in range(6):
                bus.publish(ev("task.created", task_id=f"t{i}"))
                bus.publish(ev("task.started", task_id=f"t{i}"))
            with trio.fail_after(5):
                await six.wait()
            sub.close()
    assert received == [f"t{i}" for i in range(6)]
    assert sub not in bus.subscriptions


async def test_publish_from_a_worker_thread_is_delivered() -> None:
    bus = EventBus()
    got = Collector(1, key="task_id")
    async with bus.serving():
        bus.subscribe(None, got)
        thread = threading.Thread(target=bus.publish, args=(ev("task.created", task_id="x"),))
        thread.start()
        thread.join()
        await got.wait()
    assert got.items == ["x"]


async def test_run_service_form_with_nursery_start() -> None:
    bus = EventBus()
    got = Collector(1, key="task_id")
    async with trio.open_nursery() as nursery:
        started = await nursery.start(bus.run)
        assert started is bus
        bus.subscribe(None, got)
        bus.publish(ev("task.created", task_id="x"))
        await got.wait()
        nursery.cancel_scope.cancel()
    assert got.items == ["x"]


def test_event_matches_filters_on_every_field() -> None:
    e = ev("task.started", task_id="t1", agent_id="a1")
    assert event_matches(EventFilter(task_id="t1", agent_id="a1", session_id="ses_1"), e)
    assert not event_matches(EventFilter(task_id="t2"), e)
    assert not event_matches(EventFilter(agent_id="a2"), e)
    assert not event_matches(EventFilter(session_id="ses_2"), e)
    assert not event_matches(EventFilter(types=["task.created"]), e)
    spec_event = ev("task.created", task_spec={"id": "t9"})
    assert event_matches(EventFilter(task_id="t9"), spec_event)


# --- bounded channels, backpressure and the lag policy (IMPL-AGENT-6) -----------------------


async def test_a_slow_subscriber_loses_no_durable_event_and_the_publisher_is_held_back() -> None:
    bus = EventBus(queue_bound=16, max_buffer=4)
    got: list[int] = []
    done = trio.Event()

    async def slow(e: RuntimeEvent) -> None:
        await trio.lowlevel.checkpoint()  # a reader slower than the publisher
        got.append(int(e.payload["n"]))
        if len(got) == 2000:
            done.set()

    highest = 0
    async with bus.serving():
        sub = bus.subscribe(None, slow)
        for n in range(2000):
            bus.publish(ev("task.created", task_id=f"t{n}", n=n))
            assert await bus.wait_for_room(limit=5)
            highest = max(highest, sub.durable_pending)
        with trio.fail_after(10):
            await done.wait()
    assert got == list(range(2000))
    assert sub.dropped == 0
    assert highest <= 16  # backpressure kept the outbox at its bound


async def test_ephemeral_storm_is_coalesced_in_bounded_memory() -> None:
    bus = EventBus(queue_bound=64, max_buffer=8)
    release = trio.Event()
    last: dict[str, int] = {}
    deltas: list[str] = []
    durable: list[str] = []

    async def blocked(e: RuntimeEvent) -> None:
        await release.wait()
        if e.type == "agent.heartbeat":
            last[str(e.payload["agent_id"])] = int(e.payload["turn"])
        elif e.type == "command.stdout.delta":
            deltas.append(str(e.payload["data"]))
        else:
            durable.append(e.type)

    async with bus.serving():
        sub = bus.subscribe(None, blocked)
        await trio.sleep(0.01)  # the delivery tasks start and block on the first event
        peak = 0
        for turn in range(5_000):
            bus.publish(ev("agent.heartbeat", agent_id=f"a{turn % 10}", state="x", turn=turn))
            if turn % 4 == 0:
                bus.publish(ev("command.stdout.delta", command_run_id="c", data=f"{turn}\n"))
            peak = max(peak, sub.pending)
        bus.publish(ev("task.completed", task_id="t1"))  # durable: kept whatever the pressure
        assert peak <= 64 + 8
        assert sub.coalesced > 2_000
        assert sub.dropped > 0  # deltas past the bound
        release.set()
        await bus.drain()
    # the newest heartbeat of every agent arrives; the durable event too
    assert last == {f"a{i}": 4_990 + i for i in range(10)}
    assert len(deltas) < 1_250
    assert durable == ["task.completed"]


async def test_a_lagging_console_subscriber_is_marked_for_rehydrate_not_grown() -> None:
    bus = EventBus()
    lagged: list[Subscription] = []
    async with bus.serving():
        sub, channel = bus.subscribe_channel(
            None, max_buffer=8, queue_bound=100, lag="rehydrate", on_lag=lagged.append
        )
        await trio.sleep(0.01)
        for n in range(1000):
            bus.publish(ev("task.created", task_id=f"t{n}", n=n))
            assert sub.pending <= 100 + 8
        assert sub.needs_rehydrate
        assert lagged == [sub]  # told once
        assert sub.dropped > 0
        # the console re-reads the store, then resumes: new events flow again
        while True:
            try:
                channel.receive_nowait()
            except trio.WouldBlock:
                break
        sub.resume()
        bus.publish(ev("task.created", task_id="fresh", n=-1))
        with trio.fail_after(5):
            while True:
                e = await channel.receive()
                if e.payload["task_id"] == "fresh":
                    break
        assert not sub.needs_rehydrate
        sub.close()


async def test_drain_with_a_running_service_waits_for_every_accepted_event() -> None:
    # an event the pump hands straight to a waiting reader is in neither the outbox nor the
    # channel's buffer until the reader runs: drain must still wait for it
    bus = EventBus(max_buffer=1)
    got: list[int] = []

    async def handler(e: RuntimeEvent) -> None:
        await trio.lowlevel.checkpoint()
        got.append(int(e.payload["n"]))

    async with bus.serving():
        bus.subscribe(None, handler)
        n = 0
        for _ in range(200):
            for _ in range(3):
                bus.publish(ev("task.created", task_id=f"t{n}", n=n))
                n += 1
            await bus.drain()
            assert got == list(range(n))
