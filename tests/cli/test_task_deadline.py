"""A task's whole-task deadline through the real ``air run`` (issue 25 item 5,
IMPL-DEADLINE-1): a task with ``hard_timeout_ms: 10000`` whose worker waits on a command that
would take ten minutes ends at its deadline, once, with the phase it ran out in recorded in its
``task.failed`` — and is not retried for another ten seconds (what a per-attempt hard timeout
did: ``timeout`` → retry alone)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.forked_air import air_cli
from tests.headless import session_events


def _turn(content: list[dict[str, Any]], stop: str) -> str:
    usage = {"input_tokens": 10, "output_tokens": 5}
    return json.dumps({"content": content, "stop_reason": stop, "usage": usage}) + "\n"


ARGS = ["--cassette", "cas", "--json"]


@pytest.mark.slow
def test_the_deadline_ends_a_stuck_task_once_with_its_phase(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "cas").mkdir(parents=True)
    call = {
        "type": "tool_use",
        "id": "toolu_slow",
        "name": "shell.run",
        "input": {"command": "sleep 600"},
    }
    (root / "cas" / "slow.jsonl").write_text(_turn([call], "tool_use"))
    (root / "batch.yaml").write_text(
        "tasks:\n"
        "  - id: slow\n"
        "    title: wait on a slow command\n"
        "    scope: {write_area: []}\n"
        "    constraints: {soft_timeout_ms: 8000, hard_timeout_ms: 10000, retry_budget: 2}\n"
    )
    done = air_cli(["run", "--headless", "batch.yaml", *ARGS], cwd=root, timeout=240)
    assert done.returncode != 0
    events = [e for e in session_events(root) if e["type"].startswith("task.")]
    kinds = [e["type"] for e in events if e["type"] != "task.created"]
    assert kinds == ["task.started", "task.failed"]  # one attempt: no time left for a retry
    error = events[-1]["error"]
    assert error["kind"] == "timeout"
    assert error["metadata"]["timeout_phase"] == "running"
    streamed = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    failed = [e for e in streamed if e["type"] == "task.failed"]
    assert failed[0]["payload"]["error"]["metadata"]["timeout_phase"] == "running"
