"""Issue 24 item 3 under tmux: a correction typed while two tasks run reaches both running
workers. The real ``air`` console (real MainAgent, Scheduler, sandboxed worker processes) on a
real project; the model is the strict Anthropic server on 127.0.0.1 (the Main Agent's turns
from a queue, each worker's from ``<task id>.jsonl``). Both workers wait in ``sleep`` when the
correction is typed; each one's next request to the server carries it, the screen says which
tasks got it, and the session's event log records ``requirement.delivered`` naming both."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from air.contracts.provider import TextBlock, ToolUseBlock
from air.llm.cassette import CassetteTurn
from air.roles.steering import STEER_MESSAGE
from air.testing.cassette_model import CassetteModel
from air.testing.strict_servers import Received, StrictServer
from air.testing.wire_replies import Reply
from tests.ui.test_console_e2e import _TASK_LINE, KEY, _air, _project, _spec, _text, _wait_task
from tests.ui.tmux import Tmux, processes_with

NOTE = "Use tabs, not spaces, in every file you touch."
PLAN = {
    "summary": "Two slow tasks in parallel.",
    "needs_plan": False,
    "tasks": [_spec("slow-a", "Slow one A", "b.txt"), _spec("slow-b", "Slow one B", "c.txt")],
}
SLEEP = "sleep 6"


class _Model:
    """The Main Agent's replies in order; a worker's request goes to its task's cassette."""

    def __init__(self, scripts: Path) -> None:
        self.workers = CassetteModel(scripts)
        self.main = [
            _text('{"intent": "task"}'),
            _text(json.dumps(PLAN)),
            _text('{"change_class": "execution", "contradicted_task_ids": []}'),
        ]
        self._lock = threading.Lock()

    def __call__(self, wire: str, body: dict[str, Any]) -> Reply:
        if _task_of(body) is not None:
            return self.workers(wire, body)
        with self._lock:
            return self.main.pop(0) if self.main else _text("Nothing more is scripted.")


def _task_of(body: dict[str, Any]) -> str | None:
    first = body["messages"][0]["content"]
    text = first if isinstance(first, str) else " ".join(b.get("text", "") for b in first)
    found = _TASK_LINE.search(text)
    return found.group(1) if found else None


def _last_text(body: dict[str, Any]) -> str:
    content = body["messages"][-1]["content"]
    if isinstance(content, str):
        return content
    return "\n".join(str(b.get("text", "")) for b in content if b.get("type") == "text")


def _scripts(scripts: Path) -> None:
    scripts.mkdir()
    result = {"status": "completed", "summary": "Slept.", "result": {"changes_made": False}}
    done = CassetteTurn(
        content=[TextBlock(text=f"Slept.\n```json:result\n{json.dumps(result)}\n```\n")],
        stop_reason="end_turn",
    )
    run = CassetteTurn(
        content=[ToolUseBlock(id="toolu_1", name="shell.run", input={"command": SLEEP})],
        stop_reason="tool_use",
    )
    for task_id in ("slow-a", "slow-b"):
        lines = "".join(t.model_dump_json(exclude_none=True) + "\n" for t in (run, done))
        (scripts / f"{task_id}.jsonl").write_text(lines)


def _both_sleeping(marker: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while sum(SLEEP in line for line in processes_with(marker)) < 2:
        if time.monotonic() > deadline:
            raise AssertionError(f"the two workers never ran {SLEEP!r}: {processes_with(marker)}")
        time.sleep(0.05)


def _by_task(requests: list[Received]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for r in requests:
        task = _task_of(r.body)
        if task is not None:
            out.setdefault(task, []).append(_last_text(r.body))
    return out


@pytest.mark.slow
def test_a_correction_typed_while_two_tasks_run_reaches_both_workers(tmp_path: Path) -> None:
    root, home, scripts = tmp_path / "proj", tmp_path / "home", tmp_path / "scripts"
    home.mkdir()
    _scripts(scripts)
    env = {"HOME": str(home), "AIR_CONSOLE_KEY": KEY}
    with StrictServer(api_key=KEY, model=_Model(scripts)) as server:
        _project(root, server.url)
        tmux = Tmux(tmp_path)
        try:
            tmux.start(_air("run", str(root), "--max-workers", "2"), env)
            tmux.wait_for("IDLE", timeout=30)
            tmux.type("change the project")
            tmux.keys("Enter")
            _wait_task(tmux, "Slow one A", "running")
            _wait_task(tmux, "Slow one B", "running")
            _both_sleeping(str(tmp_path))
            assert all(NOTE not in t for ts in _by_task(server.requests).values() for t in ts)

            tmux.type(NOTE)
            tmux.keys("Enter")
            screen = tmux.wait_for("Sent to the running work", timeout=30)
            assert "slow-a" in screen
            assert "slow-b" in screen
            _wait_task(tmux, "Slow one A", "completed")
            _wait_task(tmux, "Slow one B", "completed")
            tmux.keys("C-d")
            assert tmux.wait_exit(timeout=30) == 0
        finally:
            tmux.close()
    assert server.rejected == [], [r.problem for r in server.rejected]
    asked = _by_task(server.requests)
    for task in ("slow-a", "slow-b"):
        first, second = asked[task]
        assert NOTE not in first
        assert second.endswith(STEER_MESSAGE.format(text=NOTE)), second
    (session,) = os.listdir(root / ".air" / "local" / "sessions")
    db = sqlite3.connect(root / ".air" / "local" / "sessions" / session / "session.db")
    rows = db.execute("SELECT payload_json FROM events WHERE type = 'requirement.delivered'")
    (delivered,) = [json.loads(r[0]) for r in rows]
    db.close()
    assert sorted(delivered["task_ids"]) == ["slow-a", "slow-b"]
    assert delivered["description"] == NOTE
