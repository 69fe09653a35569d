"""The Doctor's contracts (SDD §3 merges them into ``air.contracts.platform``): ``PlatformTier``,
``DoctorMode``, ``DoctorIssue``, ``DoctorRunInput``, ``DoctorRunOutput``.

Its users import it where they use one of its models, so a process that only names a
``ProcessIdentity`` builds none of these (IMPL-BOOT-12).
"""

from enum import StrEnum
from typing import Literal

from pydantic import Field

from air.contracts.ids import Contract, empty_list

__all__ = ["DoctorIssue", "DoctorMode", "DoctorRunInput", "DoctorRunOutput", "PlatformTier"]


class PlatformTier(StrEnum):
    TIER1 = "tier1"
    """Linux: everything, including the bubblewrap sandbox."""
    TIER2 = "tier2"
    """macOS: no bubblewrap; shell.run refuses to run commands (IMPL-SEC-5)."""
    UNSUPPORTED = "unsupported"


class DoctorMode(StrEnum):
    READ_ONLY = "read_only"
    FIX = "fix"
    BUNDLE = "bundle"


class DoctorIssue(Contract):
    check: str
    severity: Literal["info", "warning", "blocking"]
    message: str
    fix_hint: str | None = None
    """IMPL-DOC-1: what ``air doctor --fix`` would do about it (None: nothing it may do)."""
    user_action: str | None = None
    """IMPL-DOC-1: what the person can do about it."""


class DoctorRunInput(Contract):
    mode: DoctorMode = DoctorMode.READ_ONLY


class DoctorRunOutput(Contract):
    tier: PlatformTier
    issues: list[DoctorIssue] = Field(default_factory=empty_list)
    bundle_artifact_id: str | None = None
