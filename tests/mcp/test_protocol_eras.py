"""MCP's two eras (IMPL-MCP-4): air asks ``server/discover`` at 2026-07-28 and falls back to the
``initialize`` handshake, so it reaches a dual-era server (mcp-server-time, the SDK's) on the
current revision, a server of the handshake era only (server-everything) on 2025-11-25, and a
server of 2026-07-28 only (the SDK's servers behind ``air.testing.mcp_modern``), which a
handshake-only client cannot reach at all; ``protocol:`` in mcp.yaml pins one era. Real ``air``
processes and real servers; a tool call a server answers with ``input_required`` is a tool
error, never a loop."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from air.contracts.error import AirException
from air.mcp import connection
from air.mcp.config import McpServer
from tests.forked_air import air_cli
from tests.mcp.conftest import McpEnv
from tests.mcp.servers import everything_http, modern_http, modern_stdio, time_server
from tests.mcp.test_servers import _alive_with, _only_air_error, _serving, _stdio

pytestmark = pytest.mark.slow  # real servers: a second or two each to start


def _air(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIR_")}
    env["HOME"] = str(home)
    return air_cli(args, cwd=cwd, env=env, timeout=180)


def _declare(home: Path, servers: dict[str, dict[str, Any]]) -> None:
    (home / ".air").mkdir(parents=True, exist_ok=True)
    (home / ".air" / "mcp.yaml").write_text(json.dumps({"servers": servers}))


def test_air_mcp_tools_names_the_revision_each_server_spoke_and_a_pin_holds(
    tmp_path: Path,
) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    gate = modern_stdio([time_server()])
    with everything_http() as every, modern_http() as modern:
        servers: dict[str, dict[str, Any]] = {
            "time": {"command": time_server()},
            "gate": {"command": gate[0], "args": gate[1:]},
            "every": {"url": every},
            "modern": {"url": modern},
        }
        _declare(home, servers)
        spoke = {"time": "2026-07-28", "gate": "2026-07-28", "every": "2025-11-25"}
        spoke["modern"] = "2026-07-28"
        for name, version in spoke.items():
            listed = _air("mcp", "tools", name, cwd=work, home=home)
            assert listed.returncode == 0, listed.stderr
            assert f"; MCP {version}\n" in listed.stdout, listed.stdout

        servers["time"]["protocol"] = "legacy"  # a dual-era server answers the handshake
        servers["gate"]["protocol"] = "legacy"  # one of 2026-07-28 only refuses it
        servers["every"]["protocol"] = "2026-07-28"  # one of the handshake era cannot
        _declare(home, servers)
        listed = _air("mcp", "tools", "time", cwd=work, home=home)
        assert listed.returncode == 0, listed.stderr
        assert "; MCP 2025-11-25\n" in listed.stdout
        declared = _air("mcp", "list", cwd=work, home=home)
        assert declared.stdout.count("  MCP legacy only\n") == 2, declared.stdout
        assert declared.stdout.count("  MCP 2026-07-28 only\n") == 1, declared.stdout
        why = {
            "gate": "could not be started: Unsupported protocol version",
            "every": "could not list its tools: Bad Request: Server not initialized",
        }
        for name, message in why.items():
            refused = _air("mcp", "tools", name, cwd=work, home=home)
            assert refused.returncode == 2, refused.stdout
            assert f"MCP server {name} (" in refused.stderr
            assert message in refused.stderr
            assert "Traceback" not in refused.stderr


async def test_servers_of_2026_07_28_only_serve_their_tools_through_the_registry(
    mcp_env: McpEnv,
) -> None:
    gate = _stdio("gate", modern_stdio([time_server(), "--local-timezone", "UTC"]))
    with modern_http() as url:
        http = McpServer(name="modern", transport="http", source="mcp.yaml", url=url)
        async with _serving(mcp_env, gate, http) as running:
            assert [r.connection.protocol for r in running if r.connection] == ["2026-07-28"] * 2
            now = await mcp_env.registry.call(
                "mcp__gate__get_current_time", {"timezone": "UTC"}, mcp_env.ctx()
            )
            assert now.status == "ok", now.error
            assert '"timezone": "UTC"' in str(now.output)
            echo = await mcp_env.registry.call(
                "mcp__modern__echo", {"text": "stateless"}, mcp_env.ctx()
            )
            assert echo.status == "ok", echo.error
            assert echo.output == "stateless"
            asked = await mcp_env.registry.call("mcp__modern__ask", {}, mcp_env.ctx())
            assert asked.status == "error"
            assert asked.error is not None
            assert asked.error.kind == "tool_error"
            assert "InputRequiredResult" in asked.error.message
            after = await mcp_env.registry.call("mcp__modern__echo", {"text": "on"}, mcp_env.ctx())
            assert after.output == "on"  # the session goes on


async def test_a_handshake_only_client_cannot_reach_a_server_of_2026_07_28_only(
    mcp_env: McpEnv,
) -> None:
    def naming(exc: AirException) -> bool:
        return exc.kind == "config_error" and "Unsupported protocol version" in exc.error.message

    pinned = _stdio("gate", modern_stdio([time_server()]))._replace(protocol="legacy")
    # one AirException, inside the group of the test's own nursery (open_runtime unwraps it)
    with pytest.raises(ExceptionGroup) as group:
        async with _serving(mcp_env, pinned):
            pass
    _only_air_error(group.value, naming)


def test_a_gate_refuses_the_handshake_as_the_spec_says() -> None:
    """The test server's own refusal (what a modern-only server answers ``initialize``)."""
    gate = subprocess.run(
        modern_stdio([sys.executable, "-c", "import sys; sys.stdin.read()"]),
        input=json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "x"}}
        )
        + "\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    answer = json.loads(gate.stdout)
    assert answer["id"] == 1
    assert answer["error"]["code"] == -32022
    assert answer["error"]["data"] == {"supported": ["2026-07-28"], "requested": "x"}


async def test_a_server_that_never_answers_is_refused_at_the_start_bound(
    mcp_env: McpEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(connection, "START_TIMEOUT_S", 2.0)
    tag = f"mute-{os.getpid()}"
    mute = _stdio("mute", [sys.executable, "-c", "import sys; sys.stdin.read()", tag])

    def naming(exc: AirException) -> bool:
        return exc.kind == "config_error" and "did not start and open a session within 2 s" in (
            exc.error.message
        )

    with trio.fail_after(30), pytest.raises(ExceptionGroup) as group:
        async with _serving(mcp_env, mute):
            pass
    _only_air_error(group.value, naming)
    assert _alive_with(tag) == []  # its tree is gone
