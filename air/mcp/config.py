"""The MCP server declarations: ``~/.air/mcp.yaml`` and ``<project>/.air/shared/mcp.yaml``.

Owns ``McpServer`` (one declared server) and ``load_servers`` (where: ``air.mcp.files``).
A file::

    servers:
      time:                        # the server's name: [A-Za-z0-9-], 1-20 characters
        command: mcp-server-time   # stdio: the program, started by air (never by a worker)
        args: ["--local-timezone", "UTC"]
        env: {TZ: UTC}             # added to a minimal environment (no credentials of air's)
        env_refs: {GITHUB_TOKEN: GH_PAT}   # its GITHUB_TOKEN: the value of air's $GH_PAT
        timeout_s: 30              # one call's bound (default 60)
        tools: [get_current_time]  # only these of its tools are offered (default: all)
        protocol: auto             # auto (default), legacy or 2026-07-28: IMPL-MCP-4
      docs:
        url: http://127.0.0.1:3001/mcp   # streamable HTTP
        headers: {X-Team: air}
        auth_ref: DOCS_TOKEN       # sent as ``Authorization: Bearer <$DOCS_TOKEN>``
        header_refs: {X-Api-Key: DOCS_KEY}   # a header: the value of air's $DOCS_KEY
      linear:
        url: https://mcp.linear.app/mcp
        oauth: true                # OAuth 2.1: tokens of `air mcp login linear` (air.mcp.oauth)

A server has either ``command`` or ``url``. The project's file is read only once the project is
trusted (``air.session.trust``: it lists what each server would run); a name declared in both
files is refused (a project cannot shadow the user's server). Bad files raise
``AirException(config_error)`` naming the file and the field. The ``*_ref*`` fields name
variables of air's environment, read when the server starts (``air.mcp.credentials``); a file
never holds their values, and a credential goes to an HTTP server only over https or on this
machine (IMPL-MCP-5); so does an ``oauth`` server's token, which replaces any other
``Authorization``.
"""

from __future__ import annotations

import datetime
import re
from typing import Any, Literal, NamedTuple, get_args

import yaml

from air.contracts.display import shown
from air.contracts.error import AirException, ErrorKind
from air.declared import read_declared
from air.mcp.files import mcp_files
from air.yamlload import load

__all__ = ["McpServer", "load_servers", "loopback", "parse_servers", "private_way"]

SERVER_NAME = re.compile(r"^[A-Za-z0-9-]{1,20}$")
"""A server's name: it becomes part of its tools' API names (``mcp__NAME__tool``), so no ``_``
(the separator) and short enough to leave room for the tool's own name."""
_SERVER_KEYS = {
    *("command", "args", "env", "env_refs", "cwd", "url", "headers", "header_refs", "auth_ref"),
    *("timeout_s", "tools", "protocol", "oauth"),
}
_VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
"""A variable's name in ``env`` / ``env_refs`` (either side) and in ``auth_ref``."""
_HEADER = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
"""A header's name (RFC 9110's token)."""

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
    env_refs: tuple[tuple[str, str], ...] = ()
    """(the server's variable, the name of air's variable whose value it gets)."""
    header_refs: tuple[tuple[str, str], ...] = ()
    """(a header, the name of air's variable whose value it carries)."""
    auth_ref: str | None = None
    """The name of air's variable whose value is sent as ``Authorization: Bearer``."""
    timeout_s: float = DEFAULT_TIMEOUT_S
    tools: tuple[str, ...] | None = None
    """The server's names of the tools offered; ``None``: every tool it lists."""
    protocol: Protocol = "auto"
    """Which MCP revisions air speaks with it (``PROTOCOLS``)."""
    oauth: bool = False
    """It authorises with OAuth: the tokens ``air mcp login`` stored for its URL."""

    def describe(self) -> str:
        """What it runs or where it connects, in one line (unescaped: ``shown`` it)."""
        if self.transport == "http":
            return f"connects to {self.url}"
        return "runs " + " ".join([self.command or "", *self.args])

    def refusal(self, problem: str, user_action: str, field: str) -> AirException:
        """A ``config_error`` about this server at its start: ``MCP server NAME (SOURCE):
        problem``, naming ``servers.NAME.<field>`` of its file."""
        return AirException.of(
            kind=ErrorKind.CONFIG_ERROR,
            message=f"MCP server {self.name} ({self.source}): {problem}",
            user_action=user_action,
            metadata={"file": self.source, "field": f"servers.{self.name}.{field}"},
        )

    def credentials(self) -> list[tuple[str, str]]:
        """(where it goes, the name of air's variable) of every value it takes from air's
        environment: ``env GITHUB_TOKEN``, ``header X-Api-Key``, ``bearer token``."""
        out = [(f"env {name}", ref) for name, ref in self.env_refs]
        out += [(f"header {name}", ref) for name, ref in self.header_refs]
        return out + ([("bearer token", self.auth_ref)] if self.auth_ref else [])


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


