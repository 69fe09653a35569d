"""MCP servers whose tools add up past what the session's model takes in one request (OpenAI's
chat completions: 128) in real ``air`` processes against the strict OpenAI server: the run is
refused before any task starts (config_error, exit 2, no request sent, no server process left);
a server's ``tools:`` in mcp.yaml offers only the tools it names, and the same servers then
run; ``air mcp tools`` marks what ``tools:`` leaves out and names a tool the server lacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from air.contracts.provider import TextBlock
from air.llm.cassette import CassetteTurn
from air.testing.cassette_model import CassetteModel
from air.testing.strict_servers import StrictServer
from tests.forked_air import air_cli
from tests.gitrepo import git
from tests.trusted import trust_project

KEY = "zq81-tools-key-4c1e9b7a0d2f4e6a8b3c5d7e9f1a2b4c"
MODELS = """default: openai/gpt-4.1
providers:
  openai:
    kind: openai_compatible
    base_url: {url}/v1
    auth_ref: AIR_E2E_KEY
    models:
      gpt-4.1: {{}}
"""
BATCH = """version: 1
tasks:
  - id: ask
    title: Say what you were offered
    scope: {write_area: ["notes.txt"]}
"""


def _air(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIR_")}
    env.update(HOME=str(home), AIR_E2E_KEY=KEY)
    return air_cli(args, cwd=cwd, env=env, timeout=180)


def _mcp_yaml(home: Path, tag: str, tools: list[str] | None) -> None:
    args = ["-m", "air.testing.mcp_hostile", "--many", "130", tag]
    line = f"    tools: {json.dumps(tools)}\n" if tools is not None else ""
    (home / ".air" / "mcp.yaml").write_text(
        f"servers:\n  many:\n    command: {json.dumps(sys.executable)}\n"
        f"    args: {json.dumps(args)}\n{line}"
    )


def _alive_with(tag: str) -> list[str]:
    out = subprocess.run(["ps", "-ww", "-eo", "stat,args"], capture_output=True, text=True)
    return [line for line in out.stdout.splitlines() if tag in line and line[:1] != "Z"]


def _offered(body: dict[str, object]) -> set[str]:
    return {t["function"]["name"] for t in body["tools"]}  # type: ignore[attr-defined]


@pytest.mark.slow
def test_too_many_tools_are_refused_up_front_and_tools_offers_only_those_named(
    tmp_path: Path,
) -> None:
    root, home, scripts = tmp_path / "proj", tmp_path / "home", tmp_path / "scripts"
    root.mkdir()
    (home / ".air").mkdir(parents=True)
    scripts.mkdir()
    (root / "notes.txt").write_text("notes\n")
    (root / "batch.yaml").write_text(BATCH)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "-c", "user.email=t@e", "-c", "user.name=T", "commit", "-qm", "start")
    result = {"status": "completed", "summary": "Nothing to do.", "result": {"changes_made": False}}
    final = CassetteTurn(
        content=[TextBlock(text=f"Done.\n```json:result\n{json.dumps(result)}\n```\n")],
        stop_reason="end_turn",
    )
    (scripts / "ask.jsonl").write_text(final.model_dump_json(exclude_none=True) + "\n")
    tag = f"{tmp_path}/many-tools"
    with StrictServer(api_key=KEY, model=CassetteModel(scripts)) as server:
        (root / ".air" / "shared").mkdir(parents=True)
        (root / ".air" / "shared" / "models.yaml").write_text(MODELS.format(url=server.url))
        trust_project(root, home)

        _mcp_yaml(home, tag, None)  # 13 built-in tools + the server's 140
        refused = _air("run", "--headless", "batch.yaml", cwd=root, home=home)
        assert refused.returncode == 2, refused.stderr
        assert "tools would be offered to openai/gpt-4.1, whose API takes at most 128" in (
            refused.stderr
        )
        assert "Traceback" not in refused.stderr
        assert server.requests == []
        assert _alive_with(tag) == []

        _mcp_yaml(home, tag, ["echo", "t0", "t129"])
        ran = _air("run", "--headless", "batch.yaml", cwd=root, home=home)
        assert ran.returncode == 0, ran.stderr
        assert [r.problem for r in server.rejected] == []
        assert server.requests
        offered = _offered(server.requests[0].body)
        mine = {name for name in offered if name.startswith("mcp__")}
        assert mine == {"mcp__many__echo", "mcp__many__t0", "mcp__many__t129"}
        assert _alive_with(tag) == []

        sent = len(server.requests)
        _mcp_yaml(home, tag, ["echo", "t130"])
        listed = _air("mcp", "tools", "many", cwd=root, home=home)
        assert listed.returncode == 2, listed.stderr
        assert "many: 140 tool(s), 1 offered (its `tools:`)" in listed.stdout
        assert "mcp__many__echo  (the server's name: echo)\n" in listed.stdout
        assert "mcp__many__t0  (the server's name: t0)  [not offered]" in listed.stdout
        assert "servers.many.tools: the server lists no tool named t130" in listed.stderr
        again = _air("run", "--headless", "batch.yaml", cwd=root, home=home)
        assert again.returncode == 2, again.stderr
        assert "servers.many.tools: the server lists no tool named t130" in again.stderr
        assert len(server.requests) == sent
        assert _alive_with(tag) == []
