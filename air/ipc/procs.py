"""Process identity and process-tree killing for workers (runner-contract invariants 9, 17).

Owns: reading a ``ProcessIdentity`` (pid, ``/proc/PID/stat`` start time, boot id; the type is
``air.contracts.platform.ProcessIdentity``, re-exported here) with ``read_identity``,
``is_same_process`` (never signal a recycled PID), ``find_marked`` (every process whose
environment carries a worker's run marker — the way to find descendants that double-forked and
called ``setsid``; one ``/proc`` snapshot shared by the kills of a cancelled wave, IMPL-IPC-6),
``find_marked_or_below`` (those and everything below a child subreaper, marked or not),
``hold_below`` / ``release`` (stop and continue everything below a process: a Ctrl-Z of a run),
``kill_sandboxes`` (the sandboxed commands of given workspaces that a dead runtime left,
IMPL-SBX-7), and ``kill_tree`` (SIGTERM to the group and the marked processes, a grace period,
then SIGKILL). Linux ``/proc`` only; elsewhere the group kill still works.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Collection
from functools import cache
from typing import NamedTuple

import trio

from air.contracts.platform import ProcessIdentity

__all__ = [
    "MARKER_ENV",
    "ProcessIdentity",
    "boot_id",
    "find_marked",
    "find_marked_many",
    "find_marked_or_below",
    "hold_below",
    "is_same_process",
    "kill_sandboxes",
    "kill_tree",
    "read_identity",
    "release",
    "scans_done",
]

MARKER_ENV = "AIR_WORKER_RUN"


@cache
def boot_id() -> str | None:
    """This boot's id (read once: it cannot change while a process lives)."""
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


class _Proc(NamedTuple):
    pid: int
    state: str
    ppid: int
    pgid: int
    marker: bytes | None
    start: int
    """``/proc/PID/stat`` start time (0 when unknown)."""


_snapshot_cache: tuple[float, int, list[_Proc]] | None = None
_NO_MARKERS = 1 << 62
"""``started_since`` of a scan that needs no marker (group and state only)."""
_MARKER_PREFIX = MARKER_ENV.encode() + b"="
SHARE_S = 0.05
"""A snapshot this recent serves the first look of a ``kill_tree`` (IMPL-IPC-6): the 16 kills of
a cancelled wave start within it and share one scan; what it cannot show (a process forked
after it) the kill's last look, which postdates the signals, still finds."""


_scans = 0


def scans_done() -> int:
    """How many ``/proc`` passes this process made so far (the benchmarks print it per cancel)."""
    return _scans


@cache
def _own_start() -> int:
    """This process's start time (clock ticks since boot): every worker it started, and all
    their descendants, started at or after it."""
    start = read_identity(os.getpid()).start_time
    return int(start) if start and start.isdigit() else 0


def _snapshot(fresh_after: float, started_since: int = 0) -> tuple[float, list[_Proc]]:
    """Every process's state, group and run marker, from one pass over ``/proc``, taken at or
    after the monotonic time ``fresh_after`` (a snapshot that recent is shared: concurrent
    ``kill_tree`` calls of a cancelled wave read every process's files once, IMPL-IPC-6); its
    monotonic time and the processes.

    ``started_since`` (a ``/proc/PID/stat`` start time, clock ticks since boot): the marker is
    read only from processes started at or after it — the descendants of a worker started then
    (IMPL-IPC-5); it is lowered to this process's own start, so that one snapshot serves the
    kills of every worker this process started. A snapshot serves a later request only if it
    read at least as many markers.
    """
    global _snapshot_cache, _scans
    if 0 < started_since < _NO_MARKERS:
        started_since = min(started_since, _own_start())  # what is read, not what is found
    cached = _snapshot_cache
    if cached is not None and cached[0] >= fresh_after and cached[1] <= started_since:
        return cached[0], cached[2]
    taken = time.monotonic()
    _scans += 1
    procs: list[_Proc] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        entries = []
    me = os.getpid()
    for name in entries:
        if not name.isdigit() or int(name) == me:
            continue
        fields = _stat_fields(int(name))
        if not fields or len(fields) < 3:
            continue
        marker: bytes | None = None
        env = b""
        start = int(fields[19]) if len(fields) > 19 and fields[19].isdigit() else 0
        if started_since <= 0 or start == 0 or start >= started_since:
            try:
                with open(f"/proc/{name}/environ", "rb") as fh:
                    env = fh.read()
            except OSError:
                env = b""
        at = env.find(_MARKER_PREFIX)
        if at >= 0 and (at == 0 or env[at - 1] == 0):
            end = env.find(b"\0", at)
            marker = env[at + len(_MARKER_PREFIX) : end if end >= 0 else len(env)]
        procs.append(_Proc(int(name), fields[0], int(fields[1]), int(fields[2]), marker, start))
    _snapshot_cache = (taken, started_since, procs)
    return taken, procs


