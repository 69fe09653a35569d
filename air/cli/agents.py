"""``air agents list`` and ``air agents show NAME``: the named agent files (IMPL-AGENTFILE-1).

Owns the command: the files ``air.session.agent_files`` finds, the project's before the
user's, with the ones skipped (links, over 64 KiB, bad frontmatter) as warnings on stderr.
``show`` prints one file's fields and persona, every hidden character escaped (IMPL-UI-7), and
says when the project is not trusted (its files are then refused to tasks until ``air trust``).
"""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["run_agents"]


def _root(path: str | None) -> str:
    if path is not None:
        return os.path.abspath(path)
    from air.session.project import ProjectStore

    project = ProjectStore().locate(os.getcwd())
    return project.project_root if project is not None else os.getcwd()


def run_agents(args: dict[str, Any]) -> int:
    """``air agents list|show NAME``. Returns 0, or 2 for an unknown NAME (``not_found``).

    Raises:
        AirException: ``not_found`` / ``validation_error`` for ``show`` (exit 2 at the CLI).
    """
    from air.contracts.display import shown
    from air.session.agent_files import find_agent, scan_agents

    root = _root(args.get("--project"))
    if args.get("show"):
        agent, skipped = find_agent(str(args["NAME"]), root, use=False)
        for line in skipped:
            print(f"air: warning: {shown(line)}", file=sys.stderr)
        front = agent.front
        print(f"{agent.name} ({agent.source}: {shown(agent.path)})")
        for key, value in front.model_dump(exclude_none=True).items():
            text = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
            print(f"  {key}: {shown(text)}")
        if agent.source == "project" and not _trusted(root):
            print("  (the project is not trusted: tasks cannot use it until `air trust`)")
        print("")
        print(shown(agent.persona, keep_lines=True) if agent.persona else "(no persona)")
        return 0
    catalog = scan_agents(root)
    for line in catalog.warnings:
        print(f"air: warning: {shown(line)}", file=sys.stderr)
    if not catalog.agents:
        print("no agent files (add .air/agents/NAME.md or ~/.air/agents/NAME.md)")
    for name, agent in sorted(catalog.agents.items()):
        role = agent.front.role.value if agent.front.role is not None else "-"
        about = agent.front.description or ""
        print(f"{name:<24} {agent.source:<8} {role:<10} {shown(about)}".rstrip())
    return 0


def _trusted(root: str) -> bool:
    from air.contracts.error import AirException
    from air.session.trust import trust_scan, trusted

    try:
        return trusted(trust_scan(root))
    except AirException:
        return False
