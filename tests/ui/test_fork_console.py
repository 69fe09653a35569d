"""Issue 25 item 3 through the REAL ``air``: ``context: fork`` (IMPL-FORK-1).

In the console (tmux, the strict local server) the person tells the Main Agent a fact, then asks
for a change; the Main Agent's plan has one task with ``context: fork``. That worker's first
request at the server starts with the Main Agent's earlier messages, as messages of their own
roles (a branched copy of the conversation, not only the task's spec), then the task. Headless,
a batch whose task forks in a new session (no conversation) and a batch with two forking tasks
are refused with exit 2 and a line saying what to do, before any session holds a task.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from air.testing.strict_servers import StrictServer
from air.testing.wire_replies import Reply
from tests.ui.test_console_e2e import KEY, _air, _project, _text
from tests.ui.tmux import Tmux

FACT = "Remember this: the release is named PLUM-7."
ANSWER = "Noted: the release is named PLUM-7."
PLAN = {
    "summary": "One task, forked from this conversation.",
    "needs_plan": False,
    "tasks": [
        {
            "id": "name-it",
            "type": "execute",
            "title": "Write the release name",
            "description": "Write the release name we agreed on into a.txt.",
            "scope": {"write_area": ["a.txt"]},
            "context": "fork",
        }
    ],
}
RESULT = {"status": "completed", "summary": "Named it.", "result": {"changes_made": False}}


class Model:
    """The Main Agent's turns in order; every worker request is kept and answered done."""

    def __init__(self) -> None:
        self.main = [
            _text('{"intent": "chat"}'),
            _text(ANSWER),
            _text('{"intent": "task"}'),
            _text(json.dumps(PLAN)),
        ]
        self.worker_bodies: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def __call__(self, wire: str, body: dict[str, Any]) -> Reply:
        with self._lock:
            if "Role: executor" in json.dumps(body.get("system")):
                self.worker_bodies.append(body)
                return _text(f"Named it.\n```json:result\n{json.dumps(RESULT)}\n```\n")
            return self.main.pop(0) if self.main else _text("Nothing more is scripted.")


@pytest.mark.slow
def test_a_forked_task_starts_from_the_main_agent_s_conversation(tmp_path: Path) -> None:
    root, home = tmp_path / "proj", tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "AIR_CONSOLE_KEY": KEY}
    model = Model()
    with StrictServer(api_key=KEY, model=model) as server:
        _project(root, server.url)
        tmux = Tmux(tmp_path, cols=200)
        try:
            tmux.start(_air("run", str(root)), env)
            tmux.wait_for("IDLE", timeout=30)
            tmux.type(FACT)
            tmux.keys("Enter")
            tmux.wait_for(f"air> {ANSWER}", timeout=30)
            tmux.wait_for("· IDLE ·")
            tmux.type("now write the release name down")
            tmux.keys("Enter")
            tmux.wait_for("Write the release name  completed", timeout=60)
            tmux.keys("C-d")
            assert tmux.wait_exit(timeout=30) == 0
        finally:
            tmux.close()
    assert server.rejected == [], [r.problem for r in server.rejected]
    first = model.worker_bodies[0]["messages"]
    # the branched copy: the person's message and the Main Agent's answer, in their roles
    assert first[0]["role"] == "user"
    assert first[0]["content"][0]["text"] == FACT
    assert first[1]["role"] == "assistant"
    assert first[1]["content"][0]["text"] == ANSWER
    # then the person's request (the conversation as it was when the task was created: the
    # plan's answer came after), the note that this is a fork, and the task itself
    assert len(first) == 3
    assert first[2]["role"] == "user"
    assert first[2]["content"][0]["text"] == "now write the release name down"
    task = json.dumps(first[2]["content"][1:])
    assert "copy of the Main Agent's conversation" in task
    assert "Write the release name we agreed on into a.txt." in task
    assert "L7 conversation" not in task  # the fork carries it: not a second time as text
    assert "Scheduled:" not in json.dumps(first)


def _batch_project(tmp_path: Path, url: str, tasks: list[dict[str, Any]]) -> Path:
    root = tmp_path / "proj"
    _project(root, url)
    (root / "batch.json").write_text(json.dumps({"tasks": tasks}))
    return root


def _run(root: Path, tmp_path: Path, mode: str = "--headless") -> subprocess.CompletedProcess[str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return subprocess.run(
        _air("run", mode, "batch.json", "--project", str(root)),
        cwd=root,
        env={**os.environ, "HOME": str(home), "AIR_CONSOLE_KEY": KEY},
        capture_output=True,
        text=True,
        timeout=120,
    )


def _tasks_created(root: Path) -> int:
    sessions = root / ".air" / "local" / "sessions"
    count = 0
    for session in os.listdir(sessions) if sessions.exists() else []:
        db = sqlite3.connect(sessions / session / "session.db")
        try:
            count += db.execute("SELECT count(*) FROM tasks").fetchone()[0]
        finally:
            db.close()
    return count


@pytest.mark.slow
def test_headless_fork_without_a_conversation_or_twice_is_refused(tmp_path: Path) -> None:
    task = dict(PLAN["tasks"][0])  # type: ignore[index]
    with StrictServer(api_key=KEY) as server:
        root = _batch_project(tmp_path, server.url, [task])
        alone = _run(root, tmp_path)
        planned = _run(root, tmp_path, "--plan")  # plan mode refuses what a run refuses
        (root / "batch.json").write_text(json.dumps({"tasks": [task, {**task, "id": "again"}]}))
        twice = _run(root, tmp_path)
    assert server.requests == []  # nothing reached a model
    assert alone.returncode == 2, alone.stderr
    assert "task name-it has context: fork, but this session has no persisted" in alone.stderr
    assert "Ask for the task in the console" in alone.stderr
    assert "Traceback" not in alone.stderr
    assert planned.returncode == 2, planned.stderr
    assert "task name-it has context: fork, but this session has no persisted" in planned.stderr
    assert twice.returncode == 2, twice.stderr
    assert "tasks name-it, again have context: fork; one task may" in twice.stderr
    assert "Traceback" not in twice.stderr
    assert _tasks_created(root) == 0
