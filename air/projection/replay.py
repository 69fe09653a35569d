"""ReplayPlayer: plays a stored event log back into a ProjectionStore, read-only (issue #12 §7).

Owns ``ReplayPlayer`` and the ProjectionClient it hands the console (``client()``: it follows
the player's current store, with a revision that only grows). It reads the session's events
through a sequence (a list, or ``EventPages``: paged from SQLite as the replay reaches them, so
the first frame does not wait for the log), applies them to its own ProjectionStore at their
recorded pace scaled by ``speed`` (gaps capped at ``MAX_GAP_S``; every time shown is the
events' own, never the wall clock), and implements the ``UiCommandChannel`` protocol for the
console's replay keys: ``replay_pause`` (toggle), ``replay_step`` (one event forward, pauses),
``replay_back`` (one event back, pauses: a new projection is built from the start up to
there), ``replay_speed`` and ``quit``. Every other command is refused and counted in
``refused``: a replay never reaches a runtime, so nothing the person types can change the
recorded session. ``log_time`` is the replay's clock: the recorded time of the last event
played.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime

import trio

from air.contracts.event import RuntimeEvent
from air.contracts.ui import (
    ProjectionClient,
    ProjectionSnapshot,
    ProjectionSubscription,
    UiCommand,
)
from air.projection.store import ProjectionStore, StoreSubscription

__all__ = ["MAX_GAP_S", "ReplayPlayer"]

MAX_GAP_S = 1.0
"""The longest pause between two replayed events, in seconds of replay time."""


def _seconds(ts: str) -> float:
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return math.nan


class _Subscription:
    def __init__(self, player: ReplayPlayer, handler: Callable[[int], None]) -> None:
        self._player = player
        self._handler = handler

    def close(self) -> None:
        self._player._unsubscribe(self._handler)


class _ReplayClient:
    """The console's ProjectionClient of a replay: the player's current store."""

    def __init__(self, player: ReplayPlayer) -> None:
        self._player = player
        self._source: ProjectionSnapshot | None = None
        self._shown: ProjectionSnapshot | None = None

    def snapshot(self) -> ProjectionSnapshot:
        source = self._player.store.snapshot()
        if source is not self._source or self._shown is None:
            self._source = source
            self._shown = source.model_copy(update={"revision": self._player.revision})
        return self._shown

    def subscribe(self, handler: Callable[[int], None]) -> ProjectionSubscription:
        return self._player._subscribe(handler)


class ReplayPlayer:
    """Feed ``events`` into ``store`` with pause / step / speed.

    Args:
        events: the session's events, oldest first (e.g. ``EventStore.query``).
        store: the ProjectionStore the console reads (a fresh one).
        speed: replay speed (2.0 = twice as fast as recorded).
        paused: start paused (step with ``replay_step``).
        new_store: makes the fresh store a step back rebuilds into.
    """

    def __init__(
        self,
        events: Sequence[RuntimeEvent],
        store: ProjectionStore,
        *,
        speed: float = 1.0,
        paused: bool = False,
        new_store: Callable[[], ProjectionStore] = ProjectionStore,
    ) -> None:
        self.events = events
        self.store = store
        self._new_store = new_store
        self._handlers: list[Callable[[int], None]] = []
        self._relay_sub: StoreSubscription = store.subscribe(self._relay)
        self._revision_base = 0
        self.speed = speed
        self.paused = paused
        self.position = 0
        """How many events have been applied."""
        self.refused: list[UiCommand] = []
        self.finished = trio.Event()
        self._changed = trio.Event()

    @property
    def revision(self) -> int:
        """Grows with every change, a step back included (a new store starts at 0)."""
        return self._revision_base + self.store.revision

    def client(self) -> ProjectionClient:
        """What the console reads: the current store, followed across steps back."""
        return _ReplayClient(self)

    def _subscribe(self, handler: Callable[[int], None]) -> ProjectionSubscription:
        self._handlers.append(handler)
        return _Subscription(self, handler)

    def _unsubscribe(self, handler: Callable[[int], None]) -> None:
        if handler in self._handlers:
            self._handlers.remove(handler)

    def _relay(self, _store_revision: int) -> None:
        """The current store changed: tell the console's handlers, with the player's revision."""
        for handler in list(self._handlers):
            handler(self.revision)

    @property
    def done(self) -> bool:
        return self.position >= len(self.events)

    def hud_text(self) -> str:
        """The HUD's replay segment: paused or playing, speed, position."""
        state = "paused" if self.paused else "playing"
        at = self.events[self.position - 1].timestamp[11:19] if self.position else "--:--:--"
        return f" · REPLAY {state} x{self.speed:g} {self.position}/{len(self.events)} at {at}"

    async def play_while(self, app_run: Callable[[], Awaitable[None]]) -> None:
        """Play beside ``app_run`` (the console's ``TuiApp.run``); stop when it returns."""
        async with trio.open_nursery() as nursery:
            await nursery.start(self.run)
            await app_run()
            nursery.cancel_scope.cancel(reason="replay closed")

    def _poke(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    def step(self) -> bool:
        """Apply the next event now; False at the end of the log."""
        if self.done:
            return False
        self.store.apply(self.events[self.position])
        self.position += 1
        return True

    def back(self) -> bool:
        """Undo the last applied event: the projection is rebuilt from the first event up to
        the one before it. False at the start of the log."""
        if self.position == 0:
            return False
        target = self.position - 1
        self._relay_sub.close()
        self._revision_base += self.store.revision + 1
        self.store = self._new_store()
        self._relay_sub = self.store.subscribe(self._relay)
        for index in range(target):
            self.store.apply(self.events[index])
        self.position = target
        self._relay(self.store.revision)  # a frame for the new position, events or none
        return True

    def log_time(self) -> float:
        """The recorded time (epoch seconds) of the last event played: the replay's "now",
        so elapsed times are the log's, never the wall clock's (0.0 before the first). Reads
        back from the position only as far as the first readable time (one event, usually)."""
        for index in range(self.position - 1, -1, -1):
            seconds = _seconds(self.events[index].timestamp)
            if not math.isnan(seconds):
                return seconds
        return 0.0

    async def send(self, command: UiCommand) -> None:
        """The UiCommandChannel of a replay: replay controls and quit only."""
        if command.kind == "replay_pause":
            self.paused = not self.paused
        elif command.kind == "replay_step":
            self.paused = True
            self.step()
        elif command.kind == "replay_back":
            self.paused = True
            self.back()
        elif command.kind == "replay_speed" and command.speed is not None:
            self.speed = command.speed
        elif command.kind == "quit":
            self.finished.set()
        else:
            self.refused.append(command)
        self._poke()
        await trio.lowlevel.checkpoint()

    def _gap(self) -> float:
        if self.position == 0 or self.done:
            return 0.0
        gap = _seconds(self.events[self.position].timestamp) - _seconds(
            self.events[self.position - 1].timestamp
        )
        if math.isnan(gap) or gap <= 0:
            return 0.0
        return min(gap / self.speed, MAX_GAP_S)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Play until the log ends or ``quit``; then ``finished`` is set."""
        task_status.started()
        while not self.done and not self.finished.is_set():
            changed = self._changed
            if self.paused:
                await changed.wait()
                continue
            gap = self._gap()
            if gap > 0:
                with trio.move_on_after(gap):
                    await changed.wait()
                if changed.is_set():
                    continue  # paused, stepped or re-timed meanwhile: decide again
            else:
                await trio.lowlevel.checkpoint()
            self.step()
        self.finished.set()
