"""Durable worker run records and orphan reaping (runner-contract invariant 9; IMPL-WRK-2,
IMPL-RUN-1).

Owns: ``RunRecordStore`` — one JSON file per worker run under ``.air/local/state/runs/``
({agent_id, task_id, session_id, pid, pid_start_time, boot_id, marker, state, started_at,
updated_at, owner, and for a worker on another host ``remote``: where the launcher placed it —
host, its boot id, pid and start time, a Slurm job id —, written by ``place`` as soon as the
launcher knows, also before a process answers), written to a temporary file and renamed —; the
owner lock (``current_owner``: every air process that starts workers holds an exclusive ``flock``
on ``runs/owners/<pid>-<start time>-<boot>.lock`` for its lifetime and records its pid, ``/proc``
start time, boot id and lock name as each record's ``owner``); ``claim_session`` (one air process
per session, by a second lock); and ``reap_orphans``, which kills what a dead air process left
behind — never a live air process's workers, never a recycled PID.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, NamedTuple, Protocol

import trio

from air.contracts.error import AirException, ErrorKind
from air.contracts.ids import utc_now_iso
from air.contracts.platform import ProcessIdentity
from air.ipc.procs import find_marked_many, is_same_process, kill_tree, read_identity

__all__ = [
    "OWNERS_DIR",
    "ReapResult",
    "RunRecordStore",
    "claim_session",
    "current_owner",
    "is_mine",
    "live_owners",
    "owner_alive",
    "reap_orphans",
    "runs_dir",
    "session_lock_held",
]

OWNERS_DIR = "owners"
_held: dict[tuple[int, str], dict[str, Any]] = {}
"""(pid, owners dir or session lock) → what this process holds; each lock fd stays open for the
process's lifetime."""


class _RunLike(Protocol):
    @property
    def marker(self) -> str: ...


class ReapResult(NamedTuple):
    agent_id: str
    state: str
    """``orphaned-dead`` (nothing was alive) or ``orphaned-killed``."""


def runs_dir(project_root: str) -> str:
    """Where a project's run records (and the owner and session locks) live."""
    return os.path.join(project_root, ".air", "local", "state", "runs")


def current_owner(root: str) -> dict[str, Any]:
    """This process's owner entry for the run records under ``root``, taking its lock once.

    The lock file is opened close-on-exec (workers never inherit it) and is never closed: the
    kernel releases it when the process ends, however it ends.
    """
    owners = os.path.join(root, OWNERS_DIR)
    key = (os.getpid(), os.path.realpath(owners))
    entry = _held.get(key)
    if entry is not None:
        return {k: v for k, v in entry.items() if k != "fd"}
    ident = read_identity(os.getpid())
    name = f"{ident.pid}-{ident.start_time}-{(ident.boot_id or 'noboot')[:8]}.lock"
    os.makedirs(owners, exist_ok=True)
    fd = os.open(
        os.path.join(owners, name), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
    )
    fcntl.flock(fd, fcntl.LOCK_EX)
    entry = {
        **ident.as_record(),
        "lock": name,
        "fd": fd,
    }
    _held[key] = entry
    return {k: v for k, v in entry.items() if k != "fd"}


def claim_session(root: str, session_id: str) -> None:
    """Hold ``runs/owners/session-<id>.lock`` for this process's lifetime: one air process
    runs a session at a time (a second ``air resume`` of a live session would mark its running
    tasks lost and run them again). Claiming a session this process already holds is a no-op.

    Raises:
        AirException: ``validation_error`` when another live process holds the session.
    """
    owners = os.path.join(root, OWNERS_DIR)
    name = _session_lock(session_id)
    key = (os.getpid(), os.path.join(os.path.realpath(owners), name.removesuffix(".lock")))
    if key in _held:
        return
    os.makedirs(owners, exist_ok=True)
    path = os.path.join(owners, name)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
        os.close(fd)
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise
        raise AirException.of(
            kind=ErrorKind.VALIDATION_ERROR,
            message=f"session {session_id} is running in another air process (pid {holder})",
            user_action="Let that run finish, or stop it (Ctrl-C), then `air resume` again.",
        ) from exc
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _held[key] = {"fd": fd}


