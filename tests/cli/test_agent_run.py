"""A task that names an agent file, run for real (issue 25 item 1): the persona reaches the
worker's system prompt, the model is offered only the file's tools, and the parent denies a
call to any other tool whatever the worker asks (IMPL-AGENTFILE-1). Real ``air`` processes,
real workers, a strict local Messages API server or a cassette."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from air.testing.strict_servers import StrictServer
from air.testing.wire_replies import Reply, Turn, anthropic_sse
from tests.forked_air import air_cli
from tests.gitrepo import init_repo
from tests.headless import review_verdict, session_events
from tests.trusted import trust_project

KEY = "zq81-agent-file-0a9b8c7d6e5f4a3b2c1d0e9f8a7b"

AGENT = """---
role: reviewer
tools: [fs.read, fs.search]
---
You are the release gatekeeper. MARK-PERSONA-GATE.
"""

BATCH = """version: 1
tasks:
  - id: gate
    title: Review the notes
    description: Read notes.txt and say whether it is fit to ship.
    agent: gate
"""


def _project(tmp_path: Path) -> tuple[Path, Path]:
    root, home = tmp_path / "proj", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    (root / "notes.txt").write_text("ship it\n")
    (root / ".gitignore").write_text(".air/local/\ncas/\n")
    init_repo(root, message="init")
    (root / ".air" / "agents").mkdir(parents=True)
    (root / ".air" / "agents" / "gate.md").write_text(AGENT)
    (root / "batch.yaml").write_text(BATCH)
    trust_project(root, home)
    return root, home


def _run(root: Path, home: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "OPENAI_", "AIR_")) and k != "HOME"
    }
    return air_cli(
        ["run", "--headless", "batch.yaml", *args],
        cwd=root,
        env={**env, "HOME": str(home), **extra},
        timeout=180,
    )


@pytest.mark.slow
def test_the_persona_and_only_the_files_tools_reach_the_model(tmp_path: Path) -> None:
    root, home = _project(tmp_path)
    with StrictServer(api_key=KEY) as server:
        server.push(Reply(chunks=anthropic_sse(Turn(text=[review_verdict()]))))
        done = _run(root, home, ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=server.url)
        requests = list(server.requests)
    assert done.returncode == 0, done.stderr
    [request] = requests
    system = json.dumps(request.body["system"])
    assert "MARK-PERSONA-GATE" in system
    assert sorted(t["name"] for t in request.body["tools"]) == ["fs_read", "fs_search"]
    created = next(e for e in session_events(root) if e["type"] == "task.created")
    assert created["task_spec"]["type"] == "review"
    assert created["task_spec"]["agent"]["tools"] == ["fs.read", "fs.search"]


def _turn(content: list[dict[str, object]], stop: str) -> str:
    usage = {"input_tokens": 10, "output_tokens": 5}
    return json.dumps({"content": content, "stop_reason": stop, "usage": usage}) + "\n"


def _tool(n: int, name: str, **args: str) -> str:
    use: dict[str, object] = {"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": args}
    return _turn([use], "tool_use")


@pytest.mark.slow
def test_the_parent_denies_a_tool_outside_the_agent_file(tmp_path: Path) -> None:
    root, home = _project(tmp_path)
    (root / "cas").mkdir()
    (root / "cas" / "gate.jsonl").write_text(
        _tool(1, "fs.list", path=".")  # a reviewer's tool, but not the file's
        + _tool(2, "fs.read", path="notes.txt")
        + _turn([{"type": "text", "text": review_verdict()}], "end_turn")
    )
    done = _run(root, home, "--cassette", "cas")
    assert done.returncode == 0, done.stderr
    started = [e["tool_name"] for e in session_events(root) if e["type"] == "tool.started"]
    assert started == ["fs.read"]  # fs.list never reached the ToolRegistry


def _main_turn(text: str) -> str:
    usage = {"input_tokens": 0, "output_tokens": 0}
    turn = {"v": 1, "content": [{"type": "text", "text": text}], "stop_reason": "end_turn"}
    return json.dumps({**turn, "usage": usage}) + "\n"


def _plan(agent: str) -> str:
    task = {
        "id": "gate",
        "type": "review",
        "title": "Review the notes",
        "description": "Read notes.txt and say whether it is fit to ship.",
        "agent": {"name": agent},
        "constraints": {"hard_timeout_ms": 120000},
    }
    return json.dumps({"summary": "Review the notes.", "needs_plan": False, "tasks": [task]})


@pytest.mark.slow
def test_the_main_agent_names_an_agent_file_added_mid_session(tmp_path: Path) -> None:
    """The console's Main Agent plans a task that names an agent: an unknown name goes back to
    the model in the repair round; a user agent file written after the console started is
    used (persona, tools, max_turns under the task's own fields)."""
    root, home = _project(tmp_path)
    (root / "cas").mkdir()
    (root / "cas" / "main.jsonl").write_text(
        _main_turn('{"intent": "task"}') + _main_turn(_plan("nosuch")) + _main_turn(_plan("gate2"))
    )
    (root / "cas" / "gate.jsonl").write_text(
        _turn([{"type": "text", "text": review_verdict()}], "end_turn")
    )
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "HOME"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "air.cli", "run", str(root), "--plain", "--cassette", "cas"],
        cwd=root,
        env={**env, "HOME": str(home)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    seen: list[str] = []
    try:
        assert proc.stderr is not None
        opened = proc.stderr.readline()  # said once the session is open: now the file appears
        assert "the plain console" in opened, opened
        (home / ".air" / "agents").mkdir(parents=True)
        (home / ".air" / "agents" / "gate2.md").write_text(
            "---\nrole: reviewer\ntools: [fs.read]\nmax_turns: 4\n---\nMARK-PERSONA-LATE.\n"
        )
        proc.stdin.write("review the notes\n")
        proc.stdin.close()
        seen += proc.stdout.readlines()
        assert proc.wait(timeout=120) == 0, "".join(seen)
    finally:
        proc.kill()
    created = [e for e in session_events(root) if e["type"] == "task.created"]
    assert len(created) == 1, "".join(seen)
    spec = created[0]["task_spec"]
    assert spec["agent"]["name"] == "gate2"
    assert spec["agent"]["source"] == "user"
    assert spec["agent"]["tools"] == ["fs.read"]
    assert spec["agent"]["persona"] == "MARK-PERSONA-LATE."
    assert spec["constraints"]["max_turns"] == 4  # the file's
    assert spec["constraints"]["hard_timeout_ms"] == 120000  # the task's own
    ended = [e["type"] for e in session_events(root) if e["type"].startswith("task.")]
    assert "task.completed" in ended, "".join(seen)
