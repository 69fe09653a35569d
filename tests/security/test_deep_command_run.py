"""A real headless run whose scripted model asks for a shell command nested 400 deep: the
permission decision raised RecursionError out of the registry and the whole run ended with a
traceback (exit 1, every task with it). Now the command is opaque, refused headless, recorded
as a decision, and the task goes on to complete."""

from __future__ import annotations

import json
import os
from pathlib import Path

from air.testing.strict_servers import StrictServer
from air.testing.wire_replies import Reply, Turn, openai_sse
from tests.headless import json_events, run_batch_json
from tests.trusted import trust_project

BATCH = """version: 1
tasks:
  - id: deep
    title: Look around
    description: Look at the project and report.
    scope: {write_area: ["notes.txt"]}
"""
KEY = "k-deep-0123456789abcdef"


def _result() -> str:
    block = json.dumps(
        {"status": "completed", "summary": "looked", "result": {"changes_made": False}}
    )
    return f"Done.\n```json:result\n{block}\n```\n"


def test_a_command_too_deep_to_analyze_is_refused_and_the_run_goes_on(tmp_path: Path) -> None:
    root, home = tmp_path / "proj", tmp_path / "home"
    (root / ".air" / "shared").mkdir(parents=True)
    home.mkdir()
    (root / "notes.txt").write_text("hi\n")
    (root / "batch.yaml").write_text(BATCH)
    deep = json.dumps({"command": "echo " + "$(" * 400 + "x" + ")" * 400})
    with StrictServer(api_key=KEY) as server:
        (root / ".air" / "shared" / "models.yaml").write_text(
            "default: local/m\nproviders:\n  local:\n    kind: openai_compatible\n"
            f"    base_url: {server.url}/v1\n    auth_ref: AIR_DEEP_KEY\n"
            "    models: {m: {max_output_tokens: 4096}}\n"
        )
        trust_project(root, home)
        server.push(
            Reply(chunks=openai_sse(Turn(tool=("call_1", "shell_run", [deep]), stop="tool_use"))),
            Reply(chunks=openai_sse(Turn(text=[_result()]))),
        )
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))},
            "HOME": str(home),
            "AIR_DEEP_KEY": KEY,
        }
        done = run_batch_json(root, env)
        requests = list(server.requests)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert len(requests) == 2  # the model heard back about its command
    events = json_events(done.stdout)
    decided = [e for e in events if e["type"] == "permission.decision.recorded"]
    assert [d["payload"]["decision"]["action"] for d in decided] == ["deny"]
    assert "nested too deeply to analyze" in json.dumps(decided[0]["payload"])
    assert [e["type"] for e in events if e["type"].startswith("task.")][-1] == "task.completed"
    assert "tool.started" not in {e["type"] for e in events}  # it never ran
