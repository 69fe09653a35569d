"""The records of a permission decision: ``Item`` (one thing decided on its own) and
``Evaluation`` (the decision with every item behind it), and the order of actions and risks
by which the worst item decides the call (SDD §9.2)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from air.contracts.permission import CommandCategory, PathCategory, PermissionAction, RiskLevel

if TYPE_CHECKING:  # built at the first permission check (IMPL-BOOT-12)
    from air.contracts.permission_records import (
        CommandRiskAnalysis,
        PathRiskClassification,
        PermissionDecision,
    )

__all__ = ["RISK_ORDER", "Evaluation", "Item", "worse"]

A = PermissionAction

_ACTION_ORDER = {
    A.ALLOW: 0,
    A.ANNOUNCE_THEN_RUN: 1,
    A.ASK_USER: 2,
    A.BLOCK: 3,
    A.DENY: 4,
    A.REFUSE: 5,
}
RISK_ORDER: dict[RiskLevel, int] = {"none": 0, "low": 1, "medium": 2, "high": 3, "critical": 4}


@dataclass(eq=False)
class Item:
    """One thing decided on its own: the tool, a read path, a write path or a command segment."""

    kind: str
    key: str
    action: PermissionAction
    risk: RiskLevel
    reason: str
    layer: str
    sensitive: bool = False
    path: PathRiskClassification | None = None
    category: CommandCategory | None = None


class Evaluation(NamedTuple):
    """The full picture behind a decision: every item and the analysis it came from; a
    read-only record, so a NamedTuple (IMPL-BOOT-14)."""

    decision: PermissionDecision
    items: list[Item]
    command: CommandRiskAnalysis | None = None

    @property
    def credential_paths(self) -> tuple[str, ...]:
        """The credential paths the call reads or writes (resolved; ``DIR/**`` for a tree): once
        the call is allowed (a sensitive grant or rule), it may see and touch them (IMPL-SBX-3)."""
        return tuple(
            i.key
            for i in self.items
            if i.kind in ("read", "write")
            and i.path
            and i.path.category == PathCategory.CREDENTIALS
        )

    @property
    def pending(self) -> list[Item]:
        """Items that still need the person's approval."""
        return [i for i in self.items if i.action == A.ASK_USER]


def worse(a: PermissionAction, b: PermissionAction) -> bool:
    """True when ``a`` is a stricter action than ``b``."""
    return _ACTION_ORDER[a] > _ACTION_ORDER[b]
