"""Build directories belong to the cpp.* tools: which ones they configured, and who may write them.

Owns ``claim_build_dir`` (what a cpp tool calls before it uses a build directory: one this
process's cpp tools made is used as it is; anything else there, a directory the repository
shipped or a command prepared, is removed and a new empty one made, so that cmake configures it
afresh), ``pin_build_dirs`` (O_PATH fds of the owned directories and of their parents below the
workspace, for a non-cpp command's sandbox: the directories bound read-only, their parents bound
onto themselves so that no command renames them away) and ``refuse_build_dir_write`` (fs.write,
fs.edit and fs.patch never write inside one). A directory is owned by identity (device, inode),
never by name: one swapped in at its path is not owned. Ownership lives in this process; a new
process configures afresh. In the project itself (a task without a workspace of its own) a build
directory already there is the person's: it is adopted as it is (its configuration and its
hours of objects kept), never removed. Removal walks no deeper than one directory at a time
(``air.tree_walk``). Decision IMPL-CPP-5 in docs/decisions.md.
"""

from __future__ import annotations

import errno
import os
import stat

from air.contracts.error import AirException, ErrorKind
from air.tree_walk import dir_beneath, remove_tree

__all__ = ["claim_build_dir", "pin_build_dirs", "refuse_build_dir_write"]

_OWNED: dict[str, dict[str, tuple[int, int, int]]] = {}
"""Workspace realpath → build dir (relative, no symlink in it) → (st_dev, st_ino, fd): the
O_PATH fd stays open so that the inode is never freed and its number never given to another
directory made at the path."""

_DIR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _open_walk(workspace: str, rel: str) -> list[int]:
    """O_PATH fds of each component of ``rel`` under ``workspace``, none through a symlink
    (an empty list when a component is missing or a link). The caller closes them."""
    fds: list[int] = []
    try:
        fds.append(os.open(workspace, _DIR_FLAGS))
        for part in rel.split(os.sep):
            fds.append(os.open(part, _DIR_FLAGS, dir_fd=fds[-1]))
    except OSError:
        for fd in fds:
            os.close(fd)
        return []
    return fds


def _identity(workspace: str, rel: str) -> tuple[int, int] | None:
    fds = _open_walk(workspace, rel)
    try:
        if not fds:
            return None
        st = os.fstat(fds[-1])
        return st.st_dev, st.st_ino
    finally:
        for fd in fds:
            os.close(fd)


def _remove(name: str, parent_fd: int) -> None:
    """Remove ``name`` in the directory ``parent_fd`` without following a link (the tree by
    ``remove_tree`` under the descriptor's own path: a planted tree may be 1,500 deep)."""
    try:
        mode = os.lstat(name, dir_fd=parent_fd).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        remove_tree(f"/proc/self/fd/{parent_fd}/{name}")
    else:
        os.unlink(name, dir_fd=parent_fd)


def claim_build_dir(workspace: str, build_dir: str, *, adopt: bool = False) -> bool:
    """Make ``build_dir`` (``safe_build_dir``'s result) one the cpp tools own; with ``adopt``
    (the workspace is the person's project) a directory already there is owned as it is.

    Returns:
        True when it was already owned (its state is the cpp tools' own) or was adopted as it
        is; False when an empty directory was made for it, after removing whatever was there.

    Raises:
        AirException: ``tool_error`` when it cannot be made; ``policy_error`` when a link
            leads through the path.
    """
    try:
        return _claim(workspace, build_dir, adopt)
    except OSError as exc:
        raise AirException.of(
            kind=ErrorKind.TOOL_ERROR,
            message=f"the build directory {build_dir} could not be made afresh: {exc}",
            user_action="Check the permissions of the workspace, or choose another build_dir.",
        ) from exc


def _forget_gone() -> None:
    """Drop (and close the fd of) every owned dir no longer at its path: a removed worktree's
    dirs would otherwise hold an fd each for the life of the process."""
    for ws, owned in list(_OWNED.items()):
        for rel, (dev, ino, fd) in list(owned.items()):
            if _identity(ws, rel) != (dev, ino):
                os.close(fd)
                del owned[rel]
        if not owned:
            del _OWNED[ws]


def _claim(workspace: str, build_dir: str, adopt: bool) -> bool:
    _forget_gone()
    ws = os.path.realpath(workspace)
    rel = os.path.normpath(build_dir)
    owned = _OWNED.setdefault(ws, {})
    if rel in owned:
        return True
    parent, name = os.path.split(rel)
    try:  # its parents made without following a link, as it is
        above = dir_beneath(ws, parent.split(os.sep) if parent else [], make=True)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        raise AirException.of(
            kind=ErrorKind.POLICY_ERROR,
            message=f"a symlink leads through the build directory {build_dir}",
            user_action="Remove the symlink or choose another build_dir.",
        ) from exc
    try:
        made = _adopted(name, above) if adopt else None
        kept = made is not None
        if made is None:
            _remove(name, above)  # whatever is there, never through a link
            os.mkdir(name, 0o755, dir_fd=above)  # never one that reappeared since
            made = os.open(name, _DIR_FLAGS, dir_fd=above)
    finally:
        os.close(above)
    st = os.fstat(made)
    owned[rel] = (st.st_dev, st.st_ino, made)
    return kept


def _adopted(name: str, parent_fd: int) -> int | None:
    """An O_PATH fd of the directory ``name`` in ``parent_fd`` (never a link), or None."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except OSError:
        return None


def pin_build_dirs(workspace: str) -> list[tuple[str, int, bool]]:
    """(path, O_PATH fd, read_only) of the owned build dirs of ``workspace``, parents first.

    What is at an owned path is bound (never through a link; a dir swapped in is read-only
    too); a parent below the workspace comes with ``read_only`` False, bound onto itself: a
    mount point cannot be renamed, so the build dir never leaves its path while a command runs.
    The caller closes the fds.
    """
    ws = os.path.realpath(workspace)
    pinned: dict[str, tuple[int, bool]] = {}
    for rel in sorted(_OWNED.get(ws, {})):
        fds = _open_walk(ws, rel)
        if not fds:
            continue
        os.close(fds[0])
        parts = rel.split(os.sep)
        for depth, fd in enumerate(fds[1:], start=1):
            path = os.path.join(ws, *parts[:depth])
            if path in pinned:  # a parent seen before (an owned one sorts before its children)
                os.close(fd)
            else:
                pinned[path] = (fd, depth == len(parts))
    return [(path, fd, ro) for path, (fd, ro) in sorted(pinned.items())]


def refuse_build_dir_write(workspace: str, path: str) -> None:
    """Raise when ``path`` (a resolved path) is inside an owned build dir of ``workspace``.

    Raises:
        AirException: ``policy_error``.
    """
    ws = os.path.realpath(workspace)
    for rel in _OWNED.get(ws, {}):
        root = os.path.join(ws, rel)
        if path == root or path.startswith(root + os.sep):
            raise AirException.of(
                kind=ErrorKind.POLICY_ERROR,
                message=f"{os.path.relpath(path, ws)} is in the build directory {rel}, which "
                "only the cpp tools write",
                user_action="Change the sources and run cpp.build; build outputs are never "
                "edited by hand.",
            )
