"""What an MCP server sends is read once and bounded (IMPL-MCP-3). Over stdio, one that never
ends its answer, or answers over 32 MiB, has the connection closed at once with that reason, its
process ended, and every later call says why; an answer under the bound arrives whole. Over
HTTP, such an answer ends as the call's error and the next call is served. A real session's
ToolRegistry and PermissionEngine, the real SDK's ClientSession, ``air.testing.mcp_hostile`` as
the server (before the bound, ``flood`` kept the parent's loop busy joining one line for the
call's whole timeout, and a 30 MiB answer never arrived)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from air.contracts.error import AirException
from air.mcp.config import McpServer
from air.mcp.service import RunningServer, list_server_tools
from air.mcp.stdio import MAX_MESSAGE_BYTES
from tests.mcp.conftest import McpEnv
from tests.mcp.servers import hostile_http, hostile_server
from tests.mcp.test_servers import _Answer, _serving, _stdio
from tests.workers.conftest import alive

BOUND = f"sent a message over {MAX_MESSAGE_BYTES // (1024 * 1024)} MiB"


@asynccontextmanager
async def _flooding(tmp_path: Path) -> AsyncIterator[tuple[McpEnv, RunningServer]]:
    env = McpEnv(tmp_path, prompts=_Answer(True))
    try:
        # a timeout far past the test's own: only the bound can end these calls in time
        server = _stdio("bad", [*hostile_server(), "--floods"], timeout_s=600.0)
        async with _serving(env, server) as [running]:
            yield env, running
    finally:
        env.session.close()


def _server_pid(running: RunningServer) -> int:
    assert running.connection is not None
    link = running.connection.link
    assert link is not None
    return link.pid


async def test_an_answer_that_never_ends_closes_the_connection_with_its_reason(
    tmp_path: Path,
) -> None:
    async with _flooding(tmp_path) as (env, running):
        pid = _server_pid(running)
        with trio.fail_after(60):
            flood = await env.registry.call("mcp__bad__flood", {}, env.ctx())
        assert flood.status == "error"
        assert flood.error is not None
        assert flood.error.kind == "tool_error"
        assert BOUND in flood.error.message
        with trio.fail_after(10):
            while alive(pid):  # noqa: ASYNC110 (a process of another session: no pidfd here)
                await trio.sleep(0.05)
        with trio.fail_after(60):
            after = await env.registry.call("mcp__bad__echo", {}, env.ctx())
        assert after.status == "error"
        assert after.error is not None
        assert BOUND in after.error.message  # later calls say why, at once


async def test_an_answer_over_the_bound_is_refused_and_one_under_it_arrives_whole(
    tmp_path: Path,
) -> None:
    async with _flooding(tmp_path) as (env, _):
        with trio.fail_after(60):
            whole = await env.registry.call("mcp__bad__huge", {"mib": 30}, env.ctx())
        assert whole.status == "ok", whole.error
        assert isinstance(whole.output, str)  # the bridge's own cap says what it cut
        assert whole.output.endswith(" more characters cut)")
        kept, cut = whole.output.split("\n… (")
        assert len(kept) + int(cut.split()[0]) == 30 * 1024 * 1024
        with trio.fail_after(60):
            over = await env.registry.call("mcp__bad__huge", {"mib": 40}, env.ctx())
        assert over.status == "error"
        assert over.error is not None
        assert BOUND in over.error.message


async def test_an_http_server_s_answer_is_bounded_as_it_arrives(tmp_path: Path) -> None:
    # plain JSON answers, which the SDK's client reads whole: over the bound, or without end
    env = McpEnv(tmp_path, prompts=_Answer(True))
    try:
        with hostile_http() as url:
            server = McpServer(
                name="web", transport="http", source="mcp.yaml", url=url, timeout_s=600.0
            )
            async with _serving(env, server):
                with trio.fail_after(60):
                    whole = await env.registry.call("mcp__web__huge", {"mib": 30}, env.ctx())
                assert whole.status == "ok", whole.error
                for name in ("huge", "flood"):
                    with trio.fail_after(60):
                        over = await env.registry.call(f"mcp__web__{name}", {}, env.ctx())
                    assert over.status == "error", name
                    assert over.error is not None
                    assert "its answer is over 32 MiB" in over.error.message, over.error.message
                with trio.fail_after(60):
                    after = await env.registry.call("mcp__web__echo", {"a": 1}, env.ctx())
                assert after.status == "ok", after.error  # one answer's end, not the server's
    finally:
        env.session.close()


async def test_a_server_that_floods_before_it_is_ready_is_refused_with_the_reason(
    tmp_path: Path,
) -> None:
    # `air mcp tools NAME`'s path: the start itself says why
    flood = "import sys\nwhile True: sys.stdout.write('x' * 1048576)"
    server = _stdio("flooder", [sys.executable, "-c", flood])
    with trio.fail_after(60), pytest.raises(AirException) as refused:
        await list_server_tools(server, cwd=str(tmp_path))
    assert refused.value.error.kind == "config_error"
    assert f"could not be started: {BOUND}" in refused.value.error.message


@pytest.mark.slow  # reads 40 MiB of tool list
async def test_a_tool_list_over_the_bound_in_all_its_pages_is_refused(tmp_path: Path) -> None:
    # each page under the message bound, the pages together over it: before, 50 pages were
    # kept (400 MiB of tools, the parent at 533 MB), now the listing stops past 32 MiB
    server = _stdio("pager", [*hostile_server(), "--pages"])
    with trio.fail_after(120), pytest.raises(AirException) as refused:
        await list_server_tools(server, cwd=str(tmp_path))
    assert refused.value.error.kind == "config_error"
    assert "lists tools over 32 MiB (air's bound for all its tools)" in (
        refused.value.error.message
    )
