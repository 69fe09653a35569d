"""The MCP server declarations: ``~/.air/mcp.yaml`` and ``<project>/.air/shared/mcp.yaml``.

Owns ``McpServer`` (one declared server) and ``load_servers`` (where: ``air.mcp.files``).
A file::

    servers:
      time:                        # the server's name: [A-Za-z0-9-], 1-20 characters
        command: mcp-server-time   # stdio: the program, started by air (never by a worker)
        args: ["--local-timezone", "UTC"]
        env: {TZ: UTC}             # added to a minimal environment (no credentials of air's)
        timeout_s: 30              # one call's bound (default 60)
        tools: [get_current_time]  # only these of its tools are offered (default: all)
        protocol: auto             # auto (default), legacy or 2026-07-28: IMPL-MCP-4
      docs:
        url: http://127.0.0.1:3001/mcp   # streamable HTTP
        headers: {X-Team: air}

A server has either ``command`` or ``url``. The project's file is read only once the project is
trusted (``air.session.trust``: it lists what each server would run); a name declared in both
files is refused (a project cannot shadow the user's server). Bad files raise
``AirException(config_error)`` naming the file and the field.
"""

from __future__ import annotations

import datetime
import re
from typing import Any, Literal, NamedTuple, get_args

import yaml

from air.contracts.error import AirException, ErrorKind
from air.declared import read_declared
from air.mcp.files import mcp_files
from air.yamlload import load

__all__ = ["McpServer", "load_servers", "parse_servers"]

SERVER_NAME = re.compile(r"^[A-Za-z0-9-]{1,20}$")
"""A server's name: it becomes part of its tools' API names (``mcp__NAME__tool``), so no ``_``
(the separator) and short enough to leave room for the tool's own name."""
_SERVER_KEYS = {"command", "args", "env", "cwd", "url", "headers", "timeout_s", "tools", "protocol"}
DEFAULT_TIMEOUT_S = 60.0
Protocol = Literal["auto", "legacy", "2026-07-28"]
"""How air opens a session with a server (IMPL-MCP-4): ``auto`` asks ``server/discover`` at the
current revision and falls back to the ``initialize`` handshake of 2025-11-25 and earlier when
the server does not speak it; ``legacy`` only the handshake; ``2026-07-28`` only the current
revision."""
PROTOCOLS: tuple[Protocol, ...] = get_args(Protocol)


class McpServer(NamedTuple):
    """One declared server."""

    name: str
    transport: Literal["stdio", "http"]
    source: str
    """The file that declares it."""
    command: str | None = None
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    timeout_s: float = DEFAULT_TIMEOUT_S
    tools: tuple[str, ...] | None = None
    """The server's names of the tools offered; ``None``: every tool it lists."""
    protocol: Protocol = "auto"
    """Which MCP revisions air speaks with it (``PROTOCOLS``)."""

    def describe(self) -> str:
        """What it runs or where it connects, in one line (unescaped: ``shown`` it)."""
        if self.transport == "http":
            return f"connects to {self.url}"
        return "runs " + " ".join([self.command or "", *self.args])


def _bad(source: str, field: str, message: str) -> AirException:
    return AirException.of(
        kind=ErrorKind.CONFIG_ERROR,
        message=f"{source}: {field}: {message}",
        user_action=f"Fix {source} (the format is in the README, section MCP servers) and retry.",
        metadata={"file": source, "field": field},
    )


def _strings(source: str, field: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _bad(source, field, "must be a list of strings")
    return tuple(value)


def _mapping(source: str, field: str, value: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise _bad(source, field, "must map names to strings")
    return tuple(sorted(value.items()))


def _server(source: str, name: Any, raw: Any) -> McpServer:
    where = f"servers.{name}"
    if not isinstance(name, str) or not SERVER_NAME.match(name):
        raise _bad(source, where, "a server's name is 1-20 letters, digits or '-'")
    if not isinstance(raw, dict):
        raise _bad(source, where, "must be a mapping with `command` or `url`")
    unknown = set(raw) - _SERVER_KEYS
    if unknown:
        raise _bad(source, where, f"unknown keys {sorted(unknown)}")
    command, url = raw.get("command"), raw.get("url")
    if (command is None) == (url is None):
        raise _bad(source, where, "needs exactly one of `command` (stdio) or `url` (HTTP)")
    timeout = raw.get("timeout_s", DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise _bad(source, f"{where}.timeout_s", "must be a positive number of seconds")
    tools = None
    if "tools" in raw:
        tools = _strings(source, f"{where}.tools", raw["tools"])
        if not tools:
            raise _bad(source, f"{where}.tools", "lists no tool (leave it out to offer them all)")
    protocol = raw.get("protocol", "auto")
    if isinstance(protocol, datetime.date):  # YAML reads an unquoted 2026-07-28 as a date
        protocol = protocol.isoformat()
    if protocol not in PROTOCOLS:
        raise _bad(source, f"{where}.protocol", f"must be one of {', '.join(PROTOCOLS)}")
    if url is not None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise _bad(source, f"{where}.url", "must be an http:// or https:// URL")
        for key in ("args", "env", "cwd"):
            if key in raw:
                raise _bad(source, f"{where}.{key}", "is for a stdio server (`command`)")
        return McpServer(
            name=name,
            transport="http",
            source=source,
            url=url,
            headers=_mapping(source, f"{where}.headers", raw.get("headers", {})),
            timeout_s=float(timeout),
            tools=tools,
            protocol=protocol,
        )
    if not isinstance(command, str) or not command.strip():
        raise _bad(source, f"{where}.command", "must be a program name or path")
    if "headers" in raw:
        raise _bad(source, f"{where}.headers", "is for an HTTP server (`url`)")
    cwd = raw.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise _bad(source, f"{where}.cwd", "must be a directory path")
    return McpServer(
        name=name,
        transport="stdio",
        source=source,
        command=command,
        args=_strings(source, f"{where}.args", raw.get("args", [])),
        env=_mapping(source, f"{where}.env", raw.get("env", {})),
        cwd=cwd,
        timeout_s=float(timeout),
        tools=tools,
        protocol=protocol,
    )


def parse_servers(text: str, source: str) -> list[McpServer]:
    """The servers one file declares (an empty file declares none).

    Raises:
        AirException(config_error): not YAML, or a server that is not valid.
    """
    try:
        data = load(text, name=source)
    except (yaml.YAMLError, ValueError) as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "file"
        raise _bad(source, where, "not valid YAML") from None
    except RecursionError:
        raise _bad(source, "file", "not valid YAML (nested too deeply)") from None
    if data is None:
        return []
    if not isinstance(data, dict) or set(data) - {"servers", "version"}:
        raise _bad(source, "file", "the top level must be a mapping with a `servers` mapping")
    servers = data.get("servers") or {}
    if not isinstance(servers, dict):
        raise _bad(source, "servers", "must map server names to servers")
    return [_server(source, name, raw) for name, raw in servers.items()]


def load_servers(project_root: str | None, home: str | None = None) -> list[McpServer]:
    """Every declared server, the user's first (missing files declare none).

    The caller has checked the project's trust (``require_trust``) before it passes a project.

    Raises:
        AirException(config_error): a bad file, or a name declared twice.
    """
    return read_declared(mcp_files(project_root, home), parse_servers, _bad, "servers")
