"""Platform tiers, the Doctor's contracts (merged here by SDD §3) and process identity.

Owns: ``ProcessIdentity`` (IMPL-SPINE-4): the one way air names a process it may later signal
(pid + ``/proc/PID/stat`` start time + boot id), used by run records, the owner lock, agent
events, recovery and the monitor. Reading it from ``/proc`` lives in ``air/ipc/procs.py``.
``PlatformTier``, ``DoctorMode``, ``DoctorIssue``, ``DoctorRunInput`` and ``DoctorRunOutput``
are ``air.contracts.doctor_report``'s (only ``air doctor`` uses them; IMPL-BOOT-12).
"""

from collections.abc import Mapping
from typing import Any, Self

from air.contracts.ids import Contract

__all__ = ["ProcessIdentity"]


class ProcessIdentity(Contract):
    """Which process a pid meant when it was recorded: a recycled pid has another start time,
    a pid from before a reboot another boot id. ``None`` fields are unknown (not checked)."""

    pid: int
    start_time: str | None = None
    """``/proc/PID/stat`` field 22 (clock ticks since boot), as the decimal string."""
    boot_id: str | None = None
    """``/proc/sys/kernel/random/boot_id`` when the process was recorded."""

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Self | None:
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
