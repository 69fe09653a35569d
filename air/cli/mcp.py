"""``air mcp list`` and ``air mcp tools SERVER``: the declared MCP servers and their tools.

Owns the two command bodies (``login`` and ``logout``: ``air.cli.mcp_login``). ``list`` reads
``~/.air/mcp.yaml`` and the project's ``.air/shared/mcp.yaml`` (only once the project is
trusted: ``require_trust``), starts nothing, and says whether an ``oauth`` server is logged
in. ``tools`` starts the one server as a session would (its own process group, the run marker,
stderr to a temporary file), lists its tools with the API names the model gets, the server's
read-only hint and those its ``tools:`` leaves out, and stops its whole tree (then a ``tools:``
naming a tool the server does not list is the ``config_error`` a session would meet).
Everything a server says is shown through ``air.contracts.display.shown``: a hostile name or
description cannot rewrite the terminal.
"""

from __future__ import annotations

import os
from typing import Any

from air.cli.provider import find_project_root
from air.contracts.display import shown
from air.contracts.error import AirException, CliExit, ErrorKind

__all__ = ["run_mcp"]

_DESCRIPTION_SHOWN = 200


def _servers(project: str | None) -> tuple[str | None, list[Any]]:
    from air.mcp.config import load_servers
    from air.session.trust import require_trust

    root = find_project_root(project)
    if root is not None:
        require_trust(root)  # before the project's mcp.yaml is read (IMPL-TRUST-1)
    return root, load_servers(root)


def _logged_in(server: Any) -> str:
    from air.mcp.oauth_store import load_login

    try:
        found = load_login(server.url)
    except OSError as exc:
        return f"its login cannot be read ({shown(str(exc))})"
    if found is None:
        return f"not logged in (`air mcp login {server.name}`)"
    return "logged in (`air mcp logout` forgets it)"


def run_mcp(args: dict[str, Any]) -> int:
    """``air mcp list`` / ``tools`` / ``login`` / ``logout SERVER``.

    Raises:
        AirException: ``untrusted_config``, ``config_error`` (a bad file, a server that cannot
            start), ``not_found`` (no such server).
    """
    root, servers = _servers(args["--project"])
    if args["list"]:
        if not servers:
            print("no MCP servers declared (~/.air/mcp.yaml, .air/shared/mcp.yaml)")
        for server in servers:
            print(f"{server.name}  {server.transport}  {shown(server.describe())}")
            pinned = "" if server.protocol == "auto" else f"  MCP {server.protocol} only"
            print(f"  from {shown(server.source)}  timeout {server.timeout_s:g} s{pinned}")
            if server.tools is not None:
                print(f"  offers only: {shown(', '.join(server.tools))}")
            for where, ref in server.credentials():
                print(f"  its {where}: ${ref} of air's environment")
            if server.oauth:
                print(f"  OAuth: {_logged_in(server)}")
        return CliExit.OK
    name = args["SERVER"]
    server = next((s for s in servers if s.name == name), None)
    if server is None:
        known = ", ".join(s.name for s in servers) or "none are declared"
        raise AirException.of(
            kind=ErrorKind.NOT_FOUND,
            message=f"no MCP server named {shown(name)} ({known})",
            user_action="Pick a server from `air mcp list`.",
            metadata={"field": "SERVER"},
        )
    if args["login"] or args["logout"]:
        from air.cli.mcp_login import run_login, run_logout

        return run_login(server) if args["login"] else run_logout(server)
    import trio

    from air.mcp.bridge import read_only_hint, tool_names
    from air.mcp.connection import redacted
    from air.mcp.service import list_server_tools, offered_tools
    from air.security.redact import SecretRedactor

    redactor = SecretRedactor()  # what it takes from air's environment is never printed
    try:
        tools, protocol = trio.run(
            lambda: list_server_tools(server, cwd=root or os.getcwd(), register=redactor.register)
        )
    except AirException as exc:
        raise redacted(exc, redactor) from None
    by_name = {t.name: t for t in tools}
    names = tool_names(server.name, by_name)
    offered = set(by_name if server.tools is None else server.tools) & set(by_name)
    told = "" if server.tools is None else f", {len(offered)} offered (its `tools:`)"
    print(f"{server.name}: {len(names)} tool(s){told}; MCP {shown(protocol or '?')}")
    for air_name, original in names.items():
        tool = by_name[original]
        hint = "  [read-only hint]" if read_only_hint(tool) else ""
        left = "" if original in offered else "  [not offered]"
        print(f"{air_name}  (the server's name: {shown(original)}){hint}{left}")
        text = " ".join(redactor.redact(tool.description or "").split())
        if len(text) > _DESCRIPTION_SHOWN:
            text = text[:_DESCRIPTION_SHOWN] + "…"
        if text:
            print(f"  {shown(text)}")
    offered_tools(server, tools)  # `tools:` naming a tool it does not list: config_error
    return CliExit.OK
