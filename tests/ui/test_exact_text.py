"""Issue 22 item 4: what the person approves is what runs: a command is shown as exact text.

A worker of a real ``air run`` session (the strict local model server playing its cassette)
asks to run ``rm -rf calc;\\recho build ok`` (a terminal shows only ``echo build ok``) and a
command holding ``ESC[2K``, backspaces, a right-to-left override and a zero-width space. The
real console in tmux (capture-pane), ``--plain`` through a pipe, ``air history`` and the HTML
report of that session, and ``air.log`` must show every character escaped, never a terminal's
(or a browser's) rendering of it.
"""

from __future__ import annotations

import html
import json
import logging
import os
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
import urwid
from hypothesis import given
from hypothesis import strategies as st

from air.contracts.display import hides, shown
from air.contracts.provider import TextBlock, ToolUseBlock
from air.contracts.ui import PermissionPromptProjection, PermissionSegmentProjection
from air.llm.cassette import CassetteTurn
from air.testing.strict_servers import StrictServer
from air.ui_urwid.views import HIDDEN_WARNING, permission_prompt
from tests.ui.test_console_e2e import KEY, PLAN, ConsoleModel, _air, _project, _spec, _text
from tests.ui.tmux import Tmux, processes_with

CR_COMMAND = "rm -rf calc;\recho build ok"
CR_SHOWN = "rm -rf calc;\\recho build ok"
HIDDEN_COMMAND = "echo ok\x1b[2K\x08\x08\u202eko \u200bdliub"
HIDDEN_SHOWN = "echo ok\\x1b[2K\\x08\\x08\\u202eko \\u200bdliub"


# --- the rule --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (CR_COMMAND, CR_SHOWN),
        (HIDDEN_COMMAND, HIDDEN_SHOWN),
        ("make test && ls 'a b'", "make test && ls 'a b'"),
        ("grep -E 'a\\|b' src", "grep -E 'a\\|b' src"),  # nothing hidden: kept as typed
        ("printf 'a\\rb';\rrm x", "printf 'a\\\\rb';\\rrm x"),  # a typed "\r" cannot pass as one
        ("make\nrm -rf ~", "make\\nrm -rf ~"),  # two commands are seen to be two
        ("a\tb", "a\\tb"),
        (
            "ls \u2066x\u2069 \u00a0 \u3164 \ufeff\u2028",
            "ls \\u2066x\\u2069 \\xa0 \\u3164 \\ufeff\\u2028",
        ),
        ("tag\U000e0041\x9b31m\x7f", "tag\\U000e0041\\x9b31m\\x7f"),
        ("café 名前 — ok", "café 名前 — ok"),
    ],
)
def test_shown_escapes_every_hidden_character(text: str, expected: str) -> None:
    assert shown(text) == expected
    assert hides(text) == (text != expected)


def test_free_text_keeps_its_lines() -> None:
    assert shown("two\nlines\tand\ra CR", keep_lines=True) == "two\nlines\tand\\ra CR"
    assert shown("two\nlines", keep_lines=True) == "two\nlines"


def _unescape(text: str) -> str:
    return text.encode("latin-1", "backslashreplace").decode("unicode_escape")


@given(st.text(alphabet=st.characters(codec=None, exclude_categories=())))
def test_shown_is_visible_and_exact(text: str) -> None:
    """Nothing hidden survives, and the escaped text decodes to the original exactly."""
    out = shown(text)
    assert not hides(out)
    assert _unescape(out) == text if hides(text) else out == text


def _render(widget: urwid.Widget, cols: int = 100) -> str:
    canvas = widget.render((cols,))
    return "\n".join(line.decode("utf-8") for line in canvas.text)


def test_the_prompt_box_shows_the_exact_command_and_warns() -> None:
    prompt = PermissionPromptProjection(
        prompt_id="prm_1",
        tool_name="shell.run",
        summary=f"{CR_COMMAND}: opaque command",
        risk_level="high",
        segments=[PermissionSegmentProjection(text=HIDDEN_COMMAND, risk_level="high")],
    )
    screen = _render(permission_prompt(prompt, armed=True))
    assert f"shell.run: {CR_SHOWN}: opaque command" in screen
    assert HIDDEN_SHOWN in screen
    assert HIDDEN_WARNING[:40] in screen
    plain = PermissionPromptProjection(
        prompt_id="prm_2", tool_name="shell.run", summary="ls", risk_level="low"
    )
    assert HIDDEN_WARNING[:40] not in _render(permission_prompt(plain, armed=True))


