"""Layer 2 of the permission decision (SDD §9.2): the profile's policy rules over one item.

Owns ``apply_rules``: the rules of ``~/.air`` and ``.air/shared`` that match an item (tool,
path, command segment, category) change its action. Deny wins; an ``ask`` rule only makes an
item stricter; an allow never lifts a scope result (block, scope deny), a refusal or a
symlinked path, a template denial or a sensitive item unless it is a specific
``sensitive: true`` rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from air.contracts.permission import PermissionAction
from air.security.external import not_for_tool
from air.security.items import Item, worse
from air.security.policy import (
    PermissionPolicy,
    PolicyRule,
    rule_matches_command,
    rule_matches_path,
    rule_matches_tool,
)

if TYPE_CHECKING:  # built at the first permission check (IMPL-BOOT-12)
    from air.contracts.permission_records import PermissionRequestContext

__all__ = ["apply_rules"]

A = PermissionAction


def apply_rules(
    policy: PermissionPolicy,
    ctx: PermissionRequestContext,
    item: Item,
    project: str,
    home: str,
) -> None:
    """Apply the matching rules of ``policy`` to ``item`` in place (its action, layer, reason)."""
    if item.action in (A.REFUSE, A.BLOCK) or (item.action == A.DENY and item.layer == "3-scope"):
        return
    if item.path is not None and item.path.via_link:
        return
    matched: list[PolicyRule] = []
    for rule in policy.rules:
        if not rule_matches_tool(rule, ctx.tool_name):
            continue
        if item.kind in ("write", "read"):
            if rule.command is not None or rule.category is not None:
                continue
            # a path item's key is its resolved path when there is one (the engine's _write_item)
            if not rule_matches_path(rule, item.key, project, home):
                continue
        elif item.kind == "command":
            if rule.path is not None:
                continue
            if not rule_matches_command(rule, item.key, item.category):
                continue
        elif not_for_tool(rule, item.category):  # a category only for an MCP tool's hint
            continue
        matched.append(rule)
    if not matched:
        return
    deny = next((r for r in matched if r.action == "deny"), None)
    if deny is not None:
        item.action, item.layer = A.DENY, "2-profile"
        item.reason = f"{item.reason}; denied by a rule in {deny.source}" + (
            f" ({deny.reason})" if deny.reason else ""
        )
        return
    ask = next((r for r in matched if r.action == "ask"), None)
    if ask is not None:
        if worse(A.ASK_USER, item.action):
            item.action, item.layer = A.ASK_USER, "2-profile"
            item.reason = f"{item.reason}; a rule in {ask.source} asks"
        return
    allow = matched[0]
    if item.action == A.DENY:
        # Template denials (reviewer, .air) are not lifted by a broad allow.
        if not (allow.sensitive and allow.is_specific):
            return
    if item.sensitive and not (allow.sensitive and allow.is_specific):
        item.reason = f"{item.reason}; a broad allow does not cover credentials or system paths"
        return
    item.action, item.layer = A.ALLOW, "2-profile"
    item.reason = f"{item.reason}; allowed by a rule in {allow.source}"
