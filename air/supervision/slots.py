"""The machine-wide worker slot pool (runner-contract invariants 2 and 27; IMPL-SLOT-1).

Owns: ``SlotPool`` — ``size`` slot files under ``~/.air/locks/slots/``, each taken by an
exclusive ``flock`` on an open descriptor that the holder keeps for as long as its worker
lives (the kernel drops the lock when the holder dies, so a ``kill -9`` of an air process frees
its slots with no cleanup); the holder writes its record into the file (pid, ``/proc`` start
time, boot id, depth, session, task) for display and identity checks (``holders``). A pool-wide
mutex (``slots.lock``, also a non-blocking ``flock``) makes "count the held slots, take a free
one" one step across processes. The depth tiers (``reserved_for``): a task at depth ``d`` is
admitted only while the slots held at depth ``<= d`` are fewer than ``size - reserved_for(d)``,
so slots stay free for deeper tiers and a spawn tree cannot deadlock on its own children; a
record without a depth counts as depth 0. ``acquire`` is async and cancellable: it polls with
backoff (nothing blocks a thread). ``pool_size`` reads the size (``AIR_WORKER_SLOTS``, else
``worker_slots`` in ``~/.air/config.yaml``, else the number of cores).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple

import trio

from air.contracts.error import AirException, ErrorKind
from air.contracts.ids import utc_now_iso
from air.contracts.platform import ProcessIdentity
from air.ipc.procs import is_same_process, read_identity
from air.small_file import read_small

__all__ = [
    "MAX_TASK_DEPTH",
    "SIZE_ENV",
    "Slot",
    "SlotHolder",
    "SlotPool",
    "pool_size",
    "reserved_for",
]

SIZE_ENV = "AIR_WORKER_SLOTS"
"""The environment variable that sets the pool's size (wins over ``~/.air/config.yaml``)."""
MAX_TASK_DEPTH = 2
"""The deepest tier slots are held back for (a task, its debug or review child, theirs)."""
MAX_SLOTS = 256
_POLL_FIRST = 0.01
_POLL_MAX = 0.2