def _session_lock(session_id: str) -> str:
    """The name of a session's lock under ``owners/``."""
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in session_id)
    return f"session-{safe}.lock"


def session_lock_held(project_root: str, session_id: str) -> bool:
    """True when a live air process holds the session's lock (it is running now)."""
    return _lock_held(runs_dir(project_root), _session_lock(session_id))


def _lock_held(root: str, name: str) -> bool:
    """True when some process holds the owner lock ``name`` (probed with a shared lock, so
    probers never make each other look alive)."""
    if not name or "/" in name or name.startswith("."):
        return False
    try:
        fd = os.open(
            os.path.join(root, OWNERS_DIR, name), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
        )
    except OSError:
        return False  # no lock file: nobody holds it
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return True
        raise
    finally:
        os.close(fd)
    return False


def live_owners(root: str) -> set[int]:
    """The pids of the air processes that hold an owner lock under ``root`` now: the live
    runtimes of the project (their sandboxes are theirs, whatever they bind)."""
    try:
        names = os.listdir(os.path.join(root, OWNERS_DIR))
    except OSError:
        return set()
    pids = set()
    for name in names:
        pid, _, rest = name.partition("-")
        if pid.isdigit() and rest.endswith(".lock") and _lock_held(root, name):
            pids.add(int(pid))
    return pids


def owner_alive(root: str, record: dict[str, Any]) -> bool | None:
    """Whether the air process that owns ``record`` may still be running.

    Returns:
        None for a record without an owner (written before IMPL-RUN-1); otherwise False only
        when the owner is provably dead: its lock is free and its pid is gone or now belongs
        to another process (start time or boot id differ).
    """
    owner = record.get("owner")
    if not isinstance(owner, dict) or not owner.get("pid"):
        return None
    if _lock_held(root, str(owner.get("lock") or "")):
        return True
    ident = ProcessIdentity.from_record(owner)
    return ident is not None and is_same_process(ident)


def is_mine(record: dict[str, Any]) -> bool:
    """Whether ``record`` is owned by this very process."""
    owner = record.get("owner")
    if not isinstance(owner, dict):
        return False
    return ProcessIdentity.from_record(owner) == read_identity(os.getpid())


