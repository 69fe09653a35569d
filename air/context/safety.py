"""The L2 safety layer's text: what the PermissionEngine will do, told to the model.

Owns ``safety_text`` (the defaults, the agent's permission template, and a summary of each
``permissions.yaml``) and ``summarise_permission_file`` (the rules of one file as text lines,
format IMPL-SEC-3). The engine decides; this only tells the model what to expect.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from air.context.loader import read_yaml_file
from air.contracts.error import AirException, ErrorKind
from air.contracts.runtime import AgentType

__all__ = ["safety_text", "summarise_permission_file"]


def safety_text(agent_type: AgentType | None, permission_files: Sequence[tuple[str, Path]]) -> str:
    """The safety layer for an agent of ``agent_type``, with each ``(label, path)`` summarised.

    Raises:
        AirException: ``config_error`` for a permission file that is not a rules mapping.
    """
    lines = [
        "Every tool call is checked by the runtime's PermissionEngine; this summary only",
        "tells you what to expect. A denied action stays denied: report it, do not retry",
        "it another way.",
        "Defaults: reads and build/test commands run; version-control changes are announced;",
        "package installs, network, process control, destructive, privileged and",
        "unanalysable commands need approval; writes outside the project, into .git",
        "internals or into .air/ are asked for or denied; credentials and system paths need",
        "an explicit rule. In headless runs an action that needs approval is denied unless",
        "the policy allows asking.",
    ]
    if agent_type is AgentType.REVIEWER:
        lines.append("Your template is reviewer: read-only, nothing that mutates is allowed.")
    elif agent_type is not None:
        template = {
            AgentType.EXECUTOR: "executor",
            AgentType.DEBUGGER: "debugger",
        }.get(agent_type, "system")
        lines.append(f"Your permission template is {template}.")
    for label, path in permission_files:
        lines.append("")
        lines.extend(summarise_permission_file(label, path))
    return "\n".join(lines)


def summarise_permission_file(label: str, path: Path) -> list[str]:
    """Rules of one permissions.yaml as text lines (format: docs IMPL-SEC-3)."""
    if not path.is_file():
        return [f"{label}: no file (defaults apply)."]
    data: Any = read_yaml_file(path, user_action=f"Fix the YAML syntax of {path}.")
    if not isinstance(data, Mapping) or not isinstance(data.get("rules", []), list):
        raise AirException.of(
            kind=ErrorKind.CONFIG_ERROR,
            message=f"{path} must be a mapping with a list under 'rules'",
            user_action=f"Rewrite {path} as 'rules: [{{action: ..., ...}}]'.",
        )
    lines = [f"{label}:"]
    if data.get("headless_allow_ask"):
        lines.append("  headless runs may take actions that need approval (non-sensitive only)")
    rules = data.get("rules") or []
    if not rules:
        lines.append("  no rules")
    for rule in rules:
        if not isinstance(rule, Mapping) or "action" not in rule:
            raise AirException.of(
                kind=ErrorKind.CONFIG_ERROR,
                message=f"{path}: every rule must be a mapping with an 'action'",
                user_action=f"Fix the rule {rule!r} in {path}.",
            )
        parts = [str(rule["action"])]
        for key in ("tool", "path", "command", "category"):
            if rule.get(key) is not None:
                parts.append(f"{key}={rule[key]}")
        if rule.get("sensitive"):
            parts.append("sensitive")
        line = "  - " + " ".join(parts)
        if rule.get("reason"):
            line += f" — {rule['reason']}"
        lines.append(line)
    return lines
