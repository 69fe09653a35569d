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
    return subprocess.run(
        [sys.executable, "-m", "air.cli", "run", "--headless", "batch.yaml", *args],
        cwd=root,
        env={**env, "HOME": str(home), **extra},
        capture_output=True,
        text=True,
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
    use = {"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": args}
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