# --- the user log ----------------------------------------------------------------------------


def test_air_log_holds_one_escaped_line_per_record(tmp_path: Path) -> None:
    from air.doctor.logs import configure_logging
    from air.security.redact import SecretRedactor

    secret = "zq81\\not-a-known-shape-9f3c"  # a backslash: escaped first, it would not match
    attached = configure_logging(SecretRedactor([secret]), home=str(tmp_path))
    logger = logging.getLogger("air.test.exact")
    try:
        logger.warning("refused %s for %s", CR_COMMAND, f"a\\b {secret}\nforged WARNING line")
        try:
            raise ValueError(HIDDEN_COMMAND)
        except ValueError:
            logger.exception("failed")
    finally:
        configure_logging(SecretRedactor(), home=str(tmp_path / "elsewhere"))
    text = Path(attached[0]).read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[0].endswith(f"refused {CR_SHOWN} for a\\\\b [REDACTED]\\nforged WARNING line")
    assert f"ValueError: {HIDDEN_SHOWN}" in text
    for raw in ("\r", "\x1b", "\u202e"):
        assert raw not in text
    assert "not-a-known-shape" not in text


def test_the_headless_progress_line_shows_the_exact_error() -> None:
    import io

    from air.cli.reporter import Progress
    from air.contracts.error import make_air_error
    from air.contracts.event import EventSource, new_event

    def event(type_: str, payload: dict[str, object]) -> object:
        source = EventSource(kind="scheduler")
        return new_event(type_, payload, session_id="ses_x", project_id="prj_x", source=source)

    err = io.StringIO()
    progress = Progress(err, None)
    spec = {"id": "a", "type": "execute", "title": "a", "description": "a"}
    progress.on_event(event("task.created", {"task_spec": spec}))
    started = {"task_id": "a", "agent_id": "agt_a", "agent_type": "executor", "attempt_index": 1}
    progress.on_event(event("task.started", started))
    error = make_air_error(kind="task_failed", message=f"`{CR_COMMAND}` failed")
    payload = {"task_id": "a", "attempt_index": 1, "error": error.model_dump(mode="json")}
    progress.on_event(event("task.failed", payload))
    assert f"a failed: `{CR_SHOWN}` failed (done 0/1" in err.getvalue()


# --- a real session ----------------------------------------------------------------------


def _scripts(root: Path) -> None:
    root.mkdir()

    def run(n: int, command: str) -> CassetteTurn:
        block = ToolUseBlock(id=f"toolu_{n}", name="shell.run", input={"command": command})
        return CassetteTurn(content=[block], stop_reason="tool_use")

    result = {"status": "completed", "summary": "Asked twice.", "result": {"changes_made": False}}
    done = TextBlock(text=f"Asked twice.\n```json:result\n{json.dumps(result)}\n```\n")
    turns = [
        run(1, CR_COMMAND),
        run(2, HIDDEN_COMMAND),
        CassetteTurn(content=[done], stop_reason="end_turn"),
    ]
    (root / "risky.jsonl").write_text("".join(t.model_dump_json() + "\n" for t in turns))


def _model(tmp_path: Path) -> ConsoleModel:
    _scripts(tmp_path / "scripts")
    model = ConsoleModel(tmp_path / "scripts")
    plan = {**PLAN, "tasks": [_spec("risky", "Build it", "a.txt")]}
    model.main = [_text('{"intent": "task"}'), _text(json.dumps(plan))]
    return model


def _prompt_line(screen: str) -> str:
    return next((line for line in screen.splitlines() if "shell.run: " in line), "")


