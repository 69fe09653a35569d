"""What an MCP server takes from air's environment: its ``env_refs``, ``header_refs`` and
``auth_ref`` (``air.mcp.config``) read when it starts.

Owns ``Credentials`` and ``resolve``. A value is read in the parent only, at the server's start,
never stored in a file air writes; every value is handed to the caller's ``register`` (the run's
SecretRedactor) before the server starts, so a server that echoes it (an error message, a
``printEnv`` tool, its stderr) never puts it in an event, a tool result or an artifact. A
variable that is unset or empty, or a value a header cannot carry, is a ``config_error`` that
names the variable and the field, never the value (IMPL-MCP-5).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple, NoReturn

from air.mcp.config import McpServer

__all__ = ["Credentials", "resolve"]


class Credentials(NamedTuple):
    """The values one server gets, by where they go."""

    env: dict[str, str]
    headers: dict[str, str]


def _value(
    server: McpServer, field: str, ref: str, environ: Mapping[str, str], *, header: bool
) -> str:
    value = environ.get(ref, "")
    problem = None
    if not value:
        problem = f"{ref} is not set in air's environment"
    elif "\x00" in value:
        problem = f"the value of {ref} holds a NUL byte"
    elif header and (any(c in value for c in "\r\n") or not value.isascii()):
        problem = f"the value of {ref} is no header value (a line break or non-ASCII)"
    if problem is None:
        return value
    _refuse(server, field, problem, ref)


def _refuse(server: McpServer, field: str, problem: str, ref: str) -> NoReturn:
    raise server.refusal(
        f"servers.{server.name}.{field}: {problem}",
        f"Set {ref} in the environment you start air from, or remove the field from "
        f"{server.source}.",
        field,
    )


def resolve(
    server: McpServer,
    environ: Mapping[str, str],
    register: Callable[..., None] | None = None,
) -> Credentials:
    """Read ``server``'s referenced variables from ``environ`` and register every value.

    Raises:
        AirException(config_error): a variable is unset or empty, or its value cannot be sent.
    """
    env = {
        k: _value(server, f"env_refs.{k}", ref, environ, header=False) for k, ref in server.env_refs
    }
    headers = {
        k: _value(server, f"header_refs.{k}", ref, environ, header=True)
        for k, ref in server.header_refs
    }
    values = [*env.values(), *headers.values()]
    if server.auth_ref is not None:
        values.append(_value(server, "auth_ref", server.auth_ref, environ, header=True))
        headers["Authorization"] = f"Bearer {values[-1]}"
    if register is not None and values:
        register(*values)
    return Credentials(env=env, headers=headers)
