"""One open MCP session with one server, over the official SDK (``pip install aircoding[mcp]``).

Owns ``open_connection`` (an async context manager: start or reach the server, negotiate the
MCP revision: IMPL-MCP-4) and ``McpConnection`` (``list_tools`` with pagination, ``call``
bounded by the server's ``timeout_s``). The SDK (``mcp``, anyio) runs under Trio (IMPL-MCP-1).
A stdio server is started by ``air.mcp.stdio`` (its messages bounded: IMPL-MCP-3) in a session
of its own with a minimal environment plus the server's ``env`` and air's run marker
(``air.ipc.procs.MARKER_ENV``), so the whole tree can be found and killed even when a
descendant left the group (``air.mcp.service``); its stderr goes to ``errlog``, never to the
terminal. Everything the SDK or the transport raises crosses this edge as an ``AirException``:
``config_error`` when the server cannot be started or no session opens, ``tool_error`` /
``timeout`` for a call; a JSON-RPC error, a dead server and a hung one are values for the
caller, never a crash.
"""

from __future__ import annotations

import math
import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any, Protocol, TextIO

import trio

from air.contracts.display import shown
from air.contracts.error import AirException, ErrorKind, first_air_exception
from air.ipc.procs import MARKER_ENV
from air.mcp.config import McpServer
from air.mcp.credentials import Credentials
from air.mcp.stdio import MAX_MESSAGE_BYTES, StdioLink, open_stdio, over_the_bound

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.types import CallToolResult, Tool

__all__ = [
    "ERROR_SHOWN",
    "McpConnection",
    "Redactor",
    "describe_error",
    "open_connection",
    "redacted",
]

ERROR_SHOWN = 800
"""How many characters of a message holding a server's, the SDK's or the transport's words its
reader sees: cut where it is redacted (``redacted``), never before. Cut first, a secret across
the cut kept its first characters and lost the end by which the redactor knows it."""
_DESCRIBED_MAX = ERROR_SHOWN + 8192
"""What ``describe_error`` keeps of an error's text: a bound, past the cut by more than any
secret's length, so that the redactor still sees one across the cut whole."""


class Redactor(Protocol):
    """The run's redactor (``air.security.redact.SecretRedactor``), as ``redacted`` uses it."""

    def redact(self, text: str) -> str: ...

    def redact_cut(self, text: str, limit: int) -> str: ...


START_TIMEOUT_S = 30.0
"""How long a server may take to start and open a session (``server/discover`` or
``initialize``)."""
_MAX_PAGES = 50
"""tools/list pages read at most (a server that pages forever is cut off); the tools of all
pages together weigh at most ``MAX_MESSAGE_BYTES`` (as JSON), or the server is refused."""


def describe_error(exc: BaseException) -> str:
    """One line for what the SDK or the transport raised (the leaves of a group, joined)."""
    if isinstance(exc, BaseExceptionGroup):
        joined = "; ".join(dict.fromkeys(describe_error(e) for e in exc.exceptions))
        return joined[:_DESCRIBED_MAX]
    text = str(exc).strip() or exc.__class__.__name__
    return shown(text[:_DESCRIBED_MAX])  # bounded; cut when redacted


def redacted(exc: AirException, redactor: Redactor) -> AirException:
    """``exc`` as each reader gets it (the model from a failed call, ``air mcp tools``, a
    session whose server did not start): message redacted, then cut to ``ERROR_SHOWN``; detail
    redacted."""
    error = exc.error
    detail = redactor.redact(error.detail) if error.detail else error.detail
    message = redactor.redact_cut(error.message, ERROR_SHOWN)
    return AirException(error.model_copy(update={"message": message, "detail": detail}))


def _sdk() -> Any:
    try:
        import mcp
    except ImportError:
        raise AirException.of(
            kind=ErrorKind.CONFIG_ERROR,
            message="mcp.yaml declares MCP servers, but the MCP SDK is not installed",
            user_action="Install air's MCP extra: pip install 'aircoding[mcp]'.",
        ) from None
    return mcp


