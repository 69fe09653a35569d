"""A frame costs what is on screen, not the session: a second that passes redraws only the
running rows on screen; a reopen's widgets are frozen out of the collector's walks; the
conversation keeps what the window holds (IMPL-READ-5, issue 28)."""

from __future__ import annotations

import gc
import re
from datetime import datetime
from typing import Any

import urwid

from air.projection import InProcessProjectionClient, ProjectionStore
from air.testing.console_script import _BASE, ConsoleEvents, RecordingChannel
from air.ui_urwid.app import TuiApp
from air.ui_urwid.layout import FREEZE_AFTER
from air.ui_urwid.ticking import TickingText

SIZE = (140, 45)
START = _BASE.timestamp()


class Clock:
    def __init__(self) -> None:
        self.now = START + 100.0

    def __call__(self) -> float:
        return self.now


def _console(running: int) -> tuple[TuiApp, Clock]:
    """A console over a session of ``running`` tasks, all running."""
    ev = ConsoleEvents()
    events = ev.session()
    for n in range(running):
        events += ev.task(f"t{n}", f"task {n}") + ev.start(f"t{n}")
    store = ProjectionStore()
    store.hydrate_events(events)
    app = TuiApp(InProcessProjectionClient(store), RecordingChannel(), no_color=True)
    clock = Clock()
    app.layout.now = clock
    app.selected_task = "t0"
    return app, clock


def _rows(app: TuiApp) -> list[TickingText]:
    rows = [getattr(w, "original_widget", w) for w in app.layout.tree_walker]
    return [r for r in rows if isinstance(r, TickingText)]


def _drawn_at(app: TuiApp, second: int) -> list[str]:
    """The task rows whose text shows ``second``: the ones drawn in that second."""
    return [str(getattr(r, "key", "")) for r in _rows(app) if r.second == second]


def _elapsed(screen: str, text: str) -> int:
    """The seconds the screen's line holding ``text`` shows (``2m44s``)."""
    line = next(s for s in screen.splitlines() if text in s)
    found = re.search(r" (?:(\d+)m)?(\d+)s ", line)
    assert found is not None, line
    return int(found[1] or 0) * 60 + int(found[2])


def _frame_after_a_tick(running: int) -> tuple[list[str], int, list[Any], list[Any]]:
    """The rows drawn in the next frame 65 s later, how far task 0's row moved on, and the
    tree's rows before and after."""
    app, clock = _console(running)
    first = "\n".join(app.render_text(SIZE))
    held = app.root.render(SIZE, focus=True)  # a screen keeps its last canvas: cached
    before = list(app.layout.tree_walker)
    clock.now += 65
    later = "\n".join(app.render_text(SIZE))
    del held
    moved = _elapsed(later, "task 0 ") - _elapsed(first, "task 0 ")
    return _drawn_at(app, int(clock.now)), moved, before, list(app.layout.tree_walker)


def test_a_tick_draws_only_the_running_rows_on_screen_however_many_run() -> None:
    small, small_moved, before, after = _frame_after_a_tick(30)
    large, large_moved, _, _ = _frame_after_a_tick(600)
    assert all(a is b for a, b in zip(before, after, strict=True))  # nothing built again
    # the tree's box shows a few dozen rows: those are drawn again, the other rows wait
    assert 0 < len(large) < 45
    assert len(large) == len(small)
    assert large == [f"t{n}" for n in range(len(large))]
    assert small_moved == large_moved == 65  # the rows on screen show the time passed


def test_a_row_scrolled_into_view_shows_the_time_then() -> None:
    app, clock = _console(200)
    app.render_text(SIZE)
    clock.now += 65
    app.render_text(SIZE)
    assert "t150" not in _drawn_at(app, int(clock.now))
    rows = [getattr(w, "original_widget", w) for w in app.layout.tree_walker]
    at = next(i for i, r in enumerate(rows) if getattr(r, "key", "") == "t150")
    app.layout.tree.set_focus(at)
    screen = "\n".join(app.render_text(SIZE))
    assert "t150" in _drawn_at(app, int(clock.now))
    task = next(t for t in app.client.snapshot().tasks if t.task_id == "t150")
    assert task.started_at is not None
    started = datetime.fromisoformat(task.started_at.replace("Z", "+00:00")).timestamp()
    assert _elapsed(screen, "task 150 ") == int(clock.now - started)  # the time now


def test_the_detail_header_ticks_with_the_selected_task() -> None:
    app, clock = _console(3)
    first = "\n".join(app.render_text(SIZE))
    clock.now += 65
    later = "\n".join(app.render_text(SIZE))
    assert _elapsed(later, "t0 · ") - _elapsed(first, "t0 · ") == 65


def test_a_finished_task_never_ticks() -> None:
    row = TickingText(lambda now: f"{int(now)}", 10.0, ticking=False)
    assert not row.tick(20.0)
    assert row.text == "10"
    live = TickingText(lambda now: f"{int(now)}", 10.0)
    assert not live.tick(10.9)
    assert live.tick(11.0)
    assert live.text == "11"
    assert isinstance(live, urwid.Text)


def _chat(messages: int, window: int = 500) -> TuiApp:
    ev = ConsoleEvents()
    events = ev.session()
    for n in range(messages // 2):
        events += ev.chat(f"question {n}", f"answer {n}", chunks=1)
    store = ProjectionStore(window=window)
    store.hydrate_events(events)
    return TuiApp(InProcessProjectionClient(store), RecordingChannel(), no_color=True)


def _unfrozen(widgets: list[Any]) -> int:
    """How many of ``widgets`` a full collection walks."""
    ids = {id(w) for w in widgets}
    return sum(1 for o in gc.get_objects() if id(o) in ids)


def test_a_reopens_first_frame_freezes_its_widgets_out_of_the_collectors_walks() -> None:
    try:
        small = _chat(20)
        small.render_text(SIZE)
        assert _unfrozen(list(small.layout.conv_walker)) == len(small.layout.conv_walker)
        large = _chat(2 * FREEZE_AFTER)
        large.render_text(SIZE)
        assert len(large.layout.conv_walker) >= FREEZE_AFTER
        assert _unfrozen(list(large.layout.conv_walker)) == 0
    finally:
        gc.unfreeze()


def test_the_conversation_keeps_what_the_window_holds() -> None:
    ev = ConsoleEvents()
    store = ProjectionStore(window=20)
    store.hydrate_events(ev.session() + ev.chat("first", "answer", chunks=1))
    app = TuiApp(InProcessProjectionClient(store), RecordingChannel(), no_color=True)
    app.render_text(SIZE)
    for n in range(30):  # the session goes on: older messages leave the window
        store.hydrate_events(ev.chat(f"question {n}", f"answer {n}", chunks=1))
        app.render_text(SIZE)
    kept = {m.message_id for m in app.client.snapshot().messages}
    assert len(kept) == 20
    assert {ident for kind, ident in app.layout.entries if kind == "msg"} == kept
    assert len(app.layout.conv_walker) == 20
