"""Widget render-to-text tests of the console: every view rendered to a text canvas."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from air.contracts.event import RuntimeEvent
from air.contracts.ui import UiCommand
from air.projection import InProcessProjectionClient, ProjectionStore
from air.testing.console_script import ConsoleEvents, RecordingChannel, demo_events
from air.ui_urwid.app import TuiApp
from air.ui_urwid.commands import parse_input
from air.ui_urwid.markdown import split_blocks
from air.ui_urwid.text import clean
from air.ui_urwid.views import MONO_PALETTE, PALETTE, risk_attr

SIZE = (120, 40)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _app(
    events: list[RuntimeEvent], tmp_path: Path | None = None, **kw: Any
) -> tuple[TuiApp, ProjectionStore, RecordingChannel]:
    store = ProjectionStore(artifact_root=tmp_path)
    store.hydrate_events(events)
    channel = RecordingChannel()
    options: dict[str, Any] = {"no_color": True, **kw}
    app = TuiApp(InProcessProjectionClient(store), channel, **options)
    return app, store, channel


def _screen(app: TuiApp, size: tuple[int, int] = SIZE) -> str:
    return "\n".join(app.render_text(size))


def _press(app: TuiApp, *keys: str, size: tuple[int, int] = SIZE) -> None:
    app.render_text(size)
    for key in keys:
        app.root.keypress(size, key)


def test_the_demo_session_renders_every_pane(tmp_path: Path) -> None:
    diff = tmp_path / "fix.diff"
    diff.write_text("--- a/calc.py\n+++ b/calc.py\n-    return a + b\n+    return a - b\n")
    app, _, _ = _app(demo_events(ConsoleEvents(), diff_path=str(diff)), tmp_path)
    app.selected_task = "task_a"
    text = _screen(app)
    assert "you> what does calc do?" in text
    assert "air>" in text
    assert "┌─ python (Ctrl-Y copies)" in text
    assert "print(1 + 2)" in text
    assert "Wave 1 · done" in text
    assert "Wave 2 · done" in text
    assert "✓ #1 fix subtraction  completed" in text
    assert "! #2 add tests  blocked" in text
    assert "$ pytest -q  ok (exit 0)" in text
    assert "3 passed" in text
    assert "+    return a - b" in text
    assert "[test_output] tests pass after the fix" in text
    assert "ses_console · scripted/scripted-model" in text


def test_the_blocker_report_is_shown_in_the_detail_pane() -> None:
    app, _, _ = _app(demo_events(ConsoleEvents()))
    app.selected_task = "task_b"
    text = _screen(app)
    assert "Blocked (user_decision): which test" in text
    assert "1. pytest" in text
    assert "2. unittest" in text


def test_long_messages_are_folded_and_expand() -> None:
    ev = ConsoleEvents()
    long = "\n".join(f"row {i}" for i in range(40))
    app, _, _ = _app(ev.session() + ev.chat("show", long))
    text = _screen(app)
    # the middle is folded, never the end: an answer's conclusion is always on the screen
    assert "… 20 lines folded (Ctrl-O shows all) …" in text
    assert "row 11" in text
    assert "row 12" not in text
    assert "row 31" not in text
    assert "row 32" in text
    assert "row 39" in text
    _press(app, "tab", "tab", "tab", "ctrl o")  # focus the conversation, expand
    assert "row 20" in _screen(app, (120, 80))


def test_streaming_text_shows_as_it_arrives() -> None:
    ev = ConsoleEvents()
    app, store, _ = _app(ev.session())
    mid, started = ev.assistant_start()
    store.hydrate_events(started)
    store.apply(ev.assistant_delta(mid, "Thinking about "))
    assert "Thinking about" in _screen(app)
    assert "▌ streaming" in _screen(app)
    store.apply(ev.assistant_delta(mid, "subtraction"))
    assert "Thinking about subtraction" in _screen(app)


def test_terminal_escapes_in_untrusted_text_never_reach_the_screen() -> None:
    ev = ConsoleEvents()
    evil = "ok\x1b]0;pwned\x07\x1b[2J\x1b]52;c;ZXZpbA==\x07 done\u202e"
    events = ev.session() + ev.chat("q", evil) + ev.task("t", "title\x1b[31m red")
    app, _, _ = _app(events)
    text = _screen(app)
    assert "\x1b" not in text
    assert "pwned" not in text
    assert "ok done" in text
    assert "title red" in text
    assert clean("a\rb\r\nprogress 10%\rprogress 99%") == "b\nprogress 99%"
    assert clean("\x9b31m x\x07\x00") == " x"


def test_hud_presets() -> None:
    app, _, _ = _app(demo_events(ConsoleEvents()))
    assert "tasks 1/2 done" in _screen(app)
    _press(app, "f2")
    essential = app.render_text(SIZE)[0]
    assert "IDLE · 0 running · 1/2 done · $0.01" in essential
    _press(app, "f2")
    assert app.render_text(SIZE)[0].strip() == "IDLE"


def test_key_help_lists_keys_and_commands() -> None:
    app, _, _ = _app(ConsoleEvents().session())
    _press(app, "f1")
    text = _screen(app)
    assert "interrupt the Main Agent's current turn" in text
    assert "/cancel" in text
    _press(app, "esc")
    assert "interrupt the Main Agent's current turn" not in _screen(app)


def test_no_color_palette_is_monochrome() -> None:
    settings = {"bold", "standout", "underline", "italics", "strikethrough"}  # no colours
    for _name, fg, bg, mono in MONO_PALETTE:
        assert fg.split(",")[0] == "default"
        assert set(fg.split(",")[1:]) <= settings
        assert bg == "default"
        assert set(filter(None, mono.split(","))) <= settings
    assert {e[0] for e in MONO_PALETTE} == {e[0] for e in PALETTE}
    # urwid draws in one colour under NO_COLOR (the mono column): the selection stays visible
    assert {e[0]: e[3] for e in MONO_PALETTE}["selected"] == "standout"


def test_only_low_risk_is_drawn_green() -> None:
    fg = {name: colour for name, colour, _bg in PALETTE}
    levels = ("low", "medium", "high", "critical", "unknown")
    assert [level for level in levels if "green" in fg[risk_attr(level)]] == ["low"]


def test_no_color_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app, _, _ = _app([], no_color=None)
    assert app.palette() == MONO_PALETTE
    monkeypatch.delenv("NO_COLOR")
    app, _, _ = _app([], no_color=None)
    assert app.palette() == PALETTE


def test_resize_renders_at_every_size() -> None:
    app, _, _ = _app(demo_events(ConsoleEvents()))
    for size in [(120, 40), (60, 20), (200, 60), (40, 12), (120, 40)]:
        lines = app.render_text(size)
        assert len(lines) == size[1]
        assert all(len(line) <= size[0] for line in lines)


def test_slash_commands_parse_into_ui_commands() -> None:
    assert parse_input("hello\nworld").command == UiCommand(
        kind="user_message", text="hello\nworld"
    )
    assert parse_input("/direct fix it").command == UiCommand(kind="direct", text="fix it")
    assert parse_input("/done").command == UiCommand(kind="direct_done")
    assert parse_input("/cancel task_b").command == UiCommand(kind="cancel_task", task_id="task_b")
    assert parse_input("/cancel", selected_task="t1").command == UiCommand(
        kind="cancel_task", task_id="t1"
    )
    assert parse_input("/cancel").error
    for view in ("help", "tasks", "cost", "model", "history", "quit"):
        assert parse_input(f"/{view}").view == view
    assert parse_input("/frobnicate").error
    assert parse_input("//etc/passwd is a path").command == UiCommand(
        kind="user_message", text="/etc/passwd is a path"
    )
    assert parse_input("   ") == parse_input("")


def test_code_blocks_split_from_markdown() -> None:
    blocks = split_blocks("intro\n```sh\nmake test\n```\nafter\n```\nunclosed")
    assert [(b.kind, b.lang) for b in blocks] == [
        ("text", ""),
        ("code", "sh"),
        ("text", ""),
        ("code", ""),
    ]
    assert blocks[1].text == "make test"


def test_the_task_tree_builds_again_only_the_rows_that_changed() -> None:
    import urwid

    from air.ui_urwid.views import TreeRowCache, task_tree_rows

    ev = ConsoleEvents()
    events = ev.session()
    for n in range(30):
        events += ev.task(f"t{n}", f"task {n}") + ev.start(f"t{n}")
        if n:  # t0 keeps running; the others are done
            events += ev.complete(f"t{n}", "done")
    _, store, _ = _app(events)
    snap = store.snapshot()
    cache: TreeRowCache = {}

    def rows(now: float) -> dict[str, Any]:
        built = task_tree_rows(snap, now, None, cache)
        return {r.original_widget.key: r for r in built if isinstance(r, urwid.AttrMap)}

    first, same_second, later = rows(100.0), rows(100.5), rows(102.0)
    assert len(first) == 30
    assert all(same_second[k] is first[k] for k in first)
    assert all(later[k] is first[k] for k in first)  # a second passing builds no row
    # only t0 runs: its row ticks itself when drawn (TickingList, IMPL-READ-5)
    assert [k for k in first if first[k].original_widget.tick(102.0)] == ["t0"]
