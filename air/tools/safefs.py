"""Reads and writes that cannot escape the checked path, even if a symlink is swapped in.

Owns ``write_beneath``, ``read_beneath``, ``open_beneath``, ``read_fd`` and ``list_fd``: every
path component is opened relative to the previous directory's file descriptor with
``O_NOFOLLOW``, and the file is replaced by an atomic rename inside its directory fd, so a
symlink planted between the permission check and the write makes the write fail instead of
landing outside (SDD §18.5; issue #4 item 3). Reads open the object once through the same walk
and read from that descriptor, so what is read is what was checked (issue #9 item 6).
"""

from __future__ import annotations

import errno
import heapq
import os
import secrets
import stat
from collections.abc import Iterator

from air.contracts.error import AirException, ErrorKind
from air.tree_walk import dir_beneath

__all__ = [
    "READ_MAX",
    "list_fd",
    "open_beneath",
    "read_beneath",
    "read_bounded",
    "read_fd",
    "relative_parts",
    "write_beneath",
]

READ_MAX = 32 << 20
"""The most of one file air's file tools read into the parent (fs.read, fs.edit, fs.patch,
fs.write's diff, a review's diff, fs.search's files): a larger one is refused, never loaded
(IMPL-FS-2). A task makes an 8 GiB sparse file in a moment; read whole, 1 GiB of it took the
parent to 2.1 GB."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _escape(path: str, why: str, verb: str = "write") -> AirException:
    return AirException.of(
        kind=ErrorKind.PERMISSION_DENIED,
        message=f"refused to {verb} {path}: {why}",
        user_action=f"{verb.capitalize()} only regular files and directories, not through links.",
    )


def relative_parts(root: str, path: str, verb: str = "write") -> list[str]:
    """Split ``path`` (absolute, or relative to ``root``) into components below ``root``.

    Raises:
        AirException: ``permission_denied`` when the path is not lexically below ``root``.
    """
    root_real = os.path.realpath(root)
    absolute = path if os.path.isabs(path) else os.path.join(root_real, path)
    rel = os.path.relpath(os.path.normpath(absolute), root_real)
    parts = [p for p in rel.split(os.sep) if p not in ("", ".")]
    if not parts or parts[0] == ".." or ".." in parts:
        raise _escape(path, "it is not inside the workspace", verb)
    return parts


def _open_parent(
    root: str, parts: list[str], *, create: bool, path: str, verb: str = "write"
) -> int:
    try:
        return dir_beneath(os.path.realpath(root), parts[:-1], make=create)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            why = f"{exc.filename!r} is a symlink or not a directory"
            raise _escape(path, why, verb) from exc
        raise


def write_beneath(root: str, path: str, data: bytes, *, create_parents: bool = True) -> None:
    """Atomically replace ``path`` under ``root`` with ``data`` without following any link.

    Raises:
        AirException: ``permission_denied`` when a component is a symlink, the target is a
            symlink or a hardlinked file, or the path leaves ``root``.
    """
    parts = relative_parts(root, path)
    name = parts[-1]
    dfd = _open_parent(root, parts, create=create_parents, path=path)
    tmp = f".{name}.air-{secrets.token_hex(6)}.tmp"
    created = False  # only the temporary file this call created is removed on failure
    try:
        mode = 0o644
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None:
            if stat.S_ISLNK(st.st_mode):
                raise _escape(path, "the target is a symlink")
            if not stat.S_ISREG(st.st_mode):
                raise _escape(path, "the target is not a regular file")
            if st.st_nlink > 1:
                raise _escape(path, "the target has other hard links")
            mode = stat.S_IMODE(st.st_mode)
        fd = os.open(
            tmp,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            mode,
            dir_fd=dfd,
        )
        created = True
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException:
        if created:
            try:
                os.unlink(tmp, dir_fd=dfd)
            except OSError:
                pass
        raise
    finally:
        os.close(dfd)


def read_beneath(root: str, path: str) -> bytes | None:
    """Read ``path`` under ``root`` without following links; None when it does not exist.

    Raises:
        AirException: ``permission_denied`` for a link, or anything but a regular file (a FIFO
            would block the reader forever).
    """
    parts = relative_parts(root, path, "read")
    try:
        dfd = _open_parent(root, parts, create=False, path=path, verb="read")
    except FileNotFoundError:
        return None
    try:
        try:
            fd = os.open(
                parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd
            )
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _escape(path, "the target is a symlink", "read") from exc
            raise
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise _escape(path, "the target is not a regular file", "read")
        return read_bounded(fd, path)
    finally:
        os.close(dfd)


def read_bounded(fd: int, path: str) -> bytes:
    """``read_fd`` of a regular file of at most ``READ_MAX`` bytes (one growing past it while
    read is refused too); closes ``fd``.

    Raises:
        AirException: ``tool_error`` naming the file's size and how to read parts of it.
    """
    size = os.fstat(fd).st_size
    if size > READ_MAX:
        os.close(fd)
    else:
        data = read_fd(fd, READ_MAX + 1)
        if len(data) <= READ_MAX:
            return data
        size = len(data)  # it grew while read
    raise AirException.of(
        kind=ErrorKind.TOOL_ERROR,
        message=(
            f"{path} is {size / (1 << 20):.0f} MiB: over the {READ_MAX >> 20} MiB air's file "
            "tools read"
        ),
        user_action=(
            "Read parts of it with shell.run (head, tail, sed -n 'A,Bp', grep), or change it "
            "with a command."
        ),
    )


def open_beneath(root: str, path: str, *, directory: bool = False) -> int:
    """Open ``path`` under ``root`` for reading without following any link; return the fd.

    ``path`` may be ``root`` itself (``directory=True``). Every component is opened relative to
    its parent's descriptor with ``O_NOFOLLOW``, so the object opened is the one at the lexical
    path that was checked: a symlink swapped in anywhere on the way makes the open fail.

    Raises:
        AirException: ``permission_denied`` when a component or the target is a symlink, the
            target is not a regular file (or not a directory with ``directory=True``), or the
            path leaves ``root``.
        FileNotFoundError: when a component does not exist.
    """
    root_real = os.path.realpath(root)
    absolute = path if os.path.isabs(path) else os.path.join(root_real, path)
    if os.path.normpath(absolute) == root_real:
        if not directory:
            raise _escape(path, "it is a directory", "read")
        return os.open(root_real, _DIR_FLAGS)
    parts = relative_parts(root_real, path, "read")
    dfd = _open_parent(root_real, parts, create=False, path=path, verb="read")
    try:
        flags = _DIR_FLAGS if directory else os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(parts[-1], flags | os.O_NONBLOCK, dir_fd=dfd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _escape(path, "the target is a symlink", "read") from exc
            if exc.errno == errno.ENOTDIR:
                raise _escape(path, "it is a symlink or not a directory", "list") from exc
            raise
    finally:
        os.close(dfd)
    st = os.fstat(fd)
    wanted = stat.S_ISDIR if directory else stat.S_ISREG
    if not wanted(st.st_mode):
        os.close(fd)
        what = "a directory" if directory else "a regular file"
        raise _escape(path, f"it is not {what}", "read")
    return fd


def read_fd(fd: int, limit: int | None = None) -> bytes:
    """Read an open regular file from its start (at most ``limit`` bytes) and close it."""
    try:
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        total = 0
        while limit is None or total < limit:
            chunk = os.read(fd, 1 << 20 if limit is None else min(1 << 20, limit - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def list_fd(fd: int, limit: int | None = None) -> tuple[list[tuple[str, str]], int]:
    """List an open directory and close it: its first ``limit`` entries by name (all without
    a limit) as sorted (name, ``file``/``dir``/``link``) pairs, and how many it holds.

    A directory of millions of entries costs one read of its names and ``limit`` of them kept:
    sorting all of them and ``lstat``-ing each to show 2,000 held them all in the parent (500k:
    1.2 s, 69 MiB). Entry types come from ``lstat`` relative to the directory descriptor, so a
    link is reported as a link and never followed.
    """
    try:
        total = 0

        def names() -> Iterator[str]:
            nonlocal total
            with os.scandir(fd) as entries:
                for entry in entries:
                    total += 1
                    yield entry.name

        chosen = sorted(names()) if limit is None else heapq.nsmallest(limit, names())
        out: list[tuple[str, str]] = []
        for name in chosen:
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            if stat.S_ISLNK(st.st_mode):
                kind = "link"
            elif stat.S_ISDIR(st.st_mode):
                kind = "dir"
            else:
                kind = "file"
            out.append((name, kind))
        return out, total
    finally:
        os.close(fd)
