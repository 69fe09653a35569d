"""The session's MCP servers: started by the parent, their tools registered, their trees killed.

Owns ``start_servers`` (every declared server started at once, each in a task of the runtime's
root nursery, the tools its ``tools:`` offers registered in the ToolRegistry; IMPL-MCP-1),
``RunningServer`` (one server's life: ``serve`` holds the connection until the nursery is
cancelled, then kills every process carrying the server's run marker, shielded and bounded: 0
orphans even when a descendant left the server's process group; a caller's ``Track`` records
the marker durably for the whole life, for a SIGKILLed air's successor), ``offered_tools``
(what ``tools:`` picks) and ``list_server_tools`` (start one server, list its tools, stop it:
``air mcp tools``). An ``oauth`` server starts with its kept login
(``air.mcp.oauth.session_auth``), never a new one. A server that dies during the session
leaves its tools registered: a call then fails as a tool error that says so, never a crash.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, TextIO

import trio

from air.contracts.display import shown
from air.contracts.error import AirException, ErrorKind
from air.contracts.ids import new_id
from air.ipc.procs import kill_tree
from air.mcp.bridge import definition, result_text, tool_names
from air.mcp.config import McpServer
from air.mcp.connection import McpConnection, describe_error, open_connection, redacted
from air.mcp.credentials import resolve
from air.mcp.oauth import session_auth

__all__ = [
    "Register",
    "RunningServer",
    "Track",
    "list_server_tools",
    "log_path",
    "offered_tools",
    "start_servers",
]

log = logging.getLogger(__name__)

Track = Callable[[str], AbstractContextManager[object]]
"""Given a server's marker: held from before its start until its tree is gone."""
Register = Callable[..., None]
"""Given the values a server takes from air's environment (the run's redactor's
``register``), before the server starts."""

KILL_BOUND_S = 8.0
"""How long stopping one server's tree may take (TERM, 3 s grace, KILL, then the check)."""


def log_path(project_root: str, server: str) -> str:
    """Where a stdio server's stderr goes: ``.air/local/mcp/<server>.log`` (appended)."""
    return os.path.join(project_root, ".air", "local", "mcp", f"{server}.log")


