"""The doctor's MCP checks: one per declared server, ``mcp.NAME``, whether its start would find
what it takes from the user, without starting it.

Owns ``mcp_checks``: the servers of ``~/.air/mcp.yaml`` and the trusted project's (the ``config``
check reports a file that does not load, and an untrusted project's servers are not read); a
server's check fails as its start would: a variable its ``env_refs``, ``auth_ref`` or
``header_refs`` names is unset or cannot be sent (``air.mcp.credentials.resolve``, with nothing
registered and no value in the report), or an ``oauth`` server has no login kept for its URL
(run ``air mcp login NAME``), each checked by what the start calls. Found: the start names
each of these (exit 2), but ``air doctor``, where a user looks first, said nothing of MCP
servers.
"""

from __future__ import annotations

import os
from functools import partial
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from air.mcp.config import McpServer

__all__ = ["mcp_checks"]


def _ready(server: McpServer) -> str:
    """What the server takes from the user, all at hand.

    Raises:
        AirException(config_error): what its start would refuse.
    """
    from air.mcp.credentials import resolve

    resolve(server, os.environ)
    taken = [f"${ref} as its {where}" for where, ref in server.credentials()]
    if server.oauth:
        from air.mcp.oauth import session_auth

        session_auth(server, None)  # no login kept, or a damaged one: as the start refuses it
        taken.append("an OAuth login")
    return f"{server.describe()}: " + (", ".join(taken) if taken else "takes nothing of yours")


def mcp_checks(project_root: str | None) -> list[Any]:
    """A ``ProbeCheck`` per declared server (none when no file declares one or a file does not
    load: the ``config`` check says why)."""
    from air.contracts.error import AirException
    from air.doctor.checks import ProbeCheck
    from air.mcp.files import mcp_files

    if not any(os.path.lexists(path) for path in mcp_files(project_root)):
        return []
    from air.mcp.config import load_servers
    from air.session.trust import trust_scan, trusted

    try:
        root = project_root if project_root and trusted(trust_scan(project_root)) else None
        servers = load_servers(root)
    except AirException:
        return []
    return [ProbeCheck(f"mcp.{s.name}", partial(_ready, s), severity="warning") for s in servers]
