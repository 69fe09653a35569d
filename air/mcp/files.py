"""Where the MCP server declarations live: ``mcp_files`` (standard library only, so a run with
neither file loads no MCP code before its first request, IMPL-BOOT-16)."""

from __future__ import annotations

import os

__all__ = ["mcp_files"]


def mcp_files(project_root: str | None, home: str | None = None) -> list[str]:
    """The files air reads, the user's first."""
    files = [os.path.join(home or os.path.expanduser("~"), ".air", "mcp.yaml")]
    if project_root:
        files.append(os.path.join(project_root, ".air", "shared", "mcp.yaml"))
    return files
