"""`air demo`, `air history` and `air session list` against real projects on disk."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def _air(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "air.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


@pytest.mark.slow
def test_demo_records_a_real_run_that_history_reads_back(tmp_path: Path) -> None:
    demo = _air("demo", "--dir", str(tmp_path))
    assert demo.returncode == 0, demo.stdout + demo.stderr
    root = tmp_path / "mathx"
    assert "return a + b" in (root / "mathx.py").read_text()
    assert "referential check clean: True" in demo.stdout

    history = _air("history", "--project", str(root), "--json")
    assert history.returncode == 0, history.stderr
    events = [json.loads(line) for line in history.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "session.created"
    for expected in (
        "user.message.created",
        "task.created",
        "task.started",
        "tool.completed",
        "command.completed",
        "artifact.created",
        "evidence.created",
        "task.completed",
    ):
        assert expected in types, expected
    done = next(e for e in events if e["type"] == "command.completed")
    assert done["payload"]["exit_code"] == 0
    diff = next(e for e in events if e["type"] == "artifact.created")
    assert "+    return a + b" in Path(diff["payload"]["path"]).read_text()

    listing = _air("session", "list", "--project", str(root))
    assert listing.returncode == 0
    assert events[0]["session_id"] in listing.stdout
    assert "1 tasks" in listing.stdout

    text = _air("history", cwd=root)
    assert text.returncode == 0
    assert "task.completed" in text.stdout


def test_demo_refuses_to_overwrite(tmp_path: Path) -> None:
    (tmp_path / "mathx").mkdir()
    proc = _air("demo", "--dir", str(tmp_path))
    assert proc.returncode == 2
    assert "already exists" in proc.stderr
    assert "what to do:" in proc.stderr


def test_history_outside_a_project_says_what_to_do(tmp_path: Path) -> None:
    proc = _air("history", cwd=tmp_path)
    assert proc.returncode == 2
    assert "not_found" in proc.stderr
    assert "air init" in proc.stderr
    # said once: no copy from logging's last-resort handler before it
    assert proc.stderr.count("no air project at or above") == 1, proc.stderr
    unknown = _air("init", str(tmp_path))
    assert unknown.returncode == 0
    missing = _air("history", "--session", "ses_nope", cwd=tmp_path)
    assert missing.returncode == 2
    assert "air session list" in missing.stderr


def test_init_creates_the_layout_once(tmp_path: Path) -> None:
    first = _air("init", str(tmp_path), "--name", "shop")
    assert first.returncode == 0, first.stderr
    project = json.loads((tmp_path / ".air" / "shared" / "project.json").read_text())
    assert project["name"] == "shop"
    assert ".air/local/" in (tmp_path / ".gitignore").read_text()
    again = _air("init", str(tmp_path))
    assert again.returncode == 0
    assert "already initialised" in again.stdout
    assert project["project_id"] in again.stdout
    missing = _air("init", str(tmp_path / "nope"))
    assert missing.returncode == 2


def test_a_permission_decision_reads_as_what_was_decided_and_why() -> None:
    """It was the payload's JSON cut at 90 characters: the reason never showed."""
    from air.cli.history import describe_payload

    payload = {
        "decision": {"action": "block", "reason": "AGENTS.md is protected: the task's write area"},
        "tool_name": "shell.run",
        "subject": "echo x >> AGENTS.md\r\x1b[2Kecho ok",
    }
    line = describe_payload("permission.decision.recorded", payload)
    assert line.startswith("block shell.run echo x >> AGENTS.md")
    assert line.endswith(": AGENTS.md is protected: the task's write area")
    assert "\x1b" not in line
    assert "\r" not in line  # a task's text never moves the terminal's cursor
