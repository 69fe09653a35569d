"""air's MCP client against real servers: a published stdio one (mcp-server-time from PyPI),
the reference streamable-HTTP one (server-everything from npm) and a hostile one; every call
through the real ToolRegistry and PermissionEngine, every event in the session's SQLite."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from air.contracts.error import AirException
from air.contracts.permission import PermissionGrantScope
from air.contracts.permission_records import PermissionPromptRequest, PermissionPromptResponse
from air.ipc.procs import find_marked
from air.mcp.config import McpServer
from air.mcp.connection import ERROR_SHOWN
from air.mcp.service import RunningServer, start_servers
from tests.mcp.conftest import McpEnv
from tests.mcp.servers import everything_http, hostile_server, time_server

pytestmark = pytest.mark.slow  # real servers: a second or two each to start


def _stdio(name: str, argv: list[str], timeout_s: float = 30.0) -> McpServer:
    return McpServer(
        name=name,
        transport="stdio",
        source="mcp.yaml",
        command=argv[0],
        args=tuple(argv[1:]),
        timeout_s=timeout_s,
    )


@asynccontextmanager
async def _serving(env: McpEnv, *servers: McpServer) -> AsyncIterator[list[RunningServer]]:
    async with trio.open_nursery() as nursery:
        running = await start_servers(
            nursery,
            env.registry,
            servers,
            project_root=str(env.root),
            session_id=env.session.session_id,
        )
        yield running
        nursery.cancel_scope.cancel(reason="the test is done")


async def test_a_published_stdio_server_and_an_http_one_serve_tools_through_the_registry(
    mcp_env: McpEnv,
) -> None:
    time_srv = _stdio("time", [time_server(), "--local-timezone", "UTC"])
    with everything_http() as url:
        http = McpServer(name="every", transport="http", source="mcp.yaml", url=url)
        async with _serving(mcp_env, time_srv, http) as running:
            names = {d.name for d in mcp_env.registry.list()}
            assert {"mcp__time__get_current_time", "mcp__every__echo"} <= names
            now = await mcp_env.registry.call(
                "mcp__time__get_current_time", {"timezone": "UTC"}, mcp_env.ctx()
            )
            assert now.status == "ok", now.error
            assert '"timezone": "UTC"' in str(now.output)
            echo = await mcp_env.registry.call(
                "mcp__every__echo", {"message": "over HTTP"}, mcp_env.ctx()
            )
            assert echo.status == "ok", echo.error
            assert echo.output == "Echo: over HTTP"
            marker = running[0].marker
            assert find_marked(marker)  # the stdio server runs with air's marker
        assert find_marked(marker) == []
    completed = mcp_env.payloads("tool.completed")
    assert len(completed) == 2
    decisions = [p["decision"] for p in mcp_env.payloads("permission.decision.recorded")]
    assert all(d["action"] == "allow" and "allowed by a rule" in d["reason"] for d in decisions)


class _Answer:
    def __init__(self, approved: bool) -> None:
        self.approved = approved
        self.asked: list[PermissionPromptRequest] = []

    async def ask(self, request: PermissionPromptRequest) -> PermissionPromptResponse:
        self.asked.append(request)
        return PermissionPromptResponse(approved=self.approved, scope=PermissionGrantScope.ONCE)


@pytest.mark.parametrize("approved", [True, False])
async def test_a_call_asks_by_default_and_headless_fails_closed(
    tmp_path: Path, approved: bool
) -> None:
    answer = _Answer(approved)
    env = McpEnv(tmp_path, prompts=answer)
    try:
        async with _serving(env, _stdio("time", [time_server()])):
            args = {"timezone": "UTC"}
            headless = await env.registry.call(
                "mcp__time__get_current_time", args, env.ctx(headless=True)
            )
            assert headless.status == "denied"
            assert headless.error is not None
            assert "fails closed" in headless.error.message
            assert answer.asked == []  # headless never asks
            asked = await env.registry.call("mcp__time__get_current_time", args, env.ctx())
            assert [r.tool_name for r in answer.asked] == ["mcp__time__get_current_time"]
            assert "MCP server's tool" in " ".join(answer.asked[0].items)
            assert asked.status == ("ok" if approved else "denied")
    finally:
        env.session.close()


async def test_a_read_only_rule_trusts_the_server_s_hint_and_nothing_else(tmp_path: Path) -> None:
    rules = "rules:\n  - {action: allow, tool: 'mcp__*', category: read_only}\n"
    env = McpEnv(tmp_path, rules=rules)
    try:
        hostile = _stdio("bad", hostile_server())
        async with _serving(env, _stdio("time", [time_server()]), hostile):
            hinted = await env.registry.call(
                "mcp__time__get_current_time", {"timezone": "UTC"}, env.ctx(headless=True)
            )
            assert hinted.status == "ok", hinted.error
            unmarked = await env.registry.call("mcp__bad__echo", {}, env.ctx(headless=True))
            assert unmarked.status == "denied"
    finally:
        env.session.close()


async def test_server_failures_are_tool_errors_never_a_crash(mcp_env: McpEnv) -> None:
    async with _serving(mcp_env, _stdio("bad", hostile_server(), timeout_s=1.0)):
        failed = await mcp_env.registry.call("mcp__bad__fail", {}, mcp_env.ctx())
        assert failed.status == "error"
        assert failed.error is not None
        assert "it went wrong" in failed.error.message
        assert "sk-ant-api03-zzzz" not in failed.error.message  # redacted like any output
        rpc = await mcp_env.registry.call("mcp__bad__rpc_error", {}, mcp_env.ctx())
        assert rpc.status == "error"
        assert rpc.error is not None
        assert "bad arguments" in rpc.error.message
        hung = await mcp_env.registry.call("mcp__bad__hang", {}, mcp_env.ctx())
        assert hung.status == "error"
        assert hung.error is not None
        assert hung.error.kind == "timeout"
        died = await mcp_env.registry.call("mcp__bad__die", {}, mcp_env.ctx())
        assert died.status == "error"
        after = await mcp_env.registry.call("mcp__bad__echo", {}, mcp_env.ctx())
        assert after.status == "error"
    assert len(mcp_env.payloads("tool.failed")) == 5


async def test_a_secret_across_the_cut_of_a_server_s_error_is_redacted_before_the_cut(
    mcp_env: McpEnv,
) -> None:
    """A server's error is cut to ``ERROR_SHOWN`` characters for the model. Cut before it was
    redacted (at 300 characters of the error), a registered value across the cut was no longer
    whole: its first characters reached the model and the session's events."""
    secret = "val-5b8e1f0c37d94a26"
    mcp_env.registry.redactor.register(secret)
    head = "MCP server bad: rpc_error failed: "
    across = (300 - 10, ERROR_SHOWN - len(head) - 10)  # the old cut, of the error; the new one
    async with _serving(mcp_env, _stdio("bad", hostile_server(), timeout_s=5.0)):
        for before in across:
            said = "x" * before + secret + "y" * 400
            rpc = await mcp_env.registry.call(
                "mcp__bad__rpc_error", {"message": said}, mcp_env.ctx()
            )
            assert rpc.status == "error"
            assert rpc.error is not None
            message = rpc.error.message
            assert message.startswith(head + "x" * before)
            assert len(message) <= ERROR_SHOWN
            assert secret[:6] not in message  # redacted whole, then cut
    stored = "".join(str(e.model_dump(mode="json")) for e in mcp_env.session.events.query())
    assert "x" * 300 in stored
    assert secret[:6] not in stored