@pytest.mark.slow
def test_the_real_console_shows_the_exact_command(tmp_path: Path) -> None:
    """The console's prompt (capture-pane) shows the ``\\r`` and the other hidden characters
    escaped and warns; denied, neither command runs."""
    root, home = tmp_path / "proj", tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "AIR_CONSOLE_KEY": KEY}
    with StrictServer(api_key=KEY, model=_model(tmp_path)) as server:
        _project(root, server.url)
        tmux = Tmux(tmp_path)
        try:
            tmux.start(_air("run", str(root)), env)
            tmux.wait_for("IDLE", timeout=30)
            tmux.type("build it")
            tmux.keys("Enter")
            screen = tmux.wait_for("permission needed", timeout=30)
            assert f"shell.run: {CR_SHOWN}" in _prompt_line(screen), screen
            assert "control or invisible characters, shown escaped" in screen
            time.sleep(0.5)  # past the prompt's guard
            tmux.keys("n")
            screen = tmux.wait_for(HIDDEN_SHOWN, timeout=30)
            assert f"shell.run: {HIDDEN_SHOWN}" in _prompt_line(screen), screen
            time.sleep(0.5)
            tmux.keys("n")
            tmux.wait_for("Build it  completed", timeout=30)
            tmux.keys("C-d")
            assert tmux.wait_exit(timeout=30) == 0
            assert processes_with(str(tmp_path)) == []
        finally:
            tmux.close()
    assert server.rejected == [], [r.problem for r in server.rejected]


@pytest.mark.slow
def test_plain_history_and_report_show_the_exact_command(tmp_path: Path) -> None:
    """``--plain`` through a pipe prints the prompt escaped; allowed once, both commands run,
    and ``air history`` and ``air report --html`` of the session show them escaped too."""
    root, home = tmp_path / "proj", tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "AIR_CONSOLE_KEY": KEY}
    with StrictServer(api_key=KEY, model=_model(tmp_path)) as server:
        _project(root, server.url)
        proc = subprocess.Popen(
            _air("run", str(root), "--plain"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        assert proc.stdin is not None
        assert proc.stdout is not None
        seen: list[bytes] = []

        def wait_line(text: str) -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                seen.append(line)
                if text.encode() in line:
                    return
            raise AssertionError(f"never printed {text!r}: {b''.join(seen)!r}")

        try:
            proc.stdin.write(b"build it\n")
            proc.stdin.flush()
            for _ in (CR_COMMAND, HIDDEN_COMMAND):
                wait_line("answer with one of:")
                time.sleep(0.5)  # past the prompt guard
                proc.stdin.write(b"once\n")
                proc.stdin.flush()
            wait_line("task #1 Build it: completed")
            proc.stdin.close()
            assert proc.wait(timeout=60) == 0
        finally:
            proc.kill()
    out = b"".join(seen).decode("utf-8")
    assert f"permission needed — shell.run: {CR_SHOWN}" in out
    assert f"permission needed — shell.run: {HIDDEN_SHOWN}" in out
    assert "control or invisible characters, shown escaped" in out
    for raw in ("\r", "\x1b", "\x08", "\u202e", "\u200b"):
        assert raw not in out

    history = subprocess.run(
        [*_air("history", "--project", str(root))], env=env, capture_output=True, text=True
    )
    assert history.returncode == 0, history.stderr
    started = [line for line in history.stdout.splitlines() if "command.started" in line]
    assert len(started) == 2, history.stdout
    assert started[0].endswith(f"$ {CR_SHOWN}")
    assert started[1].endswith(f"$ {HIDDEN_SHOWN}")
    for raw in ("\r", "\x1b", "\x08", "\u202e", "\u200b"):
        assert raw not in history.stdout

    page = tmp_path / "report.html"
    report = subprocess.run(
        [*_air("report", "--html", str(page), "--project", str(root))],
        env=env,
        capture_output=True,
        text=True,
    )
    assert report.returncode == 0, report.stderr
    text = page.read_text(encoding="utf-8")
    assert f"<code>{html.escape(CR_SHOWN)}</code>" in text
    assert f"<code>{html.escape(HIDDEN_SHOWN)}</code>" in text
    for raw in ("\r", "\x1b", "\x08", "\u202e", "\u200b"):
        assert raw not in text.split("<details>")[0]

    # the JUnit report of the same session is XML, and says the commands exactly
    from xml.etree import ElementTree

    from air.cli.history import find_project, resolve_session, session_db_path
    from air.cli.junit import write_junit
    from air.cli.session_report import read_report_events, summarise

    project = find_project(str(root))
    session_id = resolve_session(project, None)
    conn = sqlite3.connect(session_db_path(project, session_id))
    try:  # as the end of a run reads them
        events = read_report_events(conn, session_id)
    finally:
        conn.close()
    junit = tmp_path / "junit.xml"
    write_junit(str(junit), summarise(events))
    out_text = ElementTree.parse(junit).getroot().findtext("./testsuite/testcase/system-out")
    assert f"): {CR_SHOWN}\n" in (out_text or "")
    assert f"): {HIDDEN_SHOWN}\n" in (out_text or "")
