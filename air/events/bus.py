"""EventBus: live fan-out of events, one bounded Trio memory channel per subscriber (SDD §5.5).

Owns ``EventBus``, ``Subscription`` and ``event_matches``. ``publish`` is synchronous and never
blocks (it runs right after a commit, SDD §5.3). Each subscription has an outbox in front of
its own bounded ``trio`` memory channel; a pump task moves events from the outbox into the
channel in order and waits while the channel is full, so a slow subscriber only ever delays
itself. Under that pressure the outbox coalesces ephemeral events (a newer event with the same
type and entity replaces the queued one in place; text deltas are never replaced) and, past the
subscription's bound, drops them (counted). No subscription ever holds more than ``bound``
ephemeral and ``bound`` durable events in its outbox plus its channel's ``max_buffer``
(IMPL-AGENT-6): a durable event past the bound makes the subscription *lag* — its backlog is
discarded (every durable event is in the store, the source of truth), it is marked
``needs_rehydrate`` and told once through ``on_lag`` (logged when it has none); it re-reads the
store, then calls ``resume()``. Before that, a ``keep`` subscription (the default) holds the
async publishers back: ``EventIngestor.ingest`` and the Ledger ``await bus.wait_for_room()``
while its durable backlog is past half its bound, so a slow but live reader loses nothing; one
that makes no room within the wait's limit (dead, stuck) lags instead. A ``rehydrate``
subscription (the console) never holds a publisher back. Handler subscriptions get a delivery
task that reads the channel and calls the handler; a failing handler is logged and never
propagates; the subscription stays. ``subscribe_channel`` hands the channel's receive end to the
subscriber itself. Delivery runs in ``async with bus.serving():`` (or
``await nursery.start(bus.run)``); without a running service events wait in the outboxes until
``drain()``. The bus is live transport only, never a recovery source.
"""

from __future__ import annotations

import inspect
import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal

import trio

from air.contracts.event import EventFilter, RuntimeEvent
from air.events.payloads import EPHEMERAL_TYPES

__all__ = ["EventBus", "Handler", "LagPolicy", "Subscription", "event_matches"]

log = logging.getLogger("air.events.bus")

Handler = Callable[[RuntimeEvent], None] | Callable[[RuntimeEvent], Awaitable[None]]
LagPolicy = Literal["keep", "rehydrate"]

_DELTAS = frozenset({"assistant.message.delta", "command.stdout.delta", "command.stderr.delta"})


def event_matches(flt: EventFilter | None, event: RuntimeEvent) -> bool:
    """True when ``event`` satisfies every set field of ``flt`` (not ``since_seq``/``limit``)."""
    if flt is None:
        return True
    if flt.session_id is not None and event.session_id != flt.session_id:
        return False
    if flt.types and event.type not in flt.types:
        return False
    if flt.type_prefix and not event.type.startswith(flt.type_prefix):
        return False
    payload = event.payload
    if flt.task_id is not None:
        task_id = payload.get("task_id")
        if task_id is None and isinstance(payload.get("task_spec"), dict):
            task_id = payload["task_spec"].get("id")
        if task_id != flt.task_id:
            return False
    return flt.agent_id is None or payload.get("agent_id") == flt.agent_id


def _coalesce_key(event: RuntimeEvent) -> tuple[str, str] | None:
    if event.type not in EPHEMERAL_TYPES or event.type in _DELTAS:
        return None  # durable, or a text delta readers concatenate: never replaced
    p = event.payload
    entity = p.get("agent_id") or p.get("task_id") or p.get("tool_run_id") or ""
    return (event.type, str(entity))


