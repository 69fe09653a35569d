"""What a project's ``.air/shared/mcp.yaml`` widens, for ``air trust`` (``air.session.trust``).

Owns ``mcp_widenings``: (field, what it would do) of every server of the parsed file: a stdio
server is a command the parent runs (with its ``env``), an HTTP one a URL that tool calls (and
``headers``) are sent to (IMPL-MCP-1); each variable a server would take from the user's
environment and where it would go (IMPL-MCP-5), and an ``oauth`` server's login: the user's
token sent to its URL. Standard library only.
"""

from __future__ import annotations

from typing import Any

__all__ = ["mcp_widenings"]


def mcp_widenings(raw: Any) -> list[tuple[str, str]]:
    """Every server widens: a stdio server is a command the parent runs (with its ``env``), an
    HTTP one a URL that tool calls (and ``headers``) are sent to (IMPL-MCP-1)."""
    servers = raw.get("servers") if isinstance(raw, dict) else None
    if not isinstance(servers, dict):
        return []
    out: list[tuple[str, str]] = []
    for name, entry in servers.items():
        where = f"servers.{name}"
        if not isinstance(entry, dict):
            out.append((where, "declares an MCP server"))
            continue
        if entry.get("command") is not None:
            argv = [str(entry["command"])]
            args = entry.get("args")
            argv += [str(a) for a in args] if isinstance(args, list) else []
            out.append((f"{where}.command", "would run " + " ".join(argv)))
        if entry.get("url") is not None:
            out.append((f"{where}.url", f"would send tool calls to {entry['url']}"))
        for key in ("env", "headers"):
            if isinstance(entry.get(key), dict) and entry[key]:
                named = ", ".join(str(k) for k in entry[key])
                out.append((f"{where}.{key}", f"sets {named}"))
        out += _credentials(where, entry)
        if entry.get("command") is None and entry.get("url") is None:
            out.append((where, "declares an MCP server"))
    return out


def _credentials(where: str, entry: dict[str, Any]) -> list[tuple[str, str]]:
    """What a server would take from the user's environment, and where it would go
    (IMPL-MCP-5): the finding names the variable, so `air trust` shows whose key leaves."""
    target = f"to {entry['url']}" if entry.get("url") is not None else "to the program"
    out: list[tuple[str, str]] = []
    for key, how in (("env_refs", "as its variable"), ("header_refs", "as the header")):
        refs = entry.get(key)
        if isinstance(refs, dict):
            for name, ref in refs.items():
                what = f"would give ${ref} of your environment {target} {how} {name}"
                out.append((f"{where}.{key}.{name}", what))
    if entry.get("auth_ref") is not None:
        what = f"would send ${entry['auth_ref']} of your environment {target} as a bearer token"
        out.append((f"{where}.auth_ref", what))
    if entry.get("oauth"):
        what = f"would have you log in with OAuth {target} and send your token there"
        out.append((f"{where}.oauth", what))
    return out
