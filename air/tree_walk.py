"""Directory trees of any depth, which someone else chose: walked, made and removed without
recursion.

Owns ``walk`` (``os.walk(top)``: top-down, links to directories listed among the directories
but not entered, unreadable directories skipped, ``dirnames`` prunable in place) on an explicit
stack; ``walk_fd`` (the same as ``os.fwalk``, one directory descriptor open at a time: down by
``openat``, up by ``..``, each step up checked); ``walk_files`` (``rglob("*" + suffix)``'s
files); ``make_dirs`` (``os.makedirs(path, exist_ok=True)``, a level at a time);
``dir_beneath`` (a directory below a root that someone else can write, opened and made a
component at a time without following a link, for a write that must land there) and
``remove_tree`` (``shutil.rmtree``, one directory descriptor open at a time, each step down
and up checked: it never follows a link, and a tree deeper than ``PATH_MAX`` goes too).
Python 3.11's ``os.walk``, ``os.fwalk``, ``os.makedirs``, ``shutil.rmtree``, ``copytree`` and
``Path.rglob`` recurse once per level: a task's command that made a tree 1,500 directories
deep (``mkdir d; cd d`` in a loop) had the parent's next walk of it (a merge, a credential
scan, a backup, fs.search, the cleanup) raise ``RecursionError`` and end the run with a
traceback. Standard library only.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

__all__ = ["dir_beneath", "make_dirs", "remove_tree", "walk", "walk_fd", "walk_files"]

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def walk(top: str) -> Iterator[tuple[str, list[str], list[str]]]:
    """``(dirpath, dirnames, filenames)`` for ``top`` and each directory below it, in
    ``os.walk``'s order; ``dirnames`` may be pruned in place before the walk goes on."""
    stack = [os.fspath(top)]
    while stack:
        where = stack.pop()
        try:
            dirs, files = _listed(where)
        except OSError:
            continue
        yield where, dirs, files
        for name in reversed(dirs):
            path = os.path.join(where, name)
            if not os.path.islink(path):
                stack.append(path)


def walk_fd(top: int) -> Iterator[tuple[str, list[str], list[str], int]]:
    """``os.fwalk(".", dir_fd=top)``: ``(dirpath, dirnames, filenames, dirfd)`` top-down, paths
    from ``"."``; a link to a directory is listed among the directories but never entered;
    ``dirnames`` may be pruned in place. ``dirfd`` is valid until the next step; ``top`` stays
    open (the caller's). The walk ends where a directory it left was moved meanwhile (its way
    back up no longer leads where it came from)."""
    fd = os.open(".", _DIR, dir_fd=top)
    # one frame per directory on the way down: its (device, inode), its path and the names
    # of the directories in it still to enter
    frames: list[tuple[tuple[int, int], str, list[str]]] = []
    path = "."
    try:
        while True:
            info = os.fstat(fd)
            try:
                dirs, files = _listed(fd)
            except OSError:  # unreadable: not listed, as os.fwalk skips it
                dirs = []
            else:
                yield path, dirs, files, fd
            frames.append(((info.st_dev, info.st_ino), path, dirs[::-1]))
            while frames:
                _, here, pending = frames[-1]
                down = _enter(fd, pending)
                if down is not None:
                    os.close(fd)
                    fd, path = down
                    path = os.path.join(here, path)
                    break
                frames.pop()
                if not frames:
                    return
                fd, above = _up(fd)
                if above != frames[-1][0]:
                    return  # moved while it was walked: the rest is not where it was
    finally:
        os.close(fd)


def _listed(where: int | str) -> tuple[list[str], list[str]]:
    """The names in the directory ``where`` (a path or an open descriptor): its directories
    (links to them too), then the rest.

    Raises:
        OSError: it cannot be listed.
    """
    dirs: list[str] = []
    files: list[str] = []
    with os.scandir(where) as entries:
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            (dirs if is_dir else files).append(entry.name)
    return dirs, files


def _up(fd: int) -> tuple[int, tuple[int, int]]:
    """The parent of the open directory ``fd`` (closed here) and its (device, inode): the
    caller checks it is the directory it came down from."""
    up = os.open("..", _DIR, dir_fd=fd)
    os.close(fd)
    above = os.fstat(up)
    return up, (above.st_dev, above.st_ino)


def _enter(fd: int, pending: list[str]) -> tuple[int, str] | None:
    """The next of ``pending`` (names in ``fd``, last first) that opens as a directory without
    following a link: its descriptor and name; None when none is left."""
    while pending:
        name = pending.pop()
        try:
            return os.open(name, _DIR, dir_fd=fd), name
        except OSError:  # a link (O_NOFOLLOW), gone, unreadable
            continue
    return None


