"""``/cancel TASK`` says what really happens (issue 24 item 8): an unknown task or one that
already ended is not "cancelling task X only" — nothing is sent, and the console says why."""

from __future__ import annotations

from air.contracts.event import RuntimeEvent
from air.contracts.ui import UiCommand
from air.projection import InProcessProjectionClient, ProjectionStore
from air.testing.console_script import ConsoleEvents, RecordingChannel
from air.ui_urwid.app import TuiApp

SIZE = (140, 40)


def _cancel(events: list[RuntimeEvent], token: str) -> tuple[TuiApp, str]:
    store = ProjectionStore()
    store.hydrate_events(events)
    app = TuiApp(InProcessProjectionClient(store), RecordingChannel(), no_color=True)
    app.render_text(SIZE)
    for ch in f"/cancel {token}":
        app.root.keypress(SIZE, ch)
    app.root.keypress(SIZE, "enter")
    return app, "\n".join(app.render_text(SIZE))


def test_an_unknown_task_is_not_cancelled_and_the_known_ones_are_named() -> None:
    ev = ConsoleEvents()
    app, screen = _cancel(ev.session() + ev.task("t1", "one") + ev.start("t1"), "nosuch")
    assert app.sent == []
    assert "no task nosuch: nothing cancelled (tasks: t1)" in screen
    assert "cancelling task nosuch" not in screen


def test_a_task_that_already_ended_is_not_cancelled() -> None:
    ev = ConsoleEvents()
    events = ev.session() + ev.task("t1", "one") + ev.start("t1") + ev.complete("t1", "done")
    app, screen = _cancel(events, "t1")
    assert app.sent == []
    assert "task t1 already completed: nothing to cancel" in screen


def test_a_running_task_is_cancelled_alone() -> None:
    ev = ConsoleEvents()
    app, screen = _cancel(ev.session() + ev.task("t1", "one") + ev.start("t1"), "t1")
    assert app.sent == [UiCommand(kind="cancel_task", task_id="t1")]
    assert "cancelling task t1 only" in screen
