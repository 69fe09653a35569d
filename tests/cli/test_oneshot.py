"""One-shot and scripted use (issue 26 item 4): ``air -p PROMPT`` runs one task headless, a batch
comes from stdin with ``-``, stderr says each task's start, retry and end with its elapsed time
and cost and ends with the run's total cost, and a failed run says ``failed``. Real ``air``
processes and real workers replaying cassettes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.forked_air import air_cli
from tests.gitrepo import init_repo
from tests.headless import session_events

AIR = [sys.executable, "-m", "air.cli"]


def _turn(content: list[dict[str, Any]], stop: str) -> str:
    usage = {"input_tokens": 10, "output_tokens": 5}
    return json.dumps({"content": content, "stop_reason": stop, "usage": usage}) + "\n"


def _answer(status: str, summary: str) -> str:
    result = json.dumps({"status": status, "summary": summary, "result": {"changes_made": True}})
    return _turn([{"type": "text", "text": f"ok\n```json:result\n{result}\n```\n"}], "end_turn")


def _write(path: str, content: str) -> str:
    call = {"type": "tool_use", "id": "toolu_w", "name": "fs.write"}
    return _turn([{**call, "input": {"path": path, "content": content}}], "tool_use")


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / ".gitignore").write_text(".air/\ncas/\n")
    (root / "README.md").write_text("hello\n")
    return init_repo(root, message="init")


def test_air_dash_p_runs_one_task_from_the_prompt(tmp_path: Path) -> None:
    root = _project(tmp_path)
    (root / "cas").mkdir()
    (root / "cas" / "prompt.jsonl").write_text(
        _write("NOTES.md", "fixed\n") + _answer("completed", "Wrote the notes.")
    )
    prompt = "Write the notes file\n\nIt should say that the test is fixed."
    done = air_cli(["-p", prompt, "--cassette", "cas", "--json"], cwd=root)
    assert done.returncode == 0, done.stderr
    assert (root / "NOTES.md").read_text() == "fixed\n"
    created = [e for e in session_events(root) if e["type"] == "task.created"]
    assert [e["task_spec"]["id"] for e in created] == ["prompt"]
    spec = created[0]["task_spec"]
    assert spec["title"] == "Write the notes file"
    assert spec["description"] == prompt
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["type"] == "air.summary"
    assert summary["status"] == "completed"
    lines = done.stderr.splitlines()
    assert any(line.endswith("prompt started") for line in lines), done.stderr
    ended = next(line for line in lines if " prompt completed" in line)
    assert " tok, " in ended  # the attempt's tokens and cost
    assert "cost " in lines[-1]  # the last line carries the run's total cost


def test_a_batch_from_stdin_and_a_failed_run_says_failed(tmp_path: Path) -> None:
    root = _project(tmp_path)
    (root / "cas").mkdir()
    (root / "cas" / "a.jsonl").write_text(_answer("failed", "could not do it") * 3)
    batch = "tasks:\n  - id: a\n    title: Try it\n    scope: {write_area: []}\n"
    done = subprocess.run(
        [*AIR, "run", "--headless", "-", "--cassette", "cas", "--json"],
        cwd=root,
        input=batch,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 1, done.stderr
    lines = done.stderr.splitlines()
    assert "failed: done 0/1, failed 1" in lines[-1], done.stderr
    assert "blocked" not in lines[-1]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["status"] == "failed"
    assert summary["counts"]["failed"] == 1
    starts = [line for line in lines if " a started" in line or " a retried" in line]
    assert starts[0].endswith("a started")
    assert all("retried (attempt " in line for line in starts[1:])


def test_bad_one_shot_input_is_refused_with_exit_2(tmp_path: Path) -> None:
    root = _project(tmp_path)
    empty = air_cli(["-p", "  "], cwd=root, timeout=60)
    assert empty.returncode == 2
    assert "the prompt is empty" in empty.stderr
    assert "Traceback" not in empty.stderr
    junk = subprocess.run(
        [*AIR, "run", "--headless", "-"],
        cwd=root,
        input="tasks: [1, 2",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert junk.returncode == 2
    assert "<stdin>" in junk.stderr
    assert "Traceback" not in junk.stderr
    assert not (root / ".air" / "local" / "sessions").exists() or not any(
        (root / ".air" / "local" / "sessions").iterdir()
    )
