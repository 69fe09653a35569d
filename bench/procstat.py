"""What the benches read of other processes in ``/proc``: CPU time and children.

Owns ``cpu_ticks`` (``utime + stime`` of every thread of a process, in clock ticks),
``TICK_MS`` (one tick in milliseconds) and ``children`` (the pids whose parent is a pid).
"""

from __future__ import annotations

import os

__all__ = ["TICK_MS", "children", "cpu_ticks"]

TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name, or None (gone)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def cpu_ticks(pid: int) -> int:
    """``utime + stime`` of ``pid`` (every thread, also those that ended), in clock ticks;
    0 when it is gone."""
    fields = _stat(pid)
    return 0 if fields is None else int(fields[11]) + int(fields[12])


def children(pid: int) -> list[int]:
    """The live processes whose parent is ``pid``."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = _stat(int(name))
            if fields is not None and int(fields[1]) == pid:
                found.append(int(name))
    return found
