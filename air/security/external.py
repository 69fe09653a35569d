"""The PermissionEngine's judgement of an external tool: one an MCP server serves (IMPL-MCP-2).

Owns ``external_item`` (the tool item of such a call: ``ask_user``, since air cannot see what
the tool does; the server's read-only hint gives the item the ``read_only`` category) and
``not_for_tool`` (whether a policy rule cannot match a tool item: it names a path or a command,
or a category other than the item's, so only a rule that says ``category: read_only`` trusts
the server's hint). Pure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from air.contracts.permission import CommandCategory, PermissionAction
from air.security.items import Item

if TYPE_CHECKING:
    from air.contracts.permission_records import PermissionRequestContext
    from air.security.policy import PolicyRule

__all__ = ["external_item", "not_for_tool"]


def external_item(ctx: PermissionRequestContext) -> Item | None:
    """The tool item of ``ctx`` when its tool is external (it asks); None otherwise."""
    external = ctx.declared.external if ctx.declared is not None else None
    if external is None:
        return None
    hint = external == "read_only_hint"
    said = " (the server says it only reads)" if hint else ""
    whose = "an MCP server's" if ctx.tool_name.startswith("mcp__") else "a capability's"
    return Item(
        "tool",
        ctx.tool_name,
        PermissionAction.ASK_USER,
        "medium",
        f"{ctx.tool_name} is {whose} tool{said}: air cannot see what it does",
        "4-risk",
        category=CommandCategory.READ_ONLY if hint else None,
    )


def not_for_tool(rule: PolicyRule, category: CommandCategory | None) -> bool:
    """True when ``rule`` cannot match a tool item of ``category`` (None for every tool but an
    external one the server marks read-only): it names a path, a command or another category."""
    if rule.path is not None or rule.command is not None:
        return True
    return rule.category is not None and rule.category != category