def _refs(source: str, field: str, raw: dict[str, Any], names: re.Pattern[str]) -> Any:
    """A ``*_refs`` mapping: names (``names``) to names of air's variables."""
    refs = _mapping(source, field, raw.get(field.rsplit(".", 1)[1], {}))
    for key, ref in refs:
        if not names.match(key):
            raise _bad(source, field, f"{shown(key)} is not a name it can set")
        if not _VARIABLE.match(ref):
            raise _bad(source, f"{field}.{key}", "must name a variable of air's environment")
    return refs


def loopback(url: str) -> bool:
    """Whether ``url``'s host is this machine by its address (``localhost``, 127.0.0.0/8,
    ``::1``); a name that only begins like one (``127.example.com``) is not."""
    import ipaddress
    from urllib.parse import urlsplit

    try:
        host = urlsplit(url).hostname or ""
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def private_way(url: str) -> bool:
    """Whether what is sent to ``url`` stays unread on the way: https, or this machine."""
    return url.startswith("https://") or loopback(url)


def _http_refs(source: str, where: str, raw: dict[str, Any], url: str) -> Any:
    """``header_refs`` and ``auth_ref`` of an HTTP server, checked against its ``headers``
    and its URL: a credential never goes over plain HTTP to another machine."""
    refs = _refs(source, f"{where}.header_refs", raw, _HEADER)
    auth = raw.get("auth_ref")
    if auth is not None and (not isinstance(auth, str) or not _VARIABLE.match(auth)):
        raise _bad(source, f"{where}.auth_ref", "must name a variable of air's environment")
    literal = {k.lower() for k in raw.get("headers", {})}
    for key, _ in refs:
        if key.lower() in literal:
            raise _bad(source, f"{where}.header_refs.{key}", "is set in `headers` too")
    named = literal | {k.lower() for k, _ in refs}
    if auth is not None and "authorization" in named:
        raise _bad(source, f"{where}.auth_ref", "and an Authorization header: keep one")
    oauth = raw.get("oauth", False)
    if not isinstance(oauth, bool):
        raise _bad(source, f"{where}.oauth", "must be true or false")
    if oauth and (auth is not None or refs or "authorization" in named):
        # the SDK's client sends every header to the authorization server it discovers too
        why = "and a credential beside it (auth_ref, header_refs, an Authorization header)"
        raise _bad(source, f"{where}.oauth", why)
    if (refs or auth or oauth) and url.startswith("http://") and not loopback(url):
        field = f"{where}.{'oauth' if oauth else 'auth_ref' if auth else 'header_refs'}"
        raise _bad(source, field, "a credential would cross the network unencrypted: use https://")
    return refs, auth, oauth


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
        for key in ("args", "env", "env_refs", "cwd"):
            if key in raw:
                raise _bad(source, f"{where}.{key}", "is for a stdio server (`command`)")
        headers = _mapping(source, f"{where}.headers", raw.get("headers", {}))
        header_refs, auth_ref, oauth = _http_refs(source, where, raw, url)
        return McpServer(
            name=name,
            transport="http",
            source=source,
            url=url,
            headers=headers,
            header_refs=header_refs,
            auth_ref=auth_ref,
            oauth=oauth,
            timeout_s=float(timeout),
            tools=tools,
            protocol=protocol,
        )
    if not isinstance(command, str) or not command.strip():
        raise _bad(source, f"{where}.command", "must be a program name or path")
    for key in ("headers", "header_refs", "auth_ref", "oauth"):
        if key in raw:
            raise _bad(source, f"{where}.{key}", "is for an HTTP server (`url`)")
    cwd = raw.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise _bad(source, f"{where}.cwd", "must be a directory path")
    env = _mapping(source, f"{where}.env", raw.get("env", {}))
    env_refs = _refs(source, f"{where}.env_refs", raw, _VARIABLE)
    for key, _ in env_refs:
        if key in dict(env):
            raise _bad(source, f"{where}.env_refs.{key}", "is set in `env` too")
    return McpServer(
        name=name,
        transport="stdio",
        source=source,
        command=command,
        args=_strings(source, f"{where}.args", raw.get("args", [])),
        env=env,
        env_refs=env_refs,
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