class Subscription:
    """One subscriber: filter, outbox, its own bounded channel and (optionally) a handler.

    ``bound`` caps the outbox's ephemeral events and its durable backlog (past it the
    subscription lags); a ``keep`` subscription holds publishers back past ``high_water`` (half
    the bound); ``max_buffer`` is the channel's size.
    """

    def __init__(
        self,
        bus: EventBus,
        flt: EventFilter | None,
        handler: Handler | None,
        *,
        bound: int,
        max_buffer: int,
        lag: LagPolicy = "keep",
        on_lag: Callable[[Subscription], None] | None = None,
    ) -> None:
        self.bus = bus
        self.filter = flt
        self.handler = handler
        self.bound = bound
        self.high_water = max(1, bound // 2)
        self.lag = lag
        self.on_lag = on_lag
        self.send, self.receive = trio.open_memory_channel[RuntimeEvent](max_buffer)
        self._slots: dict[int, RuntimeEvent] = {}
        self._by_key: dict[tuple[str, str], int] = {}
        self._next_slot = 0
        self.durable_pending = 0
        self.dropped = 0
        self.coalesced = 0
        self.needs_rehydrate = False
        self.lags = 0
        """How many times the backlog was discarded (the first one is told through on_lag)."""
        self.closed = False
        self._wakeup = trio.Event()
        self._room = trio.Event()
        self._room.set()
        self._idle = trio.Event()
        self._unhandled = 0
        """Events accepted for a handler and not yet handled (outbox, channel, in hand-over)."""
        self._scope: trio.CancelScope | None = None
        self._delivering: trio.lowlevel.Task | None = None
        """The task that runs the handler: a handler that publishes never waits for itself."""

    # -- the outbox ------------------------------------------------------------------------
    @property
    def queue(self) -> list[RuntimeEvent]:
        """The events waiting in the outbox (not yet in the channel), oldest first."""
        return list(self._slots.values())

    @property
    def pending(self) -> int:
        """Events not yet handled: in the outbox plus in the channel's buffer."""
        return len(self._slots) + self.send.statistics().current_buffer_used

    def offer(self, event: RuntimeEvent) -> None:
        if self.closed:
            return
        key = _coalesce_key(event)
        if key is not None and key in self._by_key:
            self._slots[self._by_key[key]] = event
            self.coalesced += 1
            return
        durable = event.type not in EPHEMERAL_TYPES
        if not durable and len(self._slots) >= self.bound:
            self.dropped += 1
            return
        slot = self._next_slot
        self._next_slot += 1
        self._slots[slot] = event
        self._unhandled += 1
        if key is not None:
            self._by_key[key] = slot
        if durable:
            self.durable_pending += 1
            if self.durable_pending > self.bound:
                self.lag_behind(f"more than {self.bound} durable events waiting")
                return
            if self.holds_back and self._room.is_set():
                self._room = trio.Event()
        self._wakeup.set()

    @property
    def holds_back(self) -> bool:
        """Whether async publishers should wait for this subscription (see ``wait_for_room``)."""
        return (
            self.lag == "keep"
            and not self.needs_rehydrate
            and not self.closed
            and self.durable_pending > self.high_water
        )

    def lag_behind(self, why: str) -> None:
        """Discard the backlog (the store keeps every durable event), mark the subscription
        ``needs_rehydrate`` and tell it once through ``on_lag``; new events flow on."""
        self.dropped += len(self._slots)
        self._unhandled -= len(self._slots)
        self._slots.clear()
        self._by_key.clear()
        self.durable_pending = 0
        self._room.set()
        self.lags += 1
        first = not self.needs_rehydrate
        self.needs_rehydrate = True
        if not first:
            return
        if self.on_lag is None:
            log.warning(
                "event subscriber %r lags (%s): its backlog was dropped; the store has every "
                "durable event",
                self.handler or "channel",
                why,
            )
            return
        try:
            self.on_lag(self)
        except Exception:
            log.exception("on_lag of a subscription failed")

    def resume(self) -> None:
        """The subscriber re-read the store: it is up to date again from now on."""
        self.needs_rehydrate = False

    def _pop(self) -> RuntimeEvent:
        slot = next(iter(self._slots))
        event = self._slots.pop(slot)
        key = _coalesce_key(event)
        if key is not None and self._by_key.get(key) == slot:
            del self._by_key[key]
        if event.type not in EPHEMERAL_TYPES:
            self.durable_pending -= 1
            if not self.holds_back:
                self._room.set()
        return event

    async def wait_for_room(self) -> None:
        """Wait until this subscription no longer holds publishers back (or lags, or closes)."""
        if self.holds_back and self._room.is_set():
            self._room = trio.Event()
        await self._room.wait()

    # -- tasks -----------------------------------------------------------------------------
    async def pump(self) -> None:
        """Move outbox events into the channel in order; waits while the channel is full."""
        while not self.closed:
            if not self._slots:
                self._wakeup = trio.Event()
                await self._wakeup.wait()
                continue
            event = self._pop()
            try:
                await self.send.send(event)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self.close()
                return

    async def _handle(self, event: RuntimeEvent) -> None:
        assert self.handler is not None
        try:
            result = self.handler(event)
            if inspect.isawaitable(result):
                await result
        except trio.Cancelled:
            raise
        except Exception:
            log.exception("event handler %r failed on %s", self.handler, event.type)

    async def deliver(self) -> None:
        """Read this subscription's channel and call the handler for each event."""
        self._delivering = trio.lowlevel.current_task()
        while not self.closed:
            try:
                event = await self.receive.receive()
            except (trio.EndOfChannel, trio.ClosedResourceError):
                return
            try:
                await self._handle(event)
            finally:
                self._unhandled -= 1
                self._idle.set()

    async def serve(self) -> None:
        with trio.CancelScope() as scope:
            self._scope = scope
            try:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self.pump)
                    if self.handler is not None:
                        nursery.start_soon(self.deliver)
            finally:
                self._scope = None

    def _busy(self) -> bool:
        # counted from acceptance to the handler's return: an event handed straight from the
        # pump to a waiting reader is in neither the outbox nor the buffer
        return self._unhandled > 0

    async def deliver_pending(self) -> None:
        """Have the handler called for everything waiting now (in order).

        With the delivery tasks running this waits until they are idle; without them it
        delivers here: the channel's buffer first (it holds the older events), then the outbox.
        """
        if self.handler is None:
            return
        if self.bus._nursery is not None:  # serving: this subscription's tasks deliver
            while self._busy() and not self.closed:
                self._idle = trio.Event()
                self._wakeup.set()
                await self._idle.wait()
            return
        while not self.closed:
            try:
                event = self.receive.receive_nowait()
            except trio.WouldBlock:
                if not self._slots:
                    return
                event = self._pop()
            except (trio.EndOfChannel, trio.ClosedResourceError):
                return
            try:
                await self._handle(event)
            finally:
                self._unhandled -= 1

    def close(self) -> None:
        """Stop delivering; waiting events are discarded (idempotent)."""
        if self.closed:
            return
        self.closed = True
        self._slots.clear()
        self._by_key.clear()
        self._room.set()
        self._idle.set()
        self.send.close()
        self.bus._remove(self)
        if self._scope is not None:
            self._scope.cancel(reason="subscription closed")


