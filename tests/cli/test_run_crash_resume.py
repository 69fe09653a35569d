"""SIGKILL of the runtime in the middle of a batch of real workers, then ``air resume``: the
batch finishes, no task is lost, no completed task (nor one whose worker had returned its
result) runs again, no worker survives."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from air.ipc.procs import find_marked
from air.supervision.runs import RunRecordStore
from tests.headless import session_events

TASKS = 6


def _turn(content: list[dict[str, Any]], stop: str) -> str:
    return (
        json.dumps(
            {
                "content": content,
                "stop_reason": stop,
                "usage": {"input_tokens": 10, "output_tokens": 5},
            }
        )
        + "\n"
    )


def _cassette(task_id: str) -> str:
    result = json.dumps(
        {"status": "completed", "summary": f"{task_id} looked", "result": {"changes_made": False}}
    )
    return _turn(
        [
            {
                "type": "tool_use",
                "id": f"toolu_{task_id}",
                "name": "shell.run",
                "input": {"command": "sleep 0.6"},
            }
        ],
        "tool_use",
    ) + _turn([{"type": "text", "text": f"ok\n```json:result\n{result}\n```\n"}], "end_turn")


@pytest.mark.slow
def test_sigkill_mid_batch_then_resume_finishes_without_rerunning(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "cas").mkdir(parents=True)
    lines = ["tasks:"]
    for i in range(TASKS):
        lines += [f"  - id: t{i}", f"    title: look {i}", "    scope: {write_area: []}"]
        (root / "cas" / f"t{i}.jsonl").write_text(_cassette(f"t{i}"))
    (root / "batch.yaml").write_text("\n".join(lines) + "\n")
    args = ["--cassette", "cas", "--max-workers", "2", "--json"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "air.cli", "run", "--headless", "batch.yaml", *args],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    completed = 0
    for line in proc.stdout:
        event = json.loads(line)
        completed += event["type"] == "task.completed"
        if completed >= 2 and event["type"] == "agent.started":
            break  # a worker of a later wave is running: kill the runtime under it
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    before = session_events(root)
    done_before = {e["task_id"] for e in before if e["type"] == "task.completed"}
    running_before = {e["task_id"] for e in before if e["type"] == "task.started"} - done_before
    # a running task whose worker had returned its result is collected, never run again
    returned = {e["task_id"] for e in before if e["type"] == "agent.completed"} & running_before
    assert len(done_before) >= 2
    assert running_before  # something was in flight when the runtime died

    again = subprocess.run(
        [sys.executable, "-m", "air.cli", "resume", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0, again.stderr
    after = session_events(root)
    starts: dict[str, int] = {}
    for e in after:
        if e["type"] == "task.started":
            starts[e["task_id"]] = starts.get(e["task_id"], 0) + 1
    assert all(starts[t] == 1 for t in done_before | returned)  # never run twice
    assert all(starts[t] == 2 for t in running_before - returned)  # interrupted, run again
    final = {
        e["task_id"]: e["type"]
        for e in after
        if e["type"]
        in ("task.completed", "task.failed", "task.blocked", "task.interrupted", "task.cancelled")
    }
    assert final == {f"t{i}": "task.completed" for i in range(TASKS)}  # nothing lost
    assert any(e["type"] == "agent.lost" for e in after)
    records = RunRecordStore(str(root / ".air" / "local" / "state" / "runs")).list()
    assert records
    assert [find_marked(r["marker"]) for r in records if r.get("marker")] == [
        [] for r in records if r.get("marker")
    ]