async def test_a_schema_in_legal_forms_is_checked_and_one_air_cannot_read_is_refused(
    mcp_env: McpEnv,
) -> None:
    """An MCP server chooses its tools' schemas. A boolean subschema (``"anything": true``) or
    draft 4's ``items`` list raised AttributeError in the registry at the first call, as did
    ``"maxLength": "ten"`` (TypeError): no caller took them. Now the legal forms are checked
    and a schema air cannot read is a config error naming the tool when the server starts."""
    async with _serving(mcp_env, _stdio("bad", hostile_server(), timeout_s=5.0)):
        args = {"anything": {"x": [1]}, "pair": ["a", 1]}
        ok = await mcp_env.registry.call("mcp__bad__shapes", args, mcp_env.ctx())
        assert ok.status == "ok", ok.error
        refused = await mcp_env.registry.call("mcp__bad__shapes", {"nothing": 1}, mcp_env.ctx())
        assert refused.status == "error"
        assert refused.error is not None
        assert "input.nothing is not allowed" in refused.error.message

    def naming(exc: AirException) -> bool:
        said = "tool mcp__odd__broken has an input schema air cannot check"
        return exc.kind == "config_error" and said in exc.error.message

    odd = _stdio("odd", [*hostile_server(), "--broken-schema"], timeout_s=5.0)
    with pytest.raises(ExceptionGroup) as group:
        async with _serving(mcp_env, odd):
            pass
    _only_air_error(group.value, naming)


def _only_air_error(group: ExceptionGroup[Exception], check: Callable[[Any], bool]) -> None:
    """``group`` holds one AirException, which ``check`` accepts (``pytest.RaisesGroup`` is
    newer than the pytest this project declares, 8.0)."""
    (only,) = group.exceptions
    assert isinstance(only, AirException), repr(only)
    assert check(only), only.error.message


def _alive_with(tag: str) -> list[str]:
    out = subprocess.run(["ps", "-ww", "-eo", "stat,args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if tag in line and not line.startswith("Z")]


async def test_the_server_tree_dies_with_the_session_even_a_setsid_child(
    mcp_env: McpEnv, tmp_path: Path
) -> None:
    tag = f"{tmp_path}/tag"  # unique to this test: a scan finds only its processes
    hold = "sleep 300; :"  # `; :` keeps the shell (and its tagged command line) alive
    script = (
        f"setsid sh -c '{hold}' {tag}-escaped & sh -c '{hold}' {tag}-child & exec {time_server()}"
    )
    async with _serving(mcp_env, _stdio("time", ["sh", "-c", script])) as running:
        with trio.fail_after(10):
            while len(_alive_with(tag)) < 2:  # noqa: ASYNC110 (another process's state)
                await trio.sleep(0.05)
        assert len(find_marked(running[0].marker)) >= 3  # the server and both children
        ok = await mcp_env.registry.call(
            "mcp__time__get_current_time", {"timezone": "UTC"}, mcp_env.ctx()
        )
        assert ok.status == "ok"
    assert _alive_with(tag) == []
    assert find_marked(running[0].marker) == []


async def test_a_server_that_cannot_start_is_a_config_error_naming_it(mcp_env: McpEnv) -> None:

    def naming(exc: AirException) -> bool:
        return exc.kind == "config_error" and "MCP server gone" in exc.error.message

    broken = _stdio("gone", ["/nonexistent/mcp-server"])
    # one AirException, inside the group of the test's own nursery (open_runtime unwraps it)
    with pytest.raises(ExceptionGroup) as group:
        async with _serving(mcp_env, broken):
            pass
    _only_air_error(group.value, naming)
