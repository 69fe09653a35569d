"""One air process at a time changes a project's files or its backups (IMPL-REL-4).

Owns ``hold``: an exclusive ``flock`` on ``<project>/.air/local/locks/<name>.lock`` for the
length of an ``async with``, and the two names. ``TREE`` is held by whatever changes the
project's files for air — a merge, a restore, the checkout of ``--branch`` — and the snapshot
before a task that writes in the project itself (so that it never reads a tree another process
is merging into); ``BACKUPS`` by every write of the backup repository (its index and its one
ref). Two air processes may run in one project (their workers never touch each other's);
without these, a merge of one failed at the pre-merge snapshot while the other held the backup
index, and two snapshots taken at once read the same parent, so one of them left the chain
``air restore`` reads. A holder that takes both takes ``TREE`` first.

The lock is taken without blocking the Trio loop: a non-blocking ``flock`` retried after a
short sleep (2 ms, doubling to 50 ms), so a cancelled waiter leaves at once; a waiter with
``patience`` gives up after it with the holder's pid (written in the file), so one stopped
(Ctrl-Z) or hung while it changed the project's files costs a task, not a whole run. It is released
when the block ends, or by the kernel when the holder dies. Each ``hold`` opens the file
anew (a ``flock`` belongs to an open file), so two tasks of one process also take turns; a
task never takes a name it already holds.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import trio

from air.contracts.error import AirException, ErrorKind

__all__ = ["BACKUPS", "TREE", "hold"]

TREE = "tree"
BACKUPS = "backups"
_FIRST_WAIT_S = 0.002
_LONGEST_WAIT_S = 0.05


@asynccontextmanager
async def hold(
    project_root: str,
    name: str,
    *,
    waiting: Callable[[], None] | None = None,
    patience: float | None = None,
) -> AsyncIterator[None]:
    """Hold the project's lock ``name`` (``TREE`` or ``BACKUPS``) for the block; ``waiting``
    is called once if another holds it first (a command says why it pauses). The holder's pid
    is written in the file, for the error of a waiter that runs out of ``patience``.

    Raises:
        AirException: ``workspace_error`` when the lock file cannot be made or opened (a link
            in its place is refused: ``O_NOFOLLOW``), or another process held the lock for
            ``patience`` seconds (one stopped or hung while it changed the project's files).
    """
    directory = os.path.join(project_root, ".air", "local", "locks")
    path = os.path.join(directory, f"{name}.lock")
    try:
        os.makedirs(directory, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise AirException.of(
            kind=ErrorKind.WORKSPACE_ERROR,
            message=f"cannot open air's lock {path}: {exc.strerror or exc}",
            user_action=f"Make {directory} a directory air can write (not a link), or remove "
            "what is in the lock's place; then run air again.",
        ) from None
    try:
        wait = _FIRST_WAIT_S
        deadline = None if patience is None else trio.current_time() + patience
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if waiting is not None and wait == _FIRST_WAIT_S:
                    waiting()
                if deadline is not None and trio.current_time() >= deadline:
                    raise _held_too_long(fd, path, patience or 0.0) from None
                await trio.sleep(wait)
                wait = min(wait * 2, _LONGEST_WAIT_S)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)


def _held_too_long(fd: int, path: str, patience: float) -> AirException:
    holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
    who = f"air process {holder}" if holder.isdigit() else "air process"
    return AirException.of(
        kind=ErrorKind.WORKSPACE_ERROR,
        message=(
            f"another {who} has held the project's files for over {patience:.0f} s (a merge, a "
            f"restore or a snapshot; {path}): nothing was changed"
        ),
        user_action=(
            f"If that air is stopped (Ctrl-Z) or hung, resume or end it (kill {holder or 'PID'}); "
            "a task's work is kept in its workspace (git worktree list) to merge by hand."
        ),
    )
