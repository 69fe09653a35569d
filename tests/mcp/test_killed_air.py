"""An MCP server's tree outlives a SIGKILLed air only until the next air starts (IMPL-MCP-1):
every server of a session has a run record of its own marker, owned by its air process, so the
next runtime in the project reaps the tree by it as it reaps a killed air's workers — here a
child the server started in the background, which a server's stdin EOF never stops."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from air.contracts.provider import TextBlock, ToolUseBlock
from air.llm.cassette import CassetteTurn
from air.supervision.runs import RunRecordStore, runs_dir
from tests.mcp.test_headless_and_cli import _alive_with, _project

pytestmark = pytest.mark.slow


def _turns(directory: Path, name: str, command: str | None) -> None:
    result = {"status": "completed", "summary": "Done.", "result": {"changes_made": False}}
    turns = []
    if command is not None:
        call = ToolUseBlock(id="toolu_s1", name="shell.run", input={"command": command})
        turns.append(CassetteTurn(content=[call], stop_reason="tool_use"))
    turns.append(
        CassetteTurn(
            content=[TextBlock(text=f"Done.\n```json:result\n{json.dumps(result)}\n```\n")],
            stop_reason="end_turn",
        )
    )
    directory.mkdir(exist_ok=True)
    lines = "".join(t.model_dump_json(exclude_none=True) + "\n" for t in turns)
    (directory / f"{name}.jsonl").write_text(lines)


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIR_")}
    env["HOME"] = str(home)
    return env


def test_a_killed_air_s_mcp_tree_is_reaped_by_the_next_air(tmp_path: Path) -> None:
    root, home, tag = _project(tmp_path)
    _turns(root / "cassettes", "ask-time", "sleep 60")
    air = subprocess.Popen(
        [sys.executable, "-m", "air", "run", "--headless", "batch.yaml", "--cassette",
         "cassettes", "--json"],
        cwd=root, env=_env(home), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert air.stdout is not None
        for line in air.stdout:
            if json.loads(line)["type"] == "command.started":
                break  # the server runs (the runtime started it first) and so does the task
        assert _alive_with(tag)
    finally:
        air.send_signal(signal.SIGKILL)
        air.wait()
    time.sleep(0.5)
    assert _alive_with(tag), "the server's background child outlives air (the case at hand)"
    [record] = [
        r for r in RunRecordStore(runs_dir(str(root))).list() if r.get("kind") == "mcp_server"
    ]
    assert record["state"] == "running"
    assert record["marker"].startswith("mcp-")
    assert record["marker"].endswith("-time")

    # the next air in the project, with no MCP server of its own (another HOME), reaps it
    other = tmp_path / "home2"
    (other / ".air").mkdir(parents=True)
    (root / "quick.yaml").write_text(
        "version: 1\ntasks:\n  - id: quick\n    title: Nothing\n    scope: {write_area: []}\n"
    )
    _turns(root / "cassettes", "quick", None)
    done = subprocess.run(
        [sys.executable, "-m", "air", "run", "--headless", "quick.yaml", "--cassette",
         "cassettes"],
        cwd=root, env=_env(other), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert _alive_with(tag) == []
    [after] = [
        r for r in RunRecordStore(runs_dir(str(root))).list() if r["agent_id"] == record["agent_id"]
    ]
    assert after["terminal_state"] == "orphaned-killed"
