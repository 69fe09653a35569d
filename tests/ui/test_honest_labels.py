"""Honest labels (issue 24 item 8) read from the real ``air``: ``air --session SID --replay`` in
tmux shows each task's elapsed time as the log recorded it (a 2-second task is "2s", not the
time since the session ran), and ``air report --html`` shows an interrupted task as
interrupted (resumable) with its commands' real ends, never "pending" or "exit None in None
ms". The session is a real session database written through the EventStore."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from air.contracts.event import RuntimeEvent
from air.events.store import EventStore
from air.store.session_db import open_session_database
from air.testing.console_script import ConsoleEvents
from tests.forked_air import air_cli
from tests.ui.tmux import Tmux

SID = "ses_labels"


def _project(tmp_path: Path, events: list[RuntimeEvent]) -> tuple[Path, Path]:
    home, root = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    root.mkdir()
    done = _air(root, home, "init", ".")
    assert done.returncode == 0, done.stderr
    path = root / ".air" / "local" / "sessions" / SID / "session.db"
    path.parent.mkdir(parents=True)
    db = open_session_database(path)
    try:
        EventStore(db).append_many(events)
    finally:
        db.close()
    return root, home


def _air(cwd: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    return air_cli(args, cwd=cwd, env={**env, "HOME": str(home)})


def _seconds(a: RuntimeEvent, b: RuntimeEvent) -> int:
    def at(e: RuntimeEvent) -> datetime:
        return datetime.fromisoformat(e.timestamp.replace("Z", "+00:00"))

    return int((at(b) - at(a)).total_seconds())


@pytest.mark.slow
def test_a_replay_shows_the_recorded_elapsed_times(tmp_path: Path) -> None:
    ev = ConsoleEvents(SID, step_ms=250)  # recorded on 2026-01-01, 250 ms between events
    events = ev.session() + ev.task("quick", "Quick one") + ev.task("cut", "Cut short")
    events += ev.start("quick") + ev.start("cut")
    for _ in range(3):
        tool, started = ev.tool("quick", "fs.read", {"path": "a.txt"})
        events += started + ev.tool_done(tool)
    events += ev.complete("quick", "done")
    tool, started = ev.tool("cut", "fs.read", {"path": "b.txt"})
    events += started  # the log ends here: "cut" was still running when the session ended
    quick = _seconds(
        next(e for e in events if e.type == "task.started" and e.payload["task_id"] == "quick"),
        next(e for e in events if e.type == "task.completed"),
    )
    cut = _seconds(
        next(e for e in events if e.type == "task.started" and e.payload["task_id"] == "cut"),
        events[-1],
    )
    assert (quick, cut) == (2, 2)
    root, home = _project(tmp_path, events)
    tmux = Tmux(tmp_path, cols=220)  # wide enough for the HUD's replay position
    try:
        tmux.start(
            [sys.executable, "-m", "air", "--session", SID, "--replay", "--project", str(root)],
            {"HOME": str(home)},
        )
        screen = tmux.wait_for(f"REPLAY playing x1 {len(events)}/{len(events)}", timeout=60)
        tmux.keys("q")
        tmux.wait_exit(timeout=30)
    finally:
        tmux.close()
    rows = {
        title: re.search(rf"{title}.*?(\S+) \d+t ", screen) for title in ("Quick one", "Cut short")
    }
    assert rows["Quick one"] is not None, screen
    assert rows["Cut short"] is not None, screen
    assert rows["Quick one"].group(1) == f"{quick}s"
    assert rows["Cut short"].group(1) == f"{cut}s"  # the log's time, not the wall clock's


def test_the_html_report_says_interrupted_and_how_each_command_ended(tmp_path: Path) -> None:
    ev = ConsoleEvents(SID)
    events = ev.session() + ev.task("a", "Stopped midway") + ev.start("a")
    _, ran = ev.command("a", "make test")
    cid, cancelled = ev.command("a", "sleep 30")
    _, left = ev.command("a", "make long")  # never ends: the task is interrupted meanwhile
    done_cid = ran[0].payload["command_run_id"]
    events += ran + ev.command_done(done_cid, 0) + cancelled + ev.command_cancelled(cid) + left
    events.append(ev.event("task.interrupted", {"task_id": "a", "reason": "the console closed"}))
    root, home = _project(tmp_path, events)
    out = tmp_path / "r.html"
    done = _air(root, home, "report", "--html", str(out), "--session", SID)
    assert done.returncode == 0, done.stderr
    text = re.sub(r"<[^>]+>", "", out.read_text(encoding="utf-8"))
    assert "status interrupted (resumable: air resume runs it again), 1 attempt(s)" in text
    assert "make test exit 0 in 40 ms" in text
    assert "sleep 30 cancelled" in text
    assert "make long no end recorded (its task was interrupted while it ran)" in text
    assert "None" not in text
    assert "pending" not in text
