"""The read-only view of a task without a write area (IMPL-SBX-3): the workspace under an overlay
whose writes land in the task's view directory, so builds work, later commands of the task see
their outputs, and nothing reaches the project.

Owns ``task_view_dir`` (the view directory of one task: made safely under ``$TMPDIR``, old ones
pruned), ``scratch_dir`` / ``remove_scratch_dir`` (one command's view directory: cpp.test's
build dir behind an overlay whose writes are thrown away, IMPL-CPP-5), the mount script and the
``unshare`` command line that puts a command behind the view (``view_argv``), and
``check_view_available`` (the view's mounts proved to work here, cached).
"""

from __future__ import annotations

import os
import stat
import subprocess
import threading

from air.contracts.error import AirException, ErrorKind
from air.search_path import installed
from air.tree_walk import remove_tree

__all__ = [
    "check_view_available",
    "remove_scratch_dir",
    "scratch_dir",
    "task_view_dir",
    "view_argv",
]

_VIEW_SCRIPT = (
    'mount --bind "$1" "$0/l" '
    '&& mount -t overlay -o "lowerdir=$0/l,upperdir=$0/u,workdir=$0/w,userxattr" air-view "$1" '
    '|| exit 125; shift; exec "$@"'
)
"""Mounts the read-only view, run by root of a fresh user and mount namespace that only the
command's bwrap lives in: the workspace (bound to ``$0/l`` first, so that its path is never
spelled in overlay's comma-separated options) under an overlay whose writes go to the task's
view directory ``$0/u``. Nothing reaches the workspace; the mounts vanish with the command."""

_VIEW_ROOT_PREFIX = "air-views-"
_VIEW_TTL_S = 24 * 3600
"""A task's view directory not used for this long is removed when another one is made."""
_SAFE_PATH = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-")


def _view_problem(message: str) -> AirException:
    return AirException.of(
        kind=ErrorKind.ENVIRONMENT_ERROR,
        message=f"cannot build the read-only view of a task without a write area: {message}",
        user_action=(
            "Install util-linux (unshare, mount), and point TMPDIR at a directory of your own "
            "whose path has only letters, digits and / . _ -"
        ),
    )


def _own_private_dir(path: str) -> None:
    """``path`` exists as a real directory of this uid, mode 0700 (a shared /tmp: another user
    could have made it first, or left a symlink there)."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise _view_problem(f"{path} is not a directory of this user")
    os.chmod(path, 0o700)


_taken_root: dict[str, str] = {}
"""TMPDIR -> this process's own views directory, once another user held the shared name."""


def _views_root(base: str) -> str:
    """``TMPDIR/air-views-<uid>``, this user's; when another user made that name first (a
    shared /tmp on a login node: every read-only task of this user failed), a directory of this
    process made under a random name nobody could take first (``mkdtemp``).

    Raises:
        OSError: neither can be made.
    """
    import tempfile

    root = os.path.join(base, f"{_VIEW_ROOT_PREFIX}{os.getuid()}")
    try:
        _own_private_dir(root)
    except AirException:
        if base not in _taken_root:
            _taken_root[base] = tempfile.mkdtemp(
                prefix=f"{_VIEW_ROOT_PREFIX}{os.getuid()}-", dir=base
            )
        return _taken_root[base]
    return root


