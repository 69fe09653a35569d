"""Whose ``.air/local`` it is: the state air recorded in this directory, or someone else's.

Owns the owner mark ``.air/local/owner`` (the inode number of the ``.air/local`` directory air
made, or the user adopted), ``foreign_local_state`` (why a project's ``.air/local`` is not air's
own here; ``refuse_foreign_state`` raises it, for ``air doctor``), ``mark_local_state``
(``ProjectStore``: a new or empty one is claimed, kept its owner's alone, ``keep_private``,
and out of the user's ``git clean -fdx``, ``keep_out_of_git_clean``), ``claim_local_state``
(the runtime, ``air memory`` and ``air restore`` before they read or write that state: a
foreign one is refused) and ``adopt_local_state`` (``air trust``: the user says it is
theirs). IMPL-TRUST-3.

A project that came as a tarball, a zip or a copy can hold ``.air/local`` as plain files, which
no git ``HEAD`` tells of (``air.workspace.tracked_state`` is the check for a clone): sessions
air never ran, offered for resuming; knowledge whose "fixes" reach a debugger's prompt and,
repeated, a rule file air trusts; backups ``air restore`` writes into the tree. Unpacking or
copying makes a new directory with a new inode, which a shipped mark cannot name; moving the
project within its file system keeps it. A ``.air/local`` that holds no file yet has nothing
to trust and is claimed as it is. Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import stat
from typing import TYPE_CHECKING

from air.tree_walk import walk

if TYPE_CHECKING:  # imported where raised: the light readers start without pydantic
    from air.contracts.error import AirException

__all__ = [
    "MARK",
    "adopt_local_state",
    "claim_local_state",
    "foreign_local_state",
    "keep_out_of_git_clean",
    "keep_private",
    "mark_local_state",
    "refuse_foreign_state",
]

MARK = "owner"
"""The mark's file name in ``.air/local``."""
PRIVATE = 0o700
"""``.air/local``'s mode: its owner's alone (``keep_private``)."""
_GUARD_HEAD = b"ref: refs/heads/air-local-state\n"
_GUARD = os.path.join(".git", "HEAD")
"""The one file of ``keep_out_of_git_clean``'s git directory: not state (``_first_file``)."""
_FORMAT = "air-local-owner 1 {inode}\n"
_MAX_MARK = 100


def _local(root: str) -> str:
    return os.path.join(root, ".air", "local")


