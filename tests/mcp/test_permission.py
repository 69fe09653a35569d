"""The PermissionEngine on an MCP server's tool: ask by default, headless fails closed, a rule
allows a server's tools, and only a rule naming ``category: read_only`` trusts the server's
read-only hint (IMPL-MCP-2)."""

from __future__ import annotations

import pytest

from air.contracts.permission import PermissionAction
from air.contracts.permission_records import DeclaredPermissions, PermissionRequestContext
from air.contracts.runtime import PermissionTemplate
from air.security.engine import PermissionEngine
from air.security.policy import PermissionPolicy, parse_policy


def _decide(rules: str, external: str, *, headless: bool = False, tool: str = "mcp__t__x") -> str:
    policy = parse_policy(rules, "permissions.yaml") if rules else PermissionPolicy()
    ctx = PermissionRequestContext(
        session_id="ses_1",
        tool_name=tool,
        permission_template=PermissionTemplate.MAIN_DIRECT,
        project_root="/tmp",
        workspace_root="/tmp",
        headless=headless,
        declared=DeclaredPermissions(external=external),
    )
    return PermissionEngine(policy=policy).evaluate_sync(ctx).action.value


@pytest.mark.parametrize("external", ["unmarked", "read_only_hint"])
def test_an_mcp_tool_asks_and_headless_fails_closed(external: str) -> None:
    assert _decide("", external) == PermissionAction.ASK_USER
    assert _decide("", external, headless=True) == PermissionAction.DENY


def test_a_rule_allows_a_server_s_tools_and_no_other_server_s() -> None:
    rules = "rules:\n  - {action: allow, tool: 'mcp__t__*'}\n"
    assert _decide(rules, "unmarked", headless=True) == PermissionAction.ALLOW
    assert _decide(rules, "unmarked", tool="mcp__u__x") == PermissionAction.ASK_USER


def test_only_a_read_only_rule_trusts_the_hint() -> None:
    rules = "rules:\n  - {action: allow, tool: 'mcp__t__*', category: read_only}\n"
    assert _decide(rules, "read_only_hint", headless=True) == PermissionAction.ALLOW
    assert _decide(rules, "unmarked", headless=True) == PermissionAction.DENY


def test_a_deny_rule_wins() -> None:
    rules = "rules:\n  - {action: allow, tool: 'mcp__*'}\n  - {action: deny, tool: 'mcp__t__x'}\n"
    assert _decide(rules, "unmarked") == PermissionAction.DENY