class EventBus:
    """Fan events out to subscribers; see the module docstring for the delivery rules.

    Args:
        queue_bound: default outbox bound of a subscription.
        max_buffer: default size of a subscription's channel.
    """

    def __init__(self, *, queue_bound: int = 1024, max_buffer: int = 64) -> None:
        self.queue_bound = queue_bound
        self.max_buffer = max_buffer
        self._subs: list[Subscription] = []
        self._nursery: trio.Nursery | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._thread: int | None = None

    # --- publishing -------------------------------------------------------------------------

    def publish(self, event: RuntimeEvent) -> None:
        """Queue ``event`` for every matching subscriber; never blocks, never raises."""
        if self._token is not None and threading.get_ident() != self._thread:
            try:
                self._token.run_sync_soon(self._publish_here, event)
            except trio.RunFinishedError:
                return
            return
        self._publish_here(event)

    def _publish_here(self, event: RuntimeEvent) -> None:
        for sub in list(self._subs):
            if event_matches(sub.filter, event):
                sub.offer(event)

    async def wait_for_room(self, *, limit: float = 5.0) -> bool:
        """Backpressure for async publishers: wait (at most ``limit`` s) until no ``keep``
        subscription holds more durable events than its high-water mark. Returns at once
        when none does, when the bus is not serving (nothing could make room) and for a
        subscription whose own handler is the caller.

        Returns:
            True when there is room; False when a subscription made none within ``limit``:
            it lags (``Subscription.lag_behind``), so the next wait is not held by it.
        """
        if self._nursery is None:
            return True
        current = trio.lowlevel.current_task()

        def holding() -> list[Subscription]:
            return [s for s in self._subs if s.holds_back and s._delivering is not current]

        full = holding()
        if not full:
            return True
        with trio.move_on_after(limit):
            while full:
                await full[0].wait_for_room()
                full = holding()
            return True
        for sub in holding():
            sub.lag_behind(f"made no room in {limit:.1f}s")
        return False

    # --- subscribing ------------------------------------------------------------------------

    def subscribe(
        self,
        flt: EventFilter | None,
        handler: Handler,
        *,
        queue_bound: int | None = None,
        max_buffer: int | None = None,
        lag: LagPolicy = "keep",
        on_lag: Callable[[Subscription], None] | None = None,
    ) -> Subscription:
        """Register ``handler`` (sync or async) for events matching ``flt``."""
        sub = Subscription(
            self,
            flt,
            handler,
            bound=queue_bound or self.queue_bound,
            max_buffer=max_buffer or self.max_buffer,
            lag=lag,
            on_lag=on_lag,
        )
        self._add(sub)
        return sub

    def subscribe_channel(
        self,
        flt: EventFilter | None = None,
        *,
        max_buffer: int = 256,
        queue_bound: int | None = None,
        lag: LagPolicy = "keep",
        on_lag: Callable[[Subscription], None] | None = None,
    ) -> tuple[Subscription, trio.MemoryReceiveChannel[RuntimeEvent]]:
        """A subscription whose own bounded channel the caller reads.

        A full channel only delays this subscriber's own outbox. Closing the subscription
        closes the channel, ending the reader's ``async for``; closing the receive end closes
        the subscription.
        """
        sub = Subscription(
            self,
            flt,
            None,
            bound=queue_bound or self.queue_bound,
            max_buffer=max_buffer,
            lag=lag,
            on_lag=on_lag,
        )
        self._add(sub)
        return sub, sub.receive

    def _add(self, sub: Subscription) -> None:
        self._subs.append(sub)
        if self._nursery is not None:
            self._nursery.start_soon(sub.serve)

    def _remove(self, sub: Subscription) -> None:
        if sub in self._subs:
            self._subs.remove(sub)

    @property
    def subscriptions(self) -> list[Subscription]:
        return list(self._subs)

    # --- delivery ---------------------------------------------------------------------------

    async def drain(self) -> None:
        """Deliver everything queued now to handler subscriptions (shutdown, no service)."""
        for sub in list(self._subs):
            await sub.deliver_pending()

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[EventBus]:
        """Run delivery tasks for the body's duration; drains (bounded) on a normal exit."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self._token = trio.lowlevel.current_trio_token()
            self._thread = threading.get_ident()
            for sub in list(self._subs):
                nursery.start_soon(sub.serve)
            try:
                yield self
                # Deliver what is queued before stopping; shielded but bounded.
                with trio.move_on_after(5, shield=True):
                    await self.drain()
            finally:
                self._nursery = None
                self._token = None
                self._thread = None
                nursery.cancel_scope.cancel(reason="event bus stopped")

    async def run(
        self, *, task_status: trio.TaskStatus[EventBus] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Service form: ``bus = await nursery.start(bus.run)``; runs until cancelled."""
        async with self.serving():
            task_status.started(self)
            await trio.sleep_forever()

    def stats(self) -> dict[str, Any]:
        """Queued, dropped, coalesced and lag counts per subscription."""
        return {
            "subscriptions": [
                {
                    "queued": s.pending,
                    "dropped": s.dropped,
                    "coalesced": s.coalesced,
                    "lags": s.lags,
                    "needs_rehydrate": s.needs_rehydrate,
                }
                for s in self._subs
            ]
        }