def _marked(procs: list[_Proc], marker: str, since: int = 0) -> list[int]:
    want = marker.encode()
    return [
        p.pid
        for p in procs
        if p.marker == want and p.state not in ("Z", "X") and (p.start == 0 or p.start >= since)
    ]


def find_marked(marker: str, *, max_age_s: float = 0.0, started_since: int = 0) -> list[int]:
    """PIDs of live processes whose environment holds ``AIR_WORKER_RUN=<marker>``;
    ``started_since``: only among processes started at or after that start time (a worker's:
    its descendants cannot be older); ``max_age_s``: a snapshot that old may serve."""
    _, procs = _snapshot(time.monotonic() - max_age_s, started_since)
    return _marked(procs, marker, started_since)


def find_marked_or_below(markers: list[str], root: int | None) -> list[int]:
    """From one fresh scan: live processes that carry one of ``markers`` or descend from
    ``root`` (not ``root`` itself; None: the marked ones only). A child subreaper's descendants
    include every orphan of its tree, marked or not: a sandboxed command (its environment is
    the sandbox's own allowlist) whose spawner died before bwrap's parent-death signal was
    armed (IMPL-REMOTE-3)."""
    _, procs = _snapshot(time.monotonic())
    found = {pid for marker in markers for pid in _marked(procs, marker)}
    if root is None:
        return sorted(found)
    return sorted(found | _below(procs, root))


def _below(procs: list[_Proc], root: int) -> set[int]:
    """The live descendants of ``root`` in ``procs`` (not ``root`` itself)."""
    children: dict[int, list[int]] = {}
    for p in procs:
        if p.state not in ("Z", "X"):
            children.setdefault(p.ppid, []).append(p.pid)
    seen = {root}
    below = list(children.get(root, ()))
    while below:
        pid = below.pop()
        if pid not in seen:
            seen.add(pid)
            below += children.get(pid, ())
    return seen - {root}


def hold_below(root: int) -> list[ProcessIdentity]:
    """SIGSTOP every running process below ``root`` (a run's workers, sandboxed commands and
    servers lead sessions of their own: a terminal's Ctrl-Z stops none of them), scanning again
    until none is left running (one forked before its parent stopped is found by the next
    scan); what it stopped, for ``release``. One stopped already (a debugger's) is left as it
    is."""
    held: dict[int, ProcessIdentity] = {}
    for _ in range(5):
        _, procs = _snapshot(time.monotonic(), _NO_MARKERS)
        state = {p.pid: p.state for p in procs}
        running = [pid for pid in _below(procs, root) if pid not in held and state[pid] not in "Tt"]
        if not running:
            break
        for pid in running:
            identity = read_identity(pid)
            try:
                os.kill(pid, signal.SIGSTOP)
            except (ProcessLookupError, PermissionError):
                continue
            held[pid] = identity
    return list(held.values())


def release(held: list[ProcessIdentity]) -> None:
    """SIGCONT what ``hold_below`` stopped (each only if it is still that process)."""
    for identity in held:
        if is_same_process(identity):
            try:
                os.kill(identity.pid, signal.SIGCONT)
            except (ProcessLookupError, PermissionError):
                pass


def find_marked_many(markers: list[str]) -> dict[str, list[int]]:
    """``find_marked`` of each of ``markers``, from one fresh scan (reaping many runs)."""
    _, procs = _snapshot(time.monotonic())
    return {marker: _marked(procs, marker) for marker in markers}


def kill_sandboxes(workspaces: list[str], spare_parents: Collection[int] = ()) -> list[int]:
    """SIGKILL every live sandbox (a ``bwrap`` that leads its own session, as the runtime starts
    them, and the bwrap inside it that leads its PID namespace) whose command line binds one of
    ``workspaces``, except those this process or one of ``spare_parents`` started (live air
    processes: the project itself is every session's ``main`` workspace); return their PIDs.
    Killing bwrap ends its PID namespace: the command and all it started.

    For recovery (IMPL-SBX-7): bwrap's parent-death signal misses a runtime that died between
    forking bwrap and bwrap's own ``prctl``, so such a command outlives it (reparented: its
    parent is no air process then).
    """
    wanted = {os.path.realpath(w) for w in workspaces if w}
    if not wanted:
        return []
    killed: list[int] = []
    # a bwrap still setting up leads its own session (setsid) only after it forked: one that did
    # so between a scan and the kill of its parent's group outlives that kill, and the next scan
    # finds it (its parent gone: no air process's)
    for _ in range(_SANDBOX_SCANS):
        leaders = _sandbox_leaders(wanted)
        # a live runtime's sandbox: its outer bwrap is that runtime's child, the inner one the
        # outer one's
        spared = {os.getpid(), *spare_parents}
        while grown := {pid for pid, ppid in leaders.items() if ppid in spared} - spared:
            spared |= grown
        fresh = sorted(set(leaders) - spared - set(killed))
        if not fresh:
            break
        for pid in fresh:
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                continue
            killed.append(pid)
    return killed


