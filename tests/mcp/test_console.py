"""The must-show of issue 26 item 1 in the REAL console under tmux: the Main Agent in direct
mode calls a tool of a published MCP server over stdio (mcp-server-time, declared by the
trusted project, wrapped so that it spawns a child) and one over streamable HTTP (the reference
server-everything); each call shows the permission prompt, the person allows it, the answers
come back; after quit no process of the server's tree is left (a process scan)."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from air.testing.strict_servers import StrictServer
from air.testing.wire_replies import Reply, blocks_sse
from tests.gitrepo import git
from tests.headless import session_events
from tests.mcp.servers import everything_http, time_server
from tests.trusted import trust_project
from tests.ui.tmux import Tmux, processes_with

KEY = "zq81-mcp-console-7d1e5c9a3b2f4e6d8c0a1b3c5d7e9f2a"
MODELS = (
    "default: anthropic/claude-sonnet-4-5\n"
    "providers:\n"
    "  anthropic:\n"
    "    kind: anthropic\n"
    "    base_url: {url}\n"
    "    auth_ref: AIR_CONSOLE_KEY\n"
    "    models:\n"
    "      claude-sonnet-4-5: {{context_window: 200000, max_output_tokens: 64000}}\n"
)


def _tool(ident: str, name: str, args: dict[str, Any]) -> Reply:
    block = ("tool_use", (ident, name, [json.dumps(args)]))
    return Reply(chunks=blocks_sse("anthropic", [block], "tool_use", model="claude"))


class _MainModel:
    """The Main Agent's replies in order: two tool calls, then the answer."""

    def __init__(self) -> None:
        self.replies = [
            _tool("toolu_1", "mcp__time__get_current_time", {"timezone": "UTC"}),
            _tool("toolu_2", "mcp__every__echo", {"message": "hello over HTTP"}),
            Reply(
                chunks=blocks_sse(
                    "anthropic", [("text", ["Both MCP servers answered."])], "end_turn"
                )
            ),
        ]
        self.lock = threading.Lock()

    def __call__(self, wire: str, body: dict[str, Any]) -> Reply:
        with self.lock:
            return self.replies.pop(0)


@pytest.mark.slow
def test_the_console_asks_before_each_mcp_call_and_the_tree_dies_on_quit(
    tmp_path: Path,
) -> None:
    root, home = tmp_path / "proj", tmp_path / "home"
    home.mkdir()
    root.mkdir()
    git(root, "init", "-q")
    tag = f"{tmp_path}/mcp-child"
    script = f"sh -c 'sleep 300; :' {tag} & exec {time_server()} --local-timezone UTC"
    with everything_http() as url, StrictServer(api_key=KEY, model=_MainModel()) as server:
        (root / ".air" / "shared").mkdir(parents=True)
        (root / ".air" / "shared" / "models.yaml").write_text(MODELS.format(url=server.url))
        (root / ".air" / "shared" / "mcp.yaml").write_text(
            "servers:\n"
            f"  time: {{command: sh, args: ['-c', {json.dumps(script)}]}}\n"
            f"  every: {{url: {json.dumps(url)}}}\n"
        )
        trust_project(root, home)
        tmux = Tmux(tmp_path)
        try:
            env = {"HOME": str(home), "AIR_CONSOLE_KEY": KEY}
            tmux.start([sys.executable, "-m", "air", "run", str(root)], env)
            tmux.wait_for("IDLE", timeout=60)
            assert processes_with(tag)  # the project's stdio server runs, with its child
            tmux.type("/direct what time is it, and echo something")
            tmux.keys("Enter")
            screen = tmux.wait_for("permission needed", timeout=30)
            assert "mcp__time__get_current_time" in screen
            time.sleep(0.5)  # past the prompt's guard
            tmux.keys("1")
            tmux.wait_for("mcp__every__echo", timeout=30)
            screen = tmux.wait_for("permission needed", timeout=30)
            time.sleep(0.5)
            tmux.keys("1")
            tmux.wait_for("Both MCP servers answered.", timeout=30)
            tmux.keys("C-d")
            assert tmux.wait_exit(timeout=30) == 0
            assert processes_with(tag) == []  # the server and its child are gone
            assert processes_with(str(tmp_path)) == []
        finally:
            tmux.close()
    events = session_events(root)
    prompts = [e["tool_name"] for e in events if e["type"] == "permission.prompt.requested"]
    assert prompts == ["mcp__time__get_current_time", "mcp__every__echo"]
    outputs = [str(e["output_summary"]) for e in events if e["type"] == "tool.completed"]
    assert len(outputs) == 2
    assert '"timezone": "UTC"' in outputs[0]
    assert outputs[1] == "Echo: hello over HTTP"
    assert os.path.isfile(root / ".air" / "local" / "mcp" / "time.log")
