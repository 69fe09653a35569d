"""A worker's checkpoint outlives the runtime (issue 25 item 6, runner invariant 11): SIGKILL of
``air run --headless`` after a checkpoint, then ``air resume``: the retried attempt starts with
the usage and state the first one had checkpointed (IMPL-CKPT-1)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.forked_air import air_cli
from tests.headless import session_events

USAGE = {"input_tokens": 10, "output_tokens": 5}
VERDICT = {"verdict": "approved", "findings": []}


def _turn(content: list[dict[str, Any]], stop: str) -> str:
    return json.dumps({"content": content, "stop_reason": stop, "usage": USAGE}) + "\n"


def _shell(tool_id: str, command: str) -> str:
    use = {"type": "tool_use", "id": tool_id, "name": "shell.run", "input": {"command": command}}
    return _turn([use], "tool_use")


def _cassette() -> str:
    """Three turns: a quick command, one that waits for ``resumed`` (forever, in the first
    attempt), then the result."""
    result = json.dumps({"status": "completed", "summary": "looked", "result": VERDICT})
    return (
        _shell("toolu_1", "true")
        + _shell("toolu_2", "test -f resumed || sleep 60")
        + _turn([{"type": "text", "text": f"ok\n```json:result\n{result}\n```\n"}], "end_turn")
    )


@pytest.mark.slow
def test_sigkill_after_a_checkpoint_then_resume_carries_its_usage_and_state(
    tmp_path: Path,
) -> None:
    root = tmp_path / "proj"
    (root / "cas").mkdir(parents=True)
    (root / "cas" / "t0.jsonl").write_text(_cassette())
    (root / "batch.yaml").write_text(
        "tasks:\n  - id: t0\n    type: review\n    title: look\n    description: look around\n"
    )
    args = ["--cassette", "cas", "--json"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "air.cli", "run", "--headless", "batch.yaml", *args],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    seen: list[str] = []
    for line in proc.stdout:
        if not line.startswith("{"):
            continue
        seen.append(json.loads(line)["type"])
        if seen[-1] == "agent.checkpointed":
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert seen[-1] == "agent.checkpointed", seen
    before = session_events(root)
    [first] = [e for e in before if e["type"] == "agent.checkpointed"]
    [started] = [e for e in before if e["type"] == "agent.started"]
    assert first["task_id"] == "t0"
    assert first["attempt_index"] == 1
    assert first["state"] == "running"
    assert first["turn"] == 1
    assert first["usage"]["tokens"] == 15
    assert first["usage"]["turns"] == 1
    assert first["pid"] == started["pid"]  # process identity
    assert not any(e["type"] == "task.completed" for e in before)

    (root / "resumed").write_text("")
    again = air_cli(["resume", *args], cwd=root)
    assert again.returncode == 0, again.stderr
    after = session_events(root)
    [done] = [e for e in after if e["type"] == "task.completed"]
    assert done["attempt_index"] == 2
    usage = done["worker_result"]["usage"]
    # one carried turn (15 tokens) and the three of the second attempt
    assert (usage["turns"], usage["tokens"]) == (4, 60)
    second = [e for e in after if e["type"] == "agent.checkpointed" and e["attempt_index"] == 2]
    assert second[0]["turn"] == 2
    assert second[0]["usage"]["tokens"] == 30
