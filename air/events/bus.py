"""EventBus: live fan-out of events to subscribers on bounded per-subscriber queues (SDD §5.5).

Owns ``EventBus``, ``Subscription`` and ``event_matches``. ``publish`` is synchronous and never
blocks: each subscription has its own queue; durable events are never dropped, ephemeral ones
are coalesced (a newer event with the same type and entity replaces the queued one) and, past
the queue bound, dropped (IMPL-EVT-5). Delivery runs in ``async with bus.serving():`` (or
``await nursery.start(bus.run)``): one task per subscription, so a slow subscriber never
delays another. A failing handler is logged and never propagates; the subscription stays.
Without a running service, published events wait in the queues until ``drain()``.
The bus is live transport only, never a recovery source.
"""

from __future__ import annotations

import inspect
import logging
import threading
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import trio

from air.contracts.event import EventFilter, RuntimeEvent
from air.events.payloads import EPHEMERAL_TYPES

__all__ = ["EventBus", "Handler", "Subscription", "event_matches"]

log = logging.getLogger("air.events.bus")

Handler = Callable[[RuntimeEvent], None] | Callable[[RuntimeEvent], Awaitable[None]]


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
    if event.type not in EPHEMERAL_TYPES:
        return None
    if event.type in ("assistant.message.delta", "command.stdout.delta", "command.stderr.delta"):
        return None  # text deltas are concatenated by readers: never replace one
    p = event.payload
    entity = p.get("agent_id") or p.get("task_id") or p.get("tool_run_id") or ""
    return (event.type, str(entity))


class Subscription:
    """One subscriber: its filter, handler and pending queue. ``close()`` stops delivery."""

    def __init__(self, bus: EventBus, flt: EventFilter | None, handler: Handler, bound: int):
        self.bus = bus
        self.filter = flt
        self.handler = handler
        self.bound = bound
        self.queue: deque[RuntimeEvent] = deque()
        self.dropped = 0
        self.coalesced = 0
        self.closed = False
        self.wakeup = trio.Event()
        self.lock = trio.Lock()
        self._scope: trio.CancelScope | None = None
        self._on_close: Callable[[], None] | None = None

    def offer(self, event: RuntimeEvent) -> None:
        key = _coalesce_key(event)
        if key is not None:
            for i in range(len(self.queue) - 1, -1, -1):
                if _coalesce_key(self.queue[i]) == key:
                    self.queue[i] = event
                    self.coalesced += 1
                    return
            if len(self.queue) >= self.bound:
                self.dropped += 1
                return
        self.queue.append(event)

    async def deliver_pending(self) -> None:
        async with self.lock:
            while self.queue and not self.closed:
                event = self.queue.popleft()
                try:
                    result = self.handler(event)
                    if inspect.isawaitable(result):
                        await result
                except trio.Cancelled:
                    raise
                except Exception:
                    log.exception("event handler %r failed on %s", self.handler, event.type)

    async def serve(self) -> None:
        with trio.CancelScope() as scope:
            self._scope = scope
            while not self.closed:
                if not self.queue:
                    self.wakeup = trio.Event()
                    await self.wakeup.wait()
                await self.deliver_pending()

    def close(self) -> None:
        """Stop delivering; queued events are discarded (idempotent)."""
        if self.closed:
            return
        self.closed = True
        self.queue.clear()
        self.bus._remove(self)
        if self._scope is not None:
            self._scope.cancel(reason="subscription closed")
        if self._on_close is not None:
            self._on_close()


class EventBus:
    """Fan events out to subscribers; see the module docstring for the delivery rules."""

    def __init__(self, *, queue_bound: int = 1024) -> None:
        self.queue_bound = queue_bound
        self._subs: list[Subscription] = []
        self._nursery: trio.Nursery | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._thread: int | None = None

    # --- publishing -------------------------------------------------------------------------

    def publish(self, event: RuntimeEvent) -> None:
        """Queue ``event`` for every matching subscriber; never blocks, never raises."""
        for sub in list(self._subs):
            if event_matches(sub.filter, event):
                sub.offer(event)
        if self._token is not None and threading.get_ident() != self._thread:
            try:
                self._token.run_sync_soon(self._wake_all)
            except trio.RunFinishedError:
                return
        else:
            self._wake_all()

    def _wake_all(self) -> None:
        for sub in list(self._subs):
            if sub.queue:
                sub.wakeup.set()

    # --- subscribing ------------------------------------------------------------------------

    def subscribe(
        self, flt: EventFilter | None, handler: Handler, *, queue_bound: int | None = None
    ) -> Subscription:
        """Register ``handler`` (sync or async) for events matching ``flt``."""
        sub = Subscription(self, flt, handler, queue_bound or self.queue_bound)
        self._subs.append(sub)
        if self._nursery is not None:
            self._nursery.start_soon(sub.serve)
        return sub

    def subscribe_channel(
        self, flt: EventFilter | None = None, *, max_buffer: int = 256
    ) -> tuple[Subscription, trio.MemoryReceiveChannel[RuntimeEvent]]:
        """A subscription that forwards into a bounded Trio memory channel.

        Back-pressure from a full channel only delays this subscriber's own queue. Closing the
        subscription closes the channel, ending the reader's ``async for``.
        """
        send, receive = trio.open_memory_channel[RuntimeEvent](max_buffer)

        async def forward(event: RuntimeEvent) -> None:
            try:
                await send.send(event)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                sub.close()

        sub = self.subscribe(flt, forward)
        sub._on_close = send.close
        return sub, receive

    def _remove(self, sub: Subscription) -> None:
        if sub in self._subs:
            self._subs.remove(sub)

    @property
    def subscriptions(self) -> list[Subscription]:
        return list(self._subs)

    # --- delivery ---------------------------------------------------------------------------

    async def drain(self) -> None:
        """Deliver everything queued now (used at shutdown and from code without a service)."""
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
        """Queue lengths and dropped/coalesced counters per subscription."""
        return {
            "subscriptions": [
                {"queued": s.queue.__len__(), "dropped": s.dropped, "coalesced": s.coalesced}
                for s in self._subs
            ]
        }