def _prune_views(root: str, keep: str) -> None:
    """Remove the view directories under ``root`` not used for ``_VIEW_TTL_S``."""
    import time

    now = time.time()
    for name in os.listdir(root):
        path = os.path.join(root, name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if path == keep or now - info.st_mtime <= _VIEW_TTL_S or not stat.S_ISDIR(info.st_mode):
            continue
        _open_work_dir(path)
        remove_tree(path, ignore_errors=True)  # never follows a link a command left


def _open_work_dir(view_dir: str) -> None:
    """Make overlay's ``w/work`` (mode 000) removable; ``w`` is air's, out of commands' reach."""
    work = os.path.join(view_dir, "w", "work")
    if os.path.isdir(work) and not os.path.islink(work):
        try:
            os.chmod(work, 0o700)
        except OSError:
            pass


def _tmp_base() -> str:
    """``$TMPDIR``'s real path, where view directories are made.

    Raises:
        AirException: ``environment_error`` when overlayfs options cannot carry it.
    """
    import tempfile  # at the first read-only command, not at start-up

    base = os.path.realpath(tempfile.gettempdir())
    if not set(base) <= _SAFE_PATH:
        raise _view_problem(f"TMPDIR {base!r} has characters overlayfs options cannot carry")
    return base


def _own_view_parts(path: str) -> None:
    """The view directory's ``u`` (the overlay's upper), ``w`` (its work) and ``l`` (the
    mount point of what it covers), each this user's alone."""
    for sub in ("u", "w", "l"):
        _own_private_dir(os.path.join(path, sub))


def task_view_dir(workspace: str, session_id: str, task_id: str | None) -> str:
    """The view directory of one task's read-only view of ``workspace`` (made on first use):
    ``u`` holds what the task's commands wrote, ``w`` is overlay's work dir, ``l`` the mount
    point of the workspace. It lives outside the project (overlayfs refuses an upper dir inside
    its lower), under ``$TMPDIR/air-views-<uid>`` (another user's by that name: one of this
    process's, ``_views_root``); one not used for a day is removed.

    Raises:
        AirException: ``environment_error`` when the directory cannot be made safely.
    """
    import hashlib

    base = _tmp_base()
    if _inside(base, os.path.realpath(workspace)):
        raise _view_problem(f"TMPDIR {base!r} is inside the workspace (overlayfs refuses it)")
    key = f"{os.path.realpath(workspace)}\0{session_id}\0{task_id or ''}".encode()
    try:
        root = _views_root(base)
        path = os.path.join(root, hashlib.sha256(key).hexdigest()[:32])
        _prune_views(root, path)
        _own_private_dir(path)
        _own_view_parts(path)
        os.utime(path)
    except OSError as exc:
        raise _view_problem(str(exc)) from exc
    return path


def scratch_dir() -> str:
    """A new view directory (``u``, ``w``, ``l``) for one command only, under the same root as
    the task views: what the command writes under the overlay it backs lands in ``u`` and is
    gone with ``remove_scratch_dir``.

    Raises:
        AirException: ``environment_error`` when it cannot be made safely.
    """
    import tempfile

    base = _tmp_base()
    try:
        path = tempfile.mkdtemp(prefix="scratch-", dir=_views_root(base))
        _own_view_parts(path)
    except OSError as exc:
        raise _view_problem(str(exc)) from exc
    return path


def remove_scratch_dir(path: str) -> None:
    """Remove a ``scratch_dir`` and all a command left in it (never following a link)."""
    _open_work_dir(path)
    remove_tree(path, ignore_errors=True)


_view_checked: list[str] = []
_view_lock = threading.Lock()


def view_argv(unshare: str, view_dir: str, lower: str, argv: list[str]) -> list[str]:
    """``argv`` run behind the overlay view of ``lower`` (``_VIEW_SCRIPT``) in a fresh user and
    mount namespace: the one command line both the probe and every read-only command use."""
    return [
        unshare,
        "--user",
        "--map-root-user",
        "--mount",
        "--propagation",
        "private",
        "/bin/sh",
        "-c",
        _VIEW_SCRIPT,
        view_dir,
        lower,
        *argv,
    ]


def check_view_available() -> str:
    """``unshare``'s path, once the view's mounts proved they work here (cached per process):
    an unprivileged overlay needs Linux 5.11+ and user namespaces."""
    with _view_lock:
        if _view_checked:
            return _view_checked[0]
        unshare = installed("unshare")
        if unshare is None or installed("mount") is None:
            raise _view_problem("unshare or mount (util-linux) is missing")
        import tempfile

        with tempfile.TemporaryDirectory(prefix="air-view-check-") as tmp:
            for sub in ("view/u", "view/w", "view/l", "lower"):
                os.makedirs(os.path.join(tmp, sub))
            argv = view_argv(
                unshare, os.path.join(tmp, "view"), os.path.join(tmp, "lower"), ["/bin/true"]
            )
            try:
                done = subprocess.run(
                    argv, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
                )
                problem = done.stderr.strip() or f"exit code {done.returncode}"
                problem = problem if done.returncode else ""
            except (OSError, subprocess.SubprocessError) as exc:
                problem = str(exc)
            _open_work_dir(os.path.join(tmp, "view"))
        if problem:
            raise _view_problem(f"an overlay cannot be mounted here: {problem[:300]}")
        _view_checked.append(unshare)
        return unshare


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")