class RunningServer:
    """One server of the session, from its start to the end of its process tree."""

    def __init__(
        self,
        server: McpServer,
        *,
        cwd: str,
        marker: str,
        errlog: TextIO,
        close_log: bool = False,
        track: Track | None = None,
        register: Register | None = None,
    ) -> None:
        self.server = server
        self.register = register
        """Given every value the server takes from air's environment, before it starts."""
        self.track = track
        """Held from before the server starts until its tree is gone: the caller's durable
        record of the marker, so the next air reaps the tree of one that was SIGKILLed."""
        self.close_log = close_log
        """Close ``errlog`` when the server is gone (a log file of the session)."""
        self.cwd = cwd
        self.marker = marker
        """The value of air's run marker in the environment of every process of its tree."""
        self.errlog = errlog
        self.connection: McpConnection | None = None
        self.tools: list[Any] = []

    async def serve(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Start the server, list its tools, report ready; hold it until cancelled.

        Raises:
            AirException(config_error): it could not be started, open a session or list its
                tools (before ``task_status.started``; after it, a failure is logged and kept
                as the connection's ``closed`` reason).
        """
        with self.track(self.marker) if self.track is not None else nullcontext():
            await self._serve(task_status)

    async def _serve(self, task_status: Any) -> None:
        started = False
        try:
            credentials = resolve(self.server, os.environ, self.register)
            auth = session_auth(self.server, self.register) if self.server.oauth else None
            async with open_connection(
                self.server,
                cwd=self.cwd,
                marker=self.marker,
                errlog=self.errlog,
                credentials=credentials,
                auth=auth,
            ) as connection:
                self.connection = connection
                self.tools = await connection.list_tools()
                started = True
                task_status.started(self)
                await trio.sleep_forever()
        except AirException:
            if not started:
                raise
            self._lost("its connection failed")
        except Exception as exc:  # the SDK's task groups end with the server's failure
            if not started:
                inner = _one(exc) if isinstance(exc, BaseExceptionGroup) else exc
                if isinstance(inner, AirException):
                    raise inner from None
                raise AirException.of(
                    kind=ErrorKind.CONFIG_ERROR,
                    message=f"MCP server {self.server.name} ({self.server.source}) failed "
                    f"while starting: {describe_error(exc)}",
                    user_action=f"Check the server with `air mcp tools {self.server.name}`.",
                ) from None
            self._lost(describe_error(exc))
        finally:
            # shielded: the tree must die even though the session is being cancelled; bounded
            with trio.move_on_after(KILL_BOUND_S, shield=True):
                await kill_tree(None, marker=self.marker, grace_s=3.0)
            if self.close_log:
                self.errlog.close()

    def _lost(self, reason: str) -> None:
        if self.connection is not None:
            self.connection.closed = reason
        log.warning("MCP server %s stopped: %s", self.server.name, reason)


def _executor(running: RunningServer, original: str) -> Any:
    server = running.server.name

    async def execute(input: dict[str, Any], run: Any) -> str:
        connection = running.connection
        assert connection is not None
        try:
            result = await connection.call(original, dict(input))
            return result_text(
                server, original, result.content, result.structured_content, result.is_error
            )
        except AirException as exc:  # the server's words reach the model: redacted first
            raise redacted(exc, run.redactor) from None

    return execute


def _open_log(project_root: str, server: str) -> TextIO:
    """The server's stderr log, appended to (a local file, opened before the server starts)."""
    return open(log_path(project_root, server), "a", encoding="utf-8")


def _one(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The first ``AirException`` of a group made only of them (a server that failed to
    start); any other group stays what it was."""
    leaves: list[BaseException] = []
    pending: list[BaseException] = [group]
    while pending:
        item = pending.pop(0)
        if isinstance(item, BaseExceptionGroup):
            pending.extend(item.exceptions)
        else:
            leaves.append(item)
    if leaves and all(isinstance(e, AirException) for e in leaves):
        return leaves[0]
    return group


def offered_tools(server: McpServer, tools: Sequence[Any]) -> dict[str, Any]:
    """``{the server's name: tool}`` of the tools ``server``'s ``tools:`` offers (all when it
    lists none), in the server's order.

    Raises:
        AirException(config_error): ``tools:`` names a tool the server does not list.
    """
    by_name = {t.name: t for t in tools}
    if server.tools is None:
        return by_name
    missing = [name for name in server.tools if name not in by_name]
    if missing:
        raise AirException.of(
            kind=ErrorKind.CONFIG_ERROR,
            message=f"{server.source}: servers.{server.name}.tools: the server lists no tool "
            f"named {shown(missing[0])} ({len(by_name)} listed)",
            user_action=f"Name tools from `air mcp tools {server.name}` (the server's names).",
            metadata={"file": server.source, "field": f"servers.{server.name}.tools"},
        )
    wanted = set(server.tools)
    return {name: tool for name, tool in by_name.items() if name in wanted}


def register_tools(registry: Any, running: RunningServer) -> list[str]:
    """Register the tools of ``running`` its ``tools:`` offers in ``registry``; returns their
    air names.

    Raises:
        AirException(config_error): a name is taken already (only another source's tool
            named ``mcp__...`` could), or ``tools:`` names a tool the server does not list.
    """
    taken = {d.name for d in registry.list()}
    by_name = offered_tools(running.server, running.tools)
    names = tool_names(running.server.name, by_name)
    for air_name, original in names.items():
        if air_name in taken:
            raise AirException.of(
                kind=ErrorKind.CONFIG_ERROR,
                message=f"MCP server {running.server.name}: the tool name {air_name} is taken",
                user_action=f"Rename the server {running.server.name} in {running.server.source}.",
            )
        registry.register(
            definition(running.server.name, air_name, by_name[original]),
            _executor(running, original),
        )
    return list(names)


async def start_servers(
    nursery: trio.Nursery,
    registry: Any,
    servers: Sequence[McpServer],
    *,
    project_root: str,
    session_id: str,
    track: Track | None = None,
    register: Register | None = None,
) -> list[RunningServer]:
    """Start every server in ``nursery`` (all at once) and register their tools.

    Each server lives in a task of ``nursery`` until the nursery is cancelled (the session's
    end); its process tree is killed then. Each gets a marker of its own (a resumed session's
    servers never share one with a killed air's, whose trees the next air reaps by it), held
    by ``track`` while it lives. ``register`` is given every value a server takes from air's
    environment before it starts (IMPL-MCP-5).

    Raises:
        AirException(config_error): a server could not be started (the others are stopped
            when the caller's nursery unwinds).
    """
    folder = os.path.dirname(log_path(project_root, "x"))
    os.makedirs(folder, exist_ok=True)
    running = [
        RunningServer(
            server,
            cwd=project_root,
            marker=f"mcp-{new_id(session_id)}-{server.name}",
            errlog=_open_log(project_root, server.name),
            close_log=True,
            track=track,
            register=register,
        )
        for server in servers
    ]

    async def start(each: RunningServer) -> None:
        await nursery.start(each.serve)

    try:
        async with trio.open_nursery() as starting:
            for each in running:
                starting.start_soon(start, each)
    except BaseExceptionGroup as group:
        raise _one(group) from None
    for each in running:
        register_tools(registry, each)
    return running


async def list_server_tools(
    server: McpServer, *, cwd: str, register: Register | None = None
) -> tuple[list[Any], str | None]:
    """Start ``server``, list its tools, stop it (its whole tree): ``air mcp tools``. Returns
    the tools and the MCP revision the session spoke.

    Raises:
        AirException(config_error): it could not be started, open a session or list its tools.
    """
    import tempfile

    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog:
        marker = f"mcp-{new_id('probe')}-{server.name}"
        running = RunningServer(server, cwd=cwd, marker=marker, errlog=errlog, register=register)
        try:
            try:
                async with trio.open_nursery() as nursery:
                    await nursery.start(running.serve)
                    nursery.cancel_scope.cancel(reason="the tools are listed")
            except BaseExceptionGroup as group:
                raise _one(group) from None
        except AirException as exc:
            errlog.seek(0)
            tail = errlog.read()[-600:].strip()
            if not tail:
                raise
            raise AirException(
                exc.error.model_copy(
                    update={"detail": "its stderr ended with: " + shown(tail, keep_lines=False)}
                )
            ) from None
        assert running.connection is not None
        return running.tools, running.connection.protocol