def _marked_inode(local: str) -> int | None:
    """The inode the mark names; None when there is no readable mark."""
    try:
        fd = os.open(os.path.join(local, MARK), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        words = os.read(fd, _MAX_MARK).decode("ascii", "replace").split()
    finally:
        os.close(fd)
    if len(words) != 3 or words[:2] != ["air-local-owner", "1"] or not words[2].isdigit():
        return None
    return int(words[2])


def _first_file(local: str) -> str | None:
    """The first file found under ``local`` other than the mark (and a crashed writer's temporary
    copy of it), relative, without following a link; None when it holds only directories."""
    for top, dirs, files in walk(local):
        for name in files:
            found = os.path.relpath(os.path.join(top, name), local)
            if found == _GUARD:
                continue
            if top != local or (name != MARK and not name.startswith(f"{MARK}.")):
                return found
        dirs.sort()
    return None


def _state(root: str) -> tuple[os.stat_result | None, str | None]:
    """``.air/local``'s own stat (None: absent, or no directory: ``check_local_state`` refuses
    that) and why it is foreign (None: it is air's own here, or holds nothing)."""
    local = _local(root)
    try:
        info = os.lstat(local)
    except FileNotFoundError:
        return None, None
    if not stat.S_ISDIR(info.st_mode):
        return None, None
    marked = _marked_inode(local)
    if marked == info.st_ino:
        return info, None
    found = _first_file(local)
    if found is None:
        return info, None
    if marked is None:
        return info, f"it has no owner mark (an older air's, or unpacked) and holds {found}"
    return info, f"it was copied, unpacked or restored from elsewhere and holds {found}"


def foreign_local_state(root: str) -> str | None:
    """Why ``root``'s ``.air/local`` is not the state air recorded here; None when it is (or
    holds no file, or does not exist)."""
    return _state(root)[1]


def _write_mark(local: str, inode: int) -> None:
    path = os.path.join(local, MARK)
    temp = f"{path}.{os.getpid()}.tmp"
    try:  # a crashed writer's, by the pid it reused
        os.unlink(temp)
    except FileNotFoundError:
        pass
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        os.write(fd, _FORMAT.format(inode=inode).encode("ascii"))
    finally:
        os.close(fd)
    os.replace(temp, path)


def _refusal(root: str, why: str) -> AirException:
    from air.contracts.error import AirException

    local = _local(root)
    return AirException.of(
        kind="untrusted_config",
        message=(
            f"{local} was not made by air here ({why}): its sessions, knowledge and backups "
            "are not ones air recorded, and air neither resumes nor learns from them"
        ),
        user_action=(
            "If it is your own (an older air made it, or you copied, unpacked or restored the "
            f"project), keep it: `air trust {root}`. Otherwise move it away: `mv {local} "
            f"{local}.foreign` (air makes a new one)."
        ),
    )


def refuse_foreign_state(root: str) -> None:
    """Refuse ``root``'s ``.air/local`` when it holds state air did not record here (reads
    only: ``air doctor``).

    Raises:
        AirException: ``untrusted_config`` naming a file it holds and the two ways on.
    """
    why = foreign_local_state(root)
    if why is not None:
        raise _refusal(root, why)


def mark_local_state(root: str) -> str | None:
    """Make ``root``'s ``.air/local`` air's own here when it is absent, holds nothing yet or is
    marked already (``ProjectStore.open``: before anything of air's writes there); why it is
    foreign otherwise, leaving it as it is."""
    info, why = _state(root)
    if why is not None:
        return why
    local = _local(root)
    if info is None:
        try:
            os.mkdir(local, PRIVATE)
        except FileExistsError:  # another process made it, or a link stands there
            return foreign_local_state(root)
        info = os.lstat(local)
    if _marked_inode(local) != info.st_ino:
        _write_mark(local, info.st_ino)
    keep_private(local, info)
    keep_out_of_git_clean(local)
    return None


def keep_out_of_git_clean(local: str) -> None:
    """Give ``local`` a git directory of its own (``HEAD``, ``objects/``, ``refs/``; nothing is
    ever committed there): the user's ``git clean -fdx`` and ``git stash --all`` take the
    ignored directories of their project with them, and ``.air/local`` is one (its sessions,
    knowledge, a task's worktree), but leave a directory git sees as another repository alone.
    A ``.git`` that is anything else (a file, a link) is left as it is."""
    with contextlib.suppress(OSError):  # a file system that refuses: no guard, nothing lost
        _git_dir_of_its_own(os.path.join(local, ".git"))


def _git_dir_of_its_own(guard: str) -> None:
    try:
        os.mkdir(guard, PRIVATE)
    except FileExistsError:
        if not stat.S_ISDIR(os.lstat(guard).st_mode):
            return
    for sub in ("objects", "refs"):
        with contextlib.suppress(FileExistsError):
            os.mkdir(os.path.join(guard, sub), PRIVATE)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(os.path.join(guard, "HEAD"), flags, 0o600)
    except FileExistsError:
        return
    try:
        os.write(fd, _GUARD_HEAD)
    finally:
        os.close(fd)


def keep_private(local: str, info: os.stat_result) -> None:
    """``local`` (a real directory, ``info`` its ``lstat``) open to its owner only when this
    process's user owns it: it holds the conversations, command output, knowledge and backups
    (the project's ``.env`` among a snapshot's ignored files), which another user of a shared
    machine must not read through a project directory they can enter."""
    if info.st_uid != os.geteuid() or not stat.S_IMODE(info.st_mode) & 0o077:
        return
    try:
        fd = os.open(local, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            os.fchmod(fd, stat.S_IMODE(os.fstat(fd).st_mode) & PRIVATE)
        finally:
            os.close(fd)
    except OSError:  # a file system without Unix modes (vfat, an SMB share): as it allows
        pass


def claim_local_state(root: str) -> None:
    """``mark_local_state``, refusing a ``.air/local`` that holds state air did not record
    here (the runtime, ``air memory``, ``air restore``).

    Raises:
        AirException: ``untrusted_config`` naming a file it holds and the two ways on.
    """
    why = mark_local_state(root)
    if why is not None:
        raise _refusal(root, why)


def adopt_local_state(root: str) -> None:
    """Mark ``root``'s ``.air/local`` as air's own here, whatever it holds (the user's word)."""
    info, _ = _state(root)
    if info is not None:
        _write_mark(_local(root), info.st_ino)
