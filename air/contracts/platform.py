"""Platform tiers, the Doctor's contracts (merged here by SDD §3) and process identity.

Owns: ``PlatformTier``, ``DoctorMode``, ``DoctorIssue``, ``DoctorRunInput``, ``DoctorRunOutput``,
and ``ProcessIdentity`` (IMPL-SPINE-4): the one way air names a process it may later signal
(pid + ``/proc/PID/stat`` start time + boot id), used by run records, the owner lock, agent
events, recovery and the monitor. Reading it from ``/proc`` lives in ``air/ipc/procs.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Literal

from pydantic import Field

from air.contracts.ids import Contract

__all__ = [
    "DoctorIssue",
    "DoctorMode",
    "DoctorRunInput",
    "DoctorRunOutput",
    "PlatformTier",
    "ProcessIdentity",
]


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
    issues: list[DoctorIssue] = Field(default_factory=list)
    bundle_artifact_id: str | None = None


class ProcessIdentity(Contract):
    """Which process a pid meant when it was recorded: a recycled pid has another start time,
    a pid from before a reboot another boot id. ``None`` fields are unknown (not checked)."""

    pid: int
    start_time: str | None = None
    """``/proc/PID/stat`` field 22 (clock ticks since boot), as the decimal string."""
    boot_id: str | None = None
    """``/proc/sys/kernel/random/boot_id`` when the process was recorded."""

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> ProcessIdentity | None:
        """Read ``pid`` / ``pid_start_time`` / ``boot_id`` of a run record, an owner record or
        an ``agent.started`` payload; None without a usable pid."""
        pid = record.get("pid")
        if isinstance(pid, bool) or not isinstance(pid, int | str) or not str(pid).isdigit():
            return None
        start = record.get("pid_start_time")
        boot = record.get("boot_id")
        return cls(
            pid=int(pid),
            start_time=str(start) if start is not None and str(start) else None,
            boot_id=str(boot) if boot else None,
        )

    def as_record(self) -> dict[str, Any]:
        """The fields as run records and event payloads spell them."""
        return {"pid": self.pid, "pid_start_time": self.start_time, "boot_id": self.boot_id}

    @property
    def start_ticks(self) -> int | None:
        """The start time as an integer (None when unknown or not a number)."""
        return int(self.start_time) if self.start_time and self.start_time.isdigit() else None
