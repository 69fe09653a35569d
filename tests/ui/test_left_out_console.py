"""A merge that left out what git ignores is said wherever a task's end is: the plain console's
line, the console's notice, the task's detail pane, read from ``workspace.merge.completed``
by the projection (live, and from a reopened view's stored extras)."""

from __future__ import annotations

from air.contracts.event import RuntimeEvent
from air.projection import InProcessProjectionClient, ProjectionStore
from air.projection.view_snapshot import decode_view, encode_view
from air.testing.console_script import ConsoleEvents, RecordingChannel
from air.ui_urwid.app import TuiApp
from air.ui_urwid.concerns import Announcer
from air.ui_urwid.plain import PlainConsole

NOTE = "not merged, git ignores them (2): .env, logs/"


def _events(ev: ConsoleEvents) -> list[RuntimeEvent]:
    events = ev.session() + ev.task("t1", "configure") + ev.start("t1")
    events += ev.merged("t1", left_out=[".env", "logs/"])
    return events + ev.complete("t1", "wrote the settings")


def test_the_projection_and_the_plain_console_say_what_was_left_out() -> None:
    ev = ConsoleEvents()
    store = ProjectionStore()
    lines: list[str] = []
    console = PlainConsole(InProcessProjectionClient(store), RecordingChannel(), lines.append)
    store.hydrate_events(ev.session() + ev.task("t0", "plain") + ev.start("t0"))
    store.hydrate_events(ev.merged("t0") + ev.complete("t0", "no ignored files"))
    store.hydrate_events(_events(ev)[1:])
    (plain, task) = store.snapshot().tasks
    assert (plain.left_out, plain.left_out_count) == ([], 0)
    assert (task.left_out, task.left_out_count) == ([".env", "logs/"], 2)
    console.render(store.snapshot())
    assert "task #1 plain: completed — no ignored files" in lines
    assert f"task #2 configure: completed — wrote the settings — {NOTE}" in lines


def test_the_notice_and_the_detail_pane_say_it() -> None:
    ev = ConsoleEvents()
    store = ProjectionStore()
    store.hydrate_events(ev.session())
    announcer = Announcer()
    assert announcer.notices(store.snapshot()) == []  # the first call: the console opened
    store.hydrate_events(_events(ev)[1:])
    (notice,) = announcer.notices(store.snapshot())
    assert notice.endswith(f"configure: completed — wrote the settings — {NOTE}")
    app = TuiApp(InProcessProjectionClient(store), RecordingChannel(), no_color=True)
    app.selected_task = "t1"
    assert NOTE in "\n".join(app.render_text((120, 40)))


def test_a_reopened_view_still_has_it() -> None:
    ev = ConsoleEvents()
    store = ProjectionStore()
    store.hydrate_events(_events(ev))
    stored = decode_view(encode_view(store.view, 7, None, 100))
    again = ProjectionStore()
    again.restore(stored.state, stored.revision, 0)
    (task,) = again.snapshot().tasks
    assert (task.left_out, task.left_out_count) == ([".env", "logs/"], 2)
