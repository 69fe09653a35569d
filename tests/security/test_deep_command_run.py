"""Real headless runs whose scripted model sends what no tool call can carry: a shell command
nested 400 deep (the permission decision raised RecursionError), a NUL in a tool argument
(ValueError: embedded null byte) and JSON's unpaired surrogate `\\ud800` in its text (no UTF-8:
the reply could not be passed on to the worker). Each ended the whole run with a traceback
(exit 1, every task with it). Now the command is opaque and refused headless, the NUL is a
validation error the model hears back, the surrogate is U+FFFD, and the task completes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from air.testing.strict_servers import StrictServer
from air.testing.wire_replies import Reply, Turn, openai_sse
from tests.headless import (
    LOOK_BATCH,
    json_events,
    review_project,
    run_batch_json,
    strict_openai_models,
)
from tests.trusted import trust_project

KEY = "k-deep-0123456789abcdef"


def _result(summary: str = "looked") -> str:
    block = json.dumps(
        {"status": "completed", "summary": summary, "result": {"changes_made": False}}
    )
    return f"Done.\n```json:result\n{block}\n```\n"


def _run(root: Path, home: Path, *replies: Reply) -> tuple[Any, int]:
    """The headless run against a strict server pushed ``replies``: (its process, requests)."""
    with StrictServer(api_key=KEY) as server:
        strict_openai_models(root, server.url, "AIR_DEEP_KEY")
        trust_project(root, home)
        server.push(*replies)
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))},
            "HOME": str(home),
            "AIR_DEEP_KEY": KEY,
        }
        return run_batch_json(root, env), len(server.requests)


def test_a_command_too_deep_to_analyze_is_refused_and_the_run_goes_on(tmp_path: Path) -> None:
    root, home = review_project(tmp_path, LOOK_BATCH)
    deep = json.dumps({"command": "echo " + "$(" * 400 + "x" + ")" * 400})
    done, requests = _run(
        root,
        home,
        Reply(chunks=openai_sse(Turn(tool=("call_1", "shell_run", [deep]), stop="tool_use"))),
        Reply(chunks=openai_sse(Turn(text=[_result()]))),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert requests == 2  # the model heard back about its command
    events = json_events(done.stdout)
    decided = [e for e in events if e["type"] == "permission.decision.recorded"]
    assert [d["payload"]["decision"]["action"] for d in decided] == ["deny"]
    assert "nested too deeply to analyze" in json.dumps(decided[0]["payload"])
    assert [e["type"] for e in events if e["type"].startswith("task.")][-1] == "task.completed"
    assert "tool.started" not in {e["type"] for e in events}  # it never ran


def test_a_nul_in_an_argument_and_lone_surrogates_in_replies_do_not_end_the_run(
    tmp_path: Path,
) -> None:
    """The NUL is a validation error; a result block holding `\\ud800` is asked for again (the
    worker could not send it on); a lone surrogate in a reply's text becomes U+FFFD."""
    root, home = review_project(tmp_path, LOOK_BATCH)
    nul = json.dumps({"command": "ls", "cwd": "src\u0000"})
    done, requests = _run(
        root,
        home,
        Reply(chunks=openai_sse(Turn(tool=("call_1", "shell_run", [nul]), stop="tool_use"))),
        Reply(chunks=openai_sse(Turn(text=[_result("looked \ud800 here")]))),
        Reply(chunks=openai_sse(Turn(text=["a note \ud800\n" + _result("looked again")]))),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert requests == 3  # the bad block was asked for again
    events = json_events(done.stdout)
    assert "tool.started" not in {e["type"] for e in events}  # the NUL never reached a call
    assert "agent.failed" not in {e["type"] for e in events}  # no worker crashed on the way
    completed = [e for e in events if e["type"] == "task.completed"]
    assert len(completed) == 1
    assert "looked again" in json.dumps(completed[0]["payload"])