class McpConnection:
    """An initialised session with ``server``: list its tools, call one."""

    def __init__(
        self, server: McpServer, session: ClientSession, link: StdioLink | None = None
    ) -> None:
        self.server = server
        self.session = session
        self.link = link
        """A stdio server's link (``air.mcp.stdio``): why air closed it, if it did."""
        self.closed: str | None = None
        """Why the connection is gone (None while it is open)."""
        self.protocol: str | None = None
        """The MCP revision spoken (``2026-07-28``, or the handshake's: ``2025-11-25`` ...)."""

    async def list_tools(self) -> list[Tool]:
        """Every tool the server offers (all pages).

        Raises:
            AirException(config_error): the server failed to answer within its bound.
        """
        from mcp.types import PaginatedRequestParams

        tools: list[Tool] = []
        cursor: str | None = None
        listed = 0
        try:
            with trio.fail_after(self.server.timeout_s):
                for _ in range(_MAX_PAGES):
                    params = PaginatedRequestParams(cursor=cursor) if cursor else None
                    page = await self.session.list_tools(params=params)
                    listed += sum(len(tool.model_dump_json()) for tool in page.tools)
                    if listed > MAX_MESSAGE_BYTES:
                        raise self._refused(f"lists tools {over_the_bound('all its tools')}")
                    tools.extend(page.tools)
                    cursor = page.next_cursor
                    if not cursor:
                        break
        except AirException:
            raise
        except trio.TooSlowError:
            raise self._refused(
                f"did not list its tools within {self.server.timeout_s:g} s"
            ) from None
        except Exception as exc:  # the SDK's and the transport's errors: translated here
            raise self._refused(f"could not list its tools: {describe_error(exc)}") from None
        return tools

    async def call(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        """Call tool ``name`` (the server's own name) and return its result as it came.

        Raises:
            AirException: ``timeout`` past the server's ``timeout_s``; ``tool_error`` for a
                JSON-RPC error, a dead server or a transport failure.
        """
        if self.closed is not None:
            raise AirException.of(
                kind=ErrorKind.TOOL_ERROR,
                message=f"MCP server {self.server.name} is not running: {self.closed}",
                user_action=f"Check the server {self.server.name} (air mcp tools "
                f"{self.server.name}); a new session starts it again.",
            )
        bound = self.server.timeout_s
        try:
            with trio.fail_after(bound):
                return await self.session.call_tool(name, arguments)
        except trio.TooSlowError:
            raise AirException.of(
                kind=ErrorKind.TIMEOUT,
                message=f"MCP server {self.server.name}: {name} did not answer within {bound:g} s",
                user_action=f"Try again, or raise timeout_s of {self.server.name} in "
                f"{self.server.source}.",
            ) from None
        except Exception as exc:  # JSON-RPC errors, a closed stream, HTTP failures
            why = self.link.problem if self.link is not None else None
            raise AirException.of(
                kind=ErrorKind.TOOL_ERROR,
                message=f"MCP server {self.server.name}: {name} failed: "
                f"{why or describe_error(exc)}",
                user_action="Check the arguments against the tool's schema, or the server.",
            ) from None

    def _refused(self, what: str) -> AirException:
        return AirException.of(
            kind=ErrorKind.CONFIG_ERROR,
            message=f"MCP server {self.server.name} ({self.server.source}) {what}",
            user_action=f"Check the server {self.server.name} (`air mcp tools "
            f"{self.server.name}`), or remove it from {self.server.source}.",
        )


def _try(server: McpServer) -> str:
    return f"`air mcp tools {server.name}` starts it alone"


def _environment(server: McpServer, marker: str, taken: dict[str, str]) -> dict[str, str]:
    """The server's environment on top of the SDK's minimal one (HOME, PATH, USER, ...):
    its declared variables, those it takes from air's (``env_refs``) and air's run marker,
    which every descendant inherits."""
    env = dict(server.env) | taken
    env[MARKER_ENV] = marker
    return env


@asynccontextmanager
async def _streams(link: StdioLink) -> AsyncIterator[tuple[Any, Any]]:
    """A stdio link as the SDK's ``Transport`` (its streams; the link is closed by its owner)."""
    yield link.read, link.write


@asynccontextmanager
async def open_connection(
    server: McpServer,
    *,
    cwd: str,
    marker: str,
    errlog: TextIO,
    credentials: Credentials | None = None,
    auth: Any = None,
    start_s: float | None = None,
) -> AsyncIterator[McpConnection]:
    """Start (stdio) or reach (HTTP) ``server`` and open an MCP session with it.

    The SDK's ``Client`` negotiates the revision (IMPL-MCP-4): with ``protocol: auto`` it asks
    ``server/discover`` at 2026-07-28 and falls back to the ``initialize`` handshake when the
    server answers as one of the handshake era does; ``legacy`` and ``2026-07-28`` speak only
    that. Nothing is cached between calls (``cache=None``), and a tool call that asks for input
    (2026-07-28's ``input_required``) is a tool error: air answers no server's requests.

    Args:
        server: the declaration.
        cwd: where a stdio server runs unless it declares ``cwd`` (relative to this).
        marker: the value of air's run marker in a stdio server's environment.
        errlog: where a stdio server's stderr goes (a real file).
        credentials: what it takes from air's environment (``air.mcp.credentials.resolve``).
        auth: an HTTP server's ``httpx2.Auth`` (``air.mcp.oauth``): what it raises as an
            ``AirException`` crosses as it is.
        start_s: how long it may take to open a session (a login waits for a person;
            default ``START_TIMEOUT_S``).

    Raises:
        AirException(config_error): the SDK is missing, or the server cannot be started or did
            not open a session within ``start_s``.
    """
    mcp = _sdk()
    taken = credentials or Credentials(env={}, headers={})
    connection: McpConnection | None = None
    # the SDK's contexts open task groups of their own: the start's bound is a scope around
    # them all, lifted once the session is open
    bound = START_TIMEOUT_S if start_s is None else start_s
    with trio.CancelScope(deadline=trio.current_time() + bound) as starting:
        async with AsyncExitStack() as stack:
            link: StdioLink | None = None
            try:
                transport: Any
                if server.transport == "stdio":
                    assert server.command is not None
                    link = await stack.enter_async_context(
                        open_stdio(
                            server.command,
                            server.args,
                            env=_environment(server, marker, taken.env),
                            cwd=os.path.join(cwd, server.cwd) if server.cwd else cwd,
                            errlog=errlog,
                        )
                    )
                    transport = _streams(link)
                else:
                    import httpx2
                    from mcp.client.streamable_http import streamable_http_client

                    from air.mcp.http_bound import BoundedTransport

                    client = await stack.enter_async_context(
                        httpx2.AsyncClient(
                            headers=dict(server.headers) | taken.headers,
                            timeout=httpx2.Timeout(30.0, read=server.timeout_s + 5.0),
                            transport=BoundedTransport(server),
                            auth=auth,
                        )
                    )
                    assert server.url is not None
                    transport = streamable_http_client(server.url, http_client=client)
                opened = await stack.enter_async_context(
                    mcp.Client(transport, mode=server.protocol, cache=None)
                )
                connection = McpConnection(server, opened.session, link)
                connection.protocol = opened.protocol_version
            except Exception as exc:  # spawn failures, HTTP errors, JSON-RPC errors, groups
                own = first_air_exception(exc)  # what air's auth refused, said its own way
                if own is not None:
                    raise own from None
                why = link.problem if link is not None and link.problem else describe_error(exc)
                raise AirException.of(
                    kind=ErrorKind.CONFIG_ERROR,
                    message=f"MCP server {server.name} ({server.source}) could not be started: "
                    f"{why} ({shown(server.describe())})",
                    user_action=f"Check the server ({_try(server)}), or remove it from "
                    f"{server.source}.",
                ) from None
            starting.deadline = math.inf
            try:
                yield connection
            finally:
                connection.closed = "the session ended"
    if starting.cancelled_caught:
        raise AirException.of(
            kind=ErrorKind.CONFIG_ERROR,
            message=f"MCP server {server.name} ({server.source}) did not start and "
            f"open a session within {bound:g} s ({shown(server.describe())})",
            user_action=f"Check the server ({_try(server)}), or remove it from {server.source}.",
        )