def reserved_for(depth: int, size: int) -> int:
    """How many slots a task at ``depth`` may not take: one per deeper tier, at most
    ``(size - 1) // 2`` in all, so depth 0 always has at least half the pool."""
    tiers = min(MAX_TASK_DEPTH, (size - 1) // 2)
    return max(0, tiers - max(0, depth))


@dataclass(eq=False)
class Slot:
    """One held slot: the open, locked descriptor of its file (closing it frees the slot)."""

    index: int
    fd: int

    def release(self) -> None:
        """Clear the record and drop the lock (idempotent)."""
        if self.fd < 0:
            return
        fd, self.fd = self.fd, -1
        try:
            os.ftruncate(fd, 0)
        except OSError:
            pass
        os.close(fd)  # the lock goes with the last descriptor of the open file


class SlotHolder(NamedTuple):
    """Who holds a slot, as its record says, and whether that process is still the one that
    wrote it (a held lock with a dead recorded owner means the descriptor leaked). A read-only
    record, so a NamedTuple (IMPL-BOOT-9)."""

    slot: int
    record: Mapping[str, Any]
    alive: bool

    @property
    def depth(self) -> int:
        depth = self.record.get("depth")
        return depth if isinstance(depth, int) and not isinstance(depth, bool) else 0


class SlotPool:
    """``size`` machine-wide worker slots in ``directory`` (see the module docstring).

    Args:
        directory: where the slot files live (``~/.air/locks/slots`` by ``for_user``).
        size: how many workers may live at once across every air process using ``directory``.
    """

    def __init__(self, directory: str, size: int) -> None:
        if size < 1:
            raise ValueError("a slot pool needs at least one slot")
        self.directory = directory
        self.size = size

    @classmethod
    def for_user(cls, home: str | None = None, env: Mapping[str, str] | None = None) -> SlotPool:
        """The pool of this user's air processes: ``~/.air/locks/slots``, sized by
        ``pool_size``.

        Raises:
            AirException: ``config_error`` when the configured size is not a positive integer.
        """
        home = home or os.path.expanduser("~")
        size = pool_size(home, env)
        return cls(os.path.join(home, ".air", "locks", "slots"), size)

    # -- one non-blocking step ---------------------------------------------------------------
    def try_acquire(self, depth: int, owner: Mapping[str, Any]) -> Slot | None:
        """Take a slot now if the tiers admit ``depth`` and one is free; None otherwise."""
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        mutex = _lock_nb(os.path.join(self.directory, "slots.lock"))
        if mutex is None:
            return None  # another process is counting: try again shortly
        try:
            return self._take(depth, owner)
        finally:
            os.close(mutex)

    def _take(self, depth: int, owner: Mapping[str, Any]) -> Slot | None:
        free: Slot | None = None
        at_or_below = 0
        for index in range(self.size):
            fd = _lock_nb(self._path(index))
            if fd is None:
                holder = self._read(index)
                at_or_below += holder is None or holder.depth <= depth
                continue
            if free is None:
                free = Slot(index, fd)
            else:
                os.close(fd)
        if free is None or at_or_below >= self.size - reserved_for(depth, self.size):
            if free is not None:
                os.close(free.fd)
            return None
        record = {**owner, **read_identity(os.getpid()).as_record(), "depth": depth}
        record["since"] = utc_now_iso()
        data = json.dumps(record, sort_keys=True).encode()
        os.ftruncate(free.fd, 0)
        os.pwrite(free.fd, data, 0)
        return free

    # -- the async acquire -------------------------------------------------------------------
    async def acquire(
        self,
        depth: int,
        owner: Mapping[str, Any],
        *,
        on_wait: Callable[[], Awaitable[None]] | None = None,
    ) -> Slot:
        """Wait for a slot (cancellable: a cancel while waiting takes nothing).

        Args:
            depth: the task's depth (0: a top-level task).
            owner: what the slot's record says about the holder (session, task, agent).
            on_wait: awaited once, when the first try finds no slot (the task is queued).
        """
        delay = _POLL_FIRST
        told = False
        while True:
            slot = self.try_acquire(depth, owner)
            if slot is not None:
                return slot
            if not told and on_wait is not None:
                told = True
                await on_wait()
            await trio.sleep(delay)
            delay = min(_POLL_MAX, delay * 1.5)

    @asynccontextmanager
    async def hold(
        self,
        depth: int,
        owner: Mapping[str, Any],
        *,
        on_wait: Callable[[], Awaitable[None]] | None = None,
    ) -> AsyncIterator[Slot]:
        """``acquire``, then release when the block ends however it ends."""
        slot = await self.acquire(depth, owner, on_wait=on_wait)
        try:
            yield slot
        finally:
            slot.release()

    # -- display -----------------------------------------------------------------------------
    def holders(self) -> list[SlotHolder]:
        """The held slots and their recorded owners (a free slot is not listed)."""
        found: list[SlotHolder] = []
        if not os.path.isdir(self.directory):
            return found
        for index in range(self.size):
            fd = _lock_nb(self._path(index))
            if fd is not None:
                os.close(fd)  # free
                continue
            holder = self._read(index)
            found.append(holder or SlotHolder(index, {}, alive=False))
        return found

    def _path(self, index: int) -> str:
        return os.path.join(self.directory, f"slot-{index}")

    def _read(self, index: int) -> SlotHolder | None:
        try:
            with open(self._path(index), "rb") as fh:
                record = json.loads(fh.read(4096) or b"{}")
        except (OSError, ValueError):
            return None
        if not isinstance(record, dict):
            return None
        identity = ProcessIdentity.from_record(record)
        alive = identity is not None and is_same_process(identity)
        return SlotHolder(index, record, alive)


def _lock_nb(path: str) -> int | None:
    """An open descriptor of ``path`` holding an exclusive ``flock``; None when another open
    file holds it (this process's other descriptors included: ``flock`` is per open file)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return None
        raise
    return fd


def pool_size(home: str | None = None, env: Mapping[str, str] | None = None) -> int:
    """The machine-wide pool's size: ``AIR_WORKER_SLOTS``, else ``worker_slots`` in
    ``~/.air/config.yaml``, else the number of cores this process may use.

    Raises:
        AirException: ``config_error`` when the value is not an integer in 1..256.
    """
    env = os.environ if env is None else env
    raw = env.get(SIZE_ENV)
    source = SIZE_ENV
    if raw is None:
        path = os.path.join(home or os.path.expanduser("~"), ".air", "config.yaml")
        source = path
        raw = _from_config(path)
    if raw is None:
        return _cores()
    try:
        size = int(str(raw).strip())
    except ValueError:
        size = 0
    if isinstance(raw, bool) or not 1 <= size <= MAX_SLOTS:
        raise AirException.of(
            kind=ErrorKind.CONFIG_ERROR,
            message=f"worker_slots ({source}) must be an integer from 1 to {MAX_SLOTS}, "
            f"not {raw!r}",
            user_action=f"Set {SIZE_ENV} or worker_slots in ~/.air/config.yaml to how many "
            "workers may run at once on this machine, or remove it (default: the cores).",
        )
    return size


def _from_config(path: str) -> Any:
    from air.yamlload import load

    try:
        text = read_small(path).decode("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise AirException.of(
            kind=ErrorKind.CONFIG_ERROR,
            message=f"cannot read {path}: {exc}",
            user_action="Make ~/.air/config.yaml readable, or remove it.",
        ) from exc
    try:
        data = load(text, name=path)
    except Exception as exc:  # yaml.YAMLError and its kin: the file is the user's input
        raise AirException.of(
            kind=ErrorKind.CONFIG_ERROR,
            message=f"{path} is not valid YAML: {exc}",
            user_action="Fix the YAML of ~/.air/config.yaml.",
        ) from exc
    if data is None:
        return None
    if not isinstance(data, dict):
        raise AirException.of(
            kind=ErrorKind.CONFIG_ERROR,
            message=f"{path} must be a mapping of settings",
            user_action="Write ~/.air/config.yaml as `key: value` lines (worker_slots: 4).",
        )
    return data.get("worker_slots")


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)
