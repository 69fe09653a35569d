"""Process identity and process-tree killing for workers (runner-contract invariants 9, 17).

Owns: ``ProcessIdentity`` (pid, ``/proc/PID/stat`` start time, boot id), ``read_identity``,
``is_same_process`` (never signal a recycled PID), ``find_marked`` (every process whose
environment carries a worker's run marker — the way to find descendants that double-forked and
called ``setsid``), and ``kill_tree`` (SIGTERM to the group and the marked processes, a grace
period, then SIGKILL). Linux ``/proc`` only; elsewhere the group kill still works.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass

import trio

__all__ = [
    "MARKER_ENV",
    "ProcessIdentity",
    "boot_id",
    "find_marked",
    "is_same_process",
    "kill_tree",
    "read_identity",
]

MARKER_ENV = "AIR_WORKER_RUN"


@dataclass(frozen=True)
class ProcessIdentity:
    pid: int
    start_time: str | None
    boot_id: str | None


def boot_id() -> str | None:
    try:
        with open("/proc/sys/kernel/random/boot_id") as fh:
            return fh.read().strip()
    except OSError:
        return None


def _stat_fields(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read().decode("ascii", "replace")
    except OSError:
        return None
    # comm may contain spaces and parentheses: split after the last ')'.
    close = data.rfind(")")
    return data[close + 2 :].split() if close >= 0 else None


def read_identity(pid: int) -> ProcessIdentity:
    fields = _stat_fields(pid)
    # after comm: state(0) ppid(1) pgrp(2) session(3) ... starttime is field 22 overall -> idx 19
    start = fields[19] if fields and len(fields) > 19 else None
    return ProcessIdentity(pid=pid, start_time=start, boot_id=boot_id())


def _alive(pid: int) -> bool:
    fields = _stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def is_same_process(identity: ProcessIdentity) -> bool:
    """True when ``identity.pid`` is still the process that was recorded (not a recycled PID)."""
    if identity.boot_id and identity.boot_id != boot_id():
        return False
    if not _alive(identity.pid):
        return False
    if identity.start_time is None:
        return True
    return read_identity(identity.pid).start_time == identity.start_time


def find_marked(marker: str) -> list[int]:
    """PIDs of live processes whose environment holds ``AIR_WORKER_RUN=<marker>``."""
    needle = f"{MARKER_ENV}={marker}".encode()
    found: list[int] = []
    me = os.getpid()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for name in entries:
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as fh:
                env = fh.read()
        except OSError:
            continue
        if needle in env.split(b"\0") and _alive(int(name)):
            found.append(int(name))
    return found


def _signal_all(pgid: int | None, pids: list[int], sig: int) -> None:
    if pgid is not None:
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


async def kill_tree(
    identity: ProcessIdentity | None,
    *,
    marker: str | None,
    grace_s: float = 3.0,
    poll_s: float = 0.05,
) -> bool:
    """SIGTERM the worker's process group and every marked process, wait ``grace_s``, SIGKILL.

    The group is signalled only while ``identity`` still names the same process (or while the
    group has members and the leader is gone — a group id is not reused while it has members).
    Returns True when something had to be SIGKILLed.
    """
    pgid: int | None = None
    if identity is not None:
        if is_same_process(identity) or (
            identity.boot_id in (None, boot_id()) and _group_alive(identity.pid)
        ):
            pgid = identity.pid
    marked = find_marked(marker) if marker else []
    if pgid is None and not marked:
        return False
    _signal_all(pgid, marked, signal.SIGTERM)
    with trio.move_on_after(grace_s):
        while True:
            await trio.sleep(poll_s)
            live = [p for p in marked if _alive(p)]
            group = pgid is not None and _group_has_live(pgid)
            extra = find_marked(marker) if marker else []
            if not live and not group and not extra:
                return False
    marked = sorted(set(marked) | set(find_marked(marker) if marker else []))
    _signal_all(pgid, marked, signal.SIGKILL)
    with trio.move_on_after(2.0):
        while True:
            if not (pgid is not None and _group_has_live(pgid)) and not (
                marker and find_marked(marker)
            ):
                break
            await trio.sleep(poll_s)
    return True


def _group_has_live(pgid: int) -> bool:
    """A group whose only members are zombies counts as dead (they wait for their reaper)."""
    if not _group_alive(pgid):
        return False
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True
    for name in entries:
        if not name.isdigit():
            continue
        fields = _stat_fields(int(name))
        if fields and len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
            return True
    return False
