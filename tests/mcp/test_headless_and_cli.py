"""MCP end to end in real ``air`` processes: ``air run --headless`` with a real worker replaying
a cassette that calls a published MCP server's tool (mcp-server-time, stdio): fail-closed
without a rule, the tool's answer with one, and no process of the server's tree left after the
run; ``air mcp list`` / ``air mcp tools`` with a hostile server's names escaped."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from air.contracts.provider import ToolUseBlock
from tests.forked_air import air_cli
from tests.gitrepo import git
from tests.headless import session_events
from tests.mcp.conftest import one_call_cassette
from tests.mcp.servers import hostile_server, time_server
from tests.trusted import trust_project

BATCH = """version: 1
tasks:
  - id: ask-time
    title: Say what time it is
    scope: {write_area: ["notes.txt"]}
"""


def _air(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIR_")}
    env["HOME"] = str(home)
    return air_cli(args, cwd=cwd, env=env, timeout=180)


def _cassette(directory: Path) -> None:
    directory.mkdir()
    call = ToolUseBlock(
        id="toolu_t1", name="mcp__time__get_current_time", input={"timezone": "UTC"}
    )
    one_call_cassette(directory / "ask-time.jsonl", call)


def _project(tmp_path: Path) -> tuple[Path, Path, str]:
    root, home = tmp_path / "proj", tmp_path / "home"
    root.mkdir()
    (home / ".air").mkdir(parents=True)
    (root / "notes.txt").write_text("notes\n")
    (root / "batch.yaml").write_text(BATCH)
    _cassette(root / "cassettes")
    for args in (["init", "-q"], ["add", "-A"]):
        git(root, *args)
    git(root, "-c", "user.email=t@e", "-c", "user.name=T", "commit", "-qm", "start")
    tag = f"{tmp_path}/mcp-child"  # a child of the server's, found by this tag
    script = f"sh -c 'sleep 300; :' {tag} & exec {time_server()} --local-timezone UTC"
    (home / ".air" / "mcp.yaml").write_text(
        f"servers:\n  time:\n    command: sh\n    args: ['-c', {json.dumps(script)}]\n"
    )
    return root, home, tag


def _alive_with(tag: str) -> list[str]:
    out = subprocess.run(["ps", "-ww", "-eo", "stat,args"], capture_output=True, text=True)
    return [line for line in out.stdout.splitlines() if tag in line and line[:1] != "Z"]


def _tool_events(root: Path) -> list[tuple[str, dict[str, Any]]]:
    return [
        (e["type"], e)
        for e in session_events(root)
        if e["type"].startswith(("tool.", "permission."))
    ]


@pytest.mark.slow
def test_headless_fails_closed_then_a_rule_allows_the_server_s_tool(tmp_path: Path) -> None:
    root, home, tag = _project(tmp_path)
    run = ("run", "--headless", "batch.yaml", "--cassette", "cassettes")
    denied = _air(*run, cwd=root, home=home)
    assert denied.returncode == 0, denied.stderr
    events = _tool_events(root)
    decisions = [p["decision"] for t, p in events if t == "permission.decision.recorded"]
    assert [d["action"] for d in decisions] == ["deny"]
    assert "fails closed" in str(decisions[0])
    assert not [t for t, _ in events if t == "tool.completed"]
    assert _alive_with(tag) == []  # the server's tree ended with the run

    for session in (root / ".air" / "local" / "sessions").iterdir():
        subprocess.run(["rm", "-rf", str(session)], check=True)
    (home / ".air" / "permissions.yaml").write_text(
        "rules:\n  - {action: allow, tool: 'mcp__time__*'}\n"
    )
    allowed = _air(*run, cwd=root, home=home)
    assert allowed.returncode == 0, allowed.stderr
    completed = [p for t, p in _tool_events(root) if t == "tool.completed"]
    assert len(completed) == 1
    assert '"timezone": "UTC"' in str(completed[0]["output_summary"])
    assert _alive_with(tag) == []


@pytest.mark.slow
def test_air_mcp_list_and_tools_show_a_hostile_server_escaped(tmp_path: Path) -> None:
    home, root = tmp_path / "home", tmp_path / "proj"
    (home / ".air").mkdir(parents=True)
    (root / ".air" / "shared").mkdir(parents=True)
    argv = hostile_server()
    (home / ".air" / "mcp.yaml").write_text(
        f"servers:\n  bad: {{command: {json.dumps(argv[0])}, args: {json.dumps(argv[1:])}}}\n"
    )
    listed = _air("mcp", "list", cwd=root, home=home)
    assert listed.returncode == 0, listed.stderr
    assert "bad  stdio  runs " in listed.stdout
    tools = _air("mcp", "tools", "bad", cwd=root, home=home)
    assert tools.returncode == 0, tools.stderr
    assert "\x1b" not in tools.stdout
    assert "\u202e" not in tools.stdout
    assert "\r" not in tools.stdout
    assert "evil\\x1b[2J\\u202ename" in tools.stdout
    assert "mcp__bad__echo  (the server's name: echo)" in tools.stdout
    assert "mcp__bad__a_b  (the server's name: a_b)" in tools.stdout
    missing = _air("mcp", "tools", "nope", cwd=root, home=home)
    assert missing.returncode == 2
    assert "no MCP server named nope" in missing.stderr


def test_a_project_s_servers_are_refused_until_trusted(tmp_path: Path) -> None:
    home, root = tmp_path / "home", tmp_path / "proj"
    (root / ".air" / "shared").mkdir(parents=True)
    home.mkdir()
    (root / ".air" / "shared" / "mcp.yaml").write_text("servers:\n  x: {command: evil}\n")
    refused = _air("mcp", "list", cwd=root, home=home)
    assert refused.returncode == 2
    assert "untrusted_config" in refused.stderr
    assert "servers.x.command" in refused.stderr
    trust_project(root, home)
    listed = _air("mcp", "list", cwd=root, home=home)
    assert listed.returncode == 0
    assert "x  stdio  runs evil" in listed.stdout