_SANDBOX_SCANS = 3
"""Scans of /proc a recovery's sandbox kill makes at most (each after the last one's kills)."""


def _sandbox_leaders(wanted: set[str]) -> dict[int, int]:
    """Every live ``bwrap`` that leads its session and binds one of ``wanted``: its parent."""
    leaders: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                argv = [a.decode(errors="replace") for a in fh.read().split(b"\0") if a]
            fields = _stat_fields(pid)
        except OSError:
            continue
        if not argv or os.path.basename(argv[0]) != "bwrap" or not fields or len(fields) < 4:
            continue
        if int(fields[3]) == pid and wanted.intersection(argv):
            leaders[pid] = int(fields[1])
    return leaders


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
    since = 0
    if identity is not None:
        this_boot = identity.boot_id in (None, boot_id())
        if is_same_process(identity) or (this_boot and _group_alive(identity.pid)):
            pgid = identity.pid
        if this_boot and identity.start_time and identity.start_time.isdigit():
            since = int(identity.start_time)  # its descendants started no earlier
    # a recent snapshot is shared by a whole cancelled wave (SHARE_S); the last look of each
    # kill needs one taken after its own signals
    marked = find_marked(marker, max_age_s=SHARE_S, started_since=since) if marker else []
    if pgid is None and not marked:
        return False
    _signal_all(pgid, marked, signal.SIGTERM)
    signalled = time.monotonic()
    if await _gone_within(grace_s, pgid, marker, marked, poll_s, since=since, after=signalled):
        return False
    again = find_marked(marker, max_age_s=0.0, started_since=since) if marker else []
    marked = sorted(set(marked) | set(again))
    _signal_all(pgid, marked, signal.SIGKILL)
    await _gone_within(
        2.0, pgid, marker, marked, poll_s, kill_found=True, since=since, after=time.monotonic()
    )
    return True


async def _pidfds_gone(pids: list[int]) -> bool:
    """Wait until each of ``pids`` has exited, woken by its pidfd (no polling: the check that
    follows runs the moment the last one ends, IMPL-KILL-1); False when no pidfd could be opened
    (no pids, or a kernel without ``pidfd_open``: the caller polls)."""
    fds: list[int] = []
    try:
        for pid in pids:
            try:
                fds.append(os.pidfd_open(pid))
            except ProcessLookupError:
                continue  # already gone
            except (OSError, AttributeError):
                return False
        for fd in fds:
            await trio.lowlevel.wait_readable(fd)
    finally:
        for fd in fds:
            os.close(fd)
    return bool(fds)


async def _gone_within(
    limit_s: float,
    pgid: int | None,
    marker: str | None,
    known: list[int],
    poll_s: float,
    *,
    kill_found: bool = False,
    since: int = 0,
    after: float = 0.0,
) -> bool:
    """Poll until the group and every marked process are gone; False when ``limit_s`` passes.

    With ``kill_found``, marked processes still found are SIGKILLed too. The known pids are
    waited for through their pidfds (IMPL-KILL-1); later checks come after 1 ms and back off to
    ``poll_s``. Cheap checks (the known pids, ``killpg(0)``)
    come first; ``/proc`` is scanned only when they say gone, through a snapshot taken after
    ``after`` (the signals) and after any snapshot that still showed a process: one the other
    kills of the wave share (IMPL-IPC-6).
    """
    delay = 0.001
    with trio.move_on_after(limit_s):
        waited = await _pidfds_gone(known)
        while True:
            if not waited:
                await trio.sleep(delay)
                delay = min(delay * 2, poll_s)
            waited = False
            if any(_alive(p) for p in known):
                continue
            taken, procs = _snapshot(after, since if marker else _NO_MARKERS)
            live = [p for p in procs if p.state not in ("Z", "X")]
            if pgid is not None and any(p.pgid == pgid for p in live):
                if kill_found:
                    _signal_all(pgid, [], signal.SIGKILL)
                after = taken + 1e-9
                continue
            found = _marked(procs, marker, since) if marker else []
            if found:
                if kill_found:  # a descendant the SIGKILL snapshot had not seen yet
                    _signal_all(None, found, signal.SIGKILL)
                after = taken + 1e-9
                continue
            return True
    return False