class RunRecordStore:
    def __init__(self, root: str) -> None:
        self.root = root

    def _path(self, agent_id: str) -> str:
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in agent_id)
        return os.path.join(self.root, f"{safe}.json")

    def write(self, record: dict[str, Any]) -> None:
        os.makedirs(self.root, exist_ok=True)
        path = self._path(str(record["agent_id"]))
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(record, fh)
        os.replace(tmp, path)

    def read(self, agent_id: str) -> dict[str, Any] | None:
        try:
            with open(self._path(agent_id), encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def list(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        try:
            names = sorted(os.listdir(self.root))
        except OSError:
            return out
        for name in names:
            if name.endswith(".json"):
                rec = self.read(name[:-5])
                if rec is not None:
                    out.append(rec)
        return out

    def begin(self, run: Any) -> None:
        """Record a freshly spawned worker (``run`` has ``request``, ``marker`` and ``proc``;
        ``remote``: where a launcher placed it, or None)."""
        ident = run.proc.identity
        record = self._new(run)
        record.update(ident.as_record())
        self.write(record)

    def place(self, run: Any) -> None:
        """Record (or update) where a launcher placed ``run``'s worker (``run.remote``): a
        queued Slurm job has a record before any worker process answers."""
        record = self.read(run.request.agent_id)
        if record is None or record.get("marker") != run.marker:
            record = self._new(run)
        record.update(remote=run.remote, updated_at=utc_now_iso())
        self.write(record)

    def _new(self, run: Any) -> dict[str, Any]:
        now = utc_now_iso()
        record: dict[str, Any] = {
            "agent_id": run.request.agent_id,
            "task_id": run.request.task_spec.id,
            "session_id": run.request.session_id,
            "marker": run.marker,
            "state": "running",
            "started_at": now,
            "updated_at": now,
            "owner": current_owner(self.root),
        }
        if getattr(run, "remote", None):
            record["remote"] = run.remote
        return record

    def finish(self, agent_id: str, state: str) -> None:
        rec = self.read(agent_id)
        if rec is None:
            return
        rec.update(state="terminal", terminal_state=state, updated_at=utc_now_iso())
        self.write(rec)


async def reap_orphans(
    root: str,
    *,
    live_agent_ids: frozenset[str] = frozenset(),
    grace_s: float = 3.0,
    own: bool = False,
    remote: Callable[[list[dict[str, Any]]], Awaitable[object]] | None = None,
) -> list[ReapResult]:
    """Kill the process trees of runs still marked ``running`` whose air process is gone.

    A record is taken only when its owner is provably dead (``owner_alive`` is False) — a
    second air process in the same project never touches the first one's workers — or, with
    ``own=True``, only the records this very process owns (its last-resort kill on a second
    signal). Records without an owner (written before IMPL-RUN-1) count as dead-owned. The
    group is signalled only if its leader is provably the recorded process (same boot id and
    ``/proc`` start time) and carries the run's marker; descendants are found by the marker.
    Each record taken is then marked terminal (``orphaned-dead`` / ``orphaned-killed``).
    ``remote``: the sweeper of the records taken that name a host (``air.remote.recovery``:
    the marker over a fresh ssh connection, ``scancel`` of a Slurm job), run beside the kills.
    """
    store = RunRecordStore(root)
    results: list[ReapResult] = []
    records = store.list()  # read once: the owners' clean-up below sees the same records
    taken: list[dict[str, Any]] = []
    for rec in records:
        if rec.get("state") != "running" or str(rec.get("agent_id")) in live_agent_ids:
            continue
        if own:
            if not is_mine(rec):
                continue
        elif owner_alive(root, rec):
            continue
        taken.append(rec)
    # one /proc scan for every run taken, and their kills side by side (IMPL-IPC-6)
    marked = find_marked_many([str(r["marker"]) for r in taken if r.get("marker")])
    kills: list[tuple[ProcessIdentity | None, str | None]] = []
    for rec in taken:
        ident = ProcessIdentity.from_record(rec)
        marker = rec.get("marker")
        found = marked.get(str(marker), []) if marker else []
        leader = ident if ident is not None and ident.pid > 0 else None
        if leader is not None and is_same_process(leader) and leader.pid not in found:
            # the recorded pid is alive but does not carry the run's marker: not this run's
            # worker (a stale or forged record) — only marked processes may be signalled
            leader = None
        alive = (leader is not None and is_same_process(leader)) or bool(found)
        if alive:
            kills.append((leader, marker))
        state = "orphaned-killed" if alive else "orphaned-dead"
        rec.update(state="terminal", terminal_state=state, updated_at=utc_now_iso())
        results.append(ReapResult(agent_id=str(rec.get("agent_id")), state=state))
    placed = [r for r in taken if isinstance(r.get("remote"), dict)]
    async with trio.open_nursery() as nursery:
        for leader, marker in kills:
            nursery.start_soon(partial(kill_tree, leader, marker=marker, grace_s=grace_s))
        if remote is not None and placed:
            nursery.start_soon(remote, placed)
    for rec in taken:
        store.write(rec)
    await trio.lowlevel.checkpoint()
    if not own:
        _forget_dead_owners(store, records)
    return results


def _forget_dead_owners(store: RunRecordStore, records: list[dict[str, Any]]) -> None:
    """Delete the lock files of owners that are provably dead and own no running record.

    ``records``: the store's records as ``reap_orphans`` read and updated them (a record it
    took is terminal in both); a record written since belongs to a live owner, whose lock is
    held, so it is never deleted either way."""
    owners = os.path.join(store.root, OWNERS_DIR)
    try:
        names = os.listdir(owners)
    except OSError:
        return
    busy = {
        str(rec["owner"].get("lock"))
        for rec in records
        if rec.get("state") == "running" and isinstance(rec.get("owner"), dict)
    }
    for name in names:
        if name.startswith("session-") or not name.endswith(".lock"):
            continue  # a session lock is never deleted: a new file would make a second owner
        if name in busy or _lock_held(store.root, name):
            continue
        pid, _, rest = name[: -len(".lock")].partition("-")
        start = rest.partition("-")[0]
        if pid.isdigit() and is_same_process(ProcessIdentity(pid=int(pid), start_time=start)):
            continue
        try:
            os.unlink(os.path.join(owners, name))
        except OSError:
            pass