def walk_files(top: str, suffix: str) -> list[str]:
    """Every file (or link to one) below ``top`` whose name ends with ``suffix``, as paths:
    ``Path(top).rglob("*" + suffix)`` restricted to files, without its recursion."""
    return [
        os.path.join(dirpath, name)
        for dirpath, _, filenames in walk(top)
        for name in filenames
        if name.endswith(suffix)
    ]


def make_dirs(path: str, mode: int = 0o777) -> None:
    """``os.makedirs(path, mode, exist_ok=True)``: the missing directories, outermost first.

    Raises:
        FileExistsError: something other than a directory is in the way.
    """
    missing: list[str] = []
    current = os.fspath(path)
    while current and not os.path.isdir(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, mode)
        except FileExistsError:
            if not os.path.isdir(directory):
                raise


def dir_beneath(
    root: str, parts: Sequence[str], *, make: bool = False, clear: bool = False, mode: int = 0o755
) -> int:
    """A descriptor of the directory ``root/parts...``, each component opened relative to the
    one above it without following a link, and made (``mode``) when missing with ``make``; with
    ``clear`` too, a link or a file in the way is removed and the directory made in its place.
    ``root`` is a real path the caller trusts; below it, a link put in the way (by a command
    running beside air, after the caller's check) is refused, never followed, so what is then
    written through the descriptor lands below ``root`` or nowhere. The caller closes it.

    Raises:
        OSError: ``ENOTDIR`` (the component's name as ``filename``) for a link or a file in
            the way; ``FileNotFoundError`` for a missing one without ``make``.
    """
    fd = os.open(root, _DIR)
    try:
        for part in parts:
            try:
                below = os.open(part, _DIR, dir_fd=fd)
            except (FileNotFoundError, NotADirectoryError) as exc:
                if not make or (isinstance(exc, NotADirectoryError) and not clear):
                    raise
                if isinstance(exc, NotADirectoryError):
                    os.unlink(part, dir_fd=fd)  # the link itself, never what it names
                try:
                    os.mkdir(part, mode, dir_fd=fd)
                except FileExistsError:
                    pass  # made meanwhile: opened (and checked) as any other
                below = os.open(part, _DIR, dir_fd=fd)
            os.close(fd)
            fd = below
    except BaseException:
        os.close(fd)
        raise
    return fd


class _Moved(OSError):
    """A directory being removed was moved (or swapped for another) meanwhile."""


def remove_tree(path: str, *, ignore_errors: bool = False) -> None:
    """``shutil.rmtree(path, ignore_errors)`` at any depth: the directory ``path`` and
    everything below it, never following a link (a link is removed, not its target); a
    directory its owner made unreadable or unwritable is made the owner's again on the way.

    Raises:
        OSError: (without ``ignore_errors``) ``path`` is missing, a link or no directory, or
            something could not be removed.
    """
    try:
        _remove_tree(os.fspath(path))
    except OSError:
        if not ignore_errors:
            raise


def _remove_tree(path: str) -> None:
    fd = os.open(path, _DIR)
    # one frame per directory on the way down: its (device, inode), the names of the
    # directories in it still to remove, and its own name in its parent
    frames: list[tuple[tuple[int, int], list[str], str]] = []
    name = ""
    try:
        while True:
            info = os.fstat(fd)
            if not frames or frames[-1][0] != (info.st_dev, info.st_ino):
                frames.append(((info.st_dev, info.st_ino), _empty_but_dirs(fd), name))
            _, pending, name = frames[-1]
            if pending:
                child = pending.pop()
                try:
                    down = os.open(child, _DIR, dir_fd=fd)
                except PermissionError:  # a directory its owner made unreadable
                    os.chmod(child, 0o700, dir_fd=fd)
                    down = os.open(child, _DIR, dir_fd=fd)
                except FileNotFoundError:
                    continue
                os.close(fd)
                fd, name = down, child
                continue
            frames.pop()
            if not frames:
                break
            fd, above = _up(fd)
            if above != frames[-1][0]:
                raise _Moved(f"{path}: a directory below it was moved while it was removed")
            os.rmdir(name, dir_fd=fd)
    finally:
        os.close(fd)
    os.rmdir(path)


def _empty_but_dirs(fd: int) -> list[str]:
    """Remove every entry of the open directory ``fd`` but its directories; their names."""
    try:
        return _unlink_all_but_dirs(fd)
    except PermissionError:  # a directory its owner made unwritable
        os.fchmod(fd, 0o700)
        return _unlink_all_but_dirs(fd)


def _unlink_all_but_dirs(fd: int) -> list[str]:
    dirs: list[str] = []
    with os.scandir(fd) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                dirs.append(entry.name)
            else:
                os.unlink(entry.name, dir_fd=fd)
    return dirs
