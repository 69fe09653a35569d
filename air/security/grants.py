"""The grant book: the person's approvals a permission decision remembers (SDD §9.2 layer 6).

Owns ``GrantBook``: approvals stored per item (kind and key: one path, one command segment)
and per scope (task, session, project), so approving one segment of a compound command never
approves another; ``scope_key`` says where a grant of a given scope is kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from air.contracts.permission import PermissionGrantScope
from air.security.items import Item
from air.security.paths import resolve_root

if TYPE_CHECKING:  # built at the first permission check (IMPL-BOOT-12)
    from air.contracts.permission_records import PermissionRequestContext

__all__ = ["GrantBook", "scope_key"]


class GrantBook:
    """The items approved so far, by scope (memory only: grants last as long as the engine)."""

    def __init__(self) -> None:
        self._grants: set[tuple[str, str, str]] = set()

    @staticmethod
    def _scope_keys(ctx: PermissionRequestContext) -> list[str]:
        keys = [f"session:{ctx.session_id}", f"project:{resolve_root(ctx.project_root)}"]
        if ctx.task_id:
            keys.append(f"task:{ctx.task_id}")
        return keys

    def granted(self, ctx: PermissionRequestContext, item: Item) -> bool:
        """True when ``item`` was approved for the task, the session or the project of ``ctx``."""
        return any((scope, item.kind, item.key) in self._grants for scope in self._scope_keys(ctx))

    def add(self, key: str, item: Item) -> None:
        """Remember the approval of ``item`` under the scope key ``key``."""
        self._grants.add((key, item.kind, item.key))


def scope_key(ctx: PermissionRequestContext, scope: PermissionGrantScope) -> str:
    """Where a grant of ``scope`` for ``ctx`` is kept (a task grant without a task: the session)."""
    if scope == PermissionGrantScope.TASK:
        if not ctx.task_id:
            return f"session:{ctx.session_id}"
        return f"task:{ctx.task_id}"
    if scope == PermissionGrantScope.SESSION:
        return f"session:{ctx.session_id}"
    return f"project:{resolve_root(ctx.project_root)}"
