"""``/compact`` in the console's command table (IMPL-COMPACT-2): typed, it becomes one
``UiCommand(kind="compact")`` for the channel; with an argument it is refused on screen and
nothing is sent; ``/help`` lists it."""

from __future__ import annotations

from air.contracts.ui import UiCommand
from air.projection import InProcessProjectionClient, ProjectionStore
from air.testing.console_script import ConsoleEvents, RecordingChannel
from air.ui_urwid.app import TuiApp

SIZE = (120, 40)


def _app() -> TuiApp:
    store = ProjectionStore()
    store.hydrate_events(ConsoleEvents().session())
    return TuiApp(InProcessProjectionClient(store), RecordingChannel(), no_color=True)


def _submit(app: TuiApp, text: str) -> str:
    app.render_text(SIZE)
    for ch in text:
        app.root.keypress(SIZE, ch)
    app.root.keypress(SIZE, "enter")
    return "\n".join(app.render_text(SIZE))


def test_slash_compact_sends_the_compact_command() -> None:
    app = _app()
    _submit(app, "/compact")
    assert app.sent == [UiCommand(kind="compact")]


def test_slash_compact_with_an_argument_is_refused_and_sends_nothing() -> None:
    app = _app()
    screen = _submit(app, "/compact everything")
    assert app.sent == []
    assert "/compact takes no argument" in screen


def test_help_lists_slash_compact() -> None:
    app = _app()
    screen = _submit(app, "/help")
    assert "/compact" in screen
    assert "compact the conversation now" in screen
