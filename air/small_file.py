"""Small files someone else may have chosen, read without hanging and without filling memory
(IMPL-TRUST-5).

Owns ``read_small`` and ``open_regular``, how air reads a configuration or state file whose
kind and size it did not choose: a project's ``.air/shared/project.json``, its trust-relevant
files (``models.yaml``, ``permissions.yaml``, ``AGENTS.md``, rules), the user's ``~/.air``
configuration, agent files, a batch file. Found: a cloned repository's 3 GiB ``project.json``
(or ``AGENTS.md``) was read whole by every command: ~30 s and 6 GiB of memory to refuse it, the
kernel's OOM killer on a smaller machine; a named pipe made where ``~/.air/models.yaml`` was
(``mkfifo``, a process substitution a dotfiles script left) had every command, ``air doctor``
too, wait forever.

The file is opened with ``O_NONBLOCK`` (a FIFO opens at once instead of waiting for a writer)
and ``O_NOCTTY``, and ``fstat`` of what was opened decides: anything but a regular file (a
FIFO, a device such as ``/dev/zero``, a socket, a directory) is refused before any read, and so
is a file larger than the reader's limit; what is read is bounded by the limit too (a file that
grows while read). Refusals are ``OSError``s with an ``errno`` and a ``strerror`` that say what
was found, so every reader's ``except OSError`` reports them as it reports an unreadable file.
Standard library only.
"""

from __future__ import annotations

import errno
import os
import stat

__all__ = ["MAX_BYTES", "NotRegular", "TooLarge", "open_regular", "read_small"]

MAX_BYTES = 4 * 1024 * 1024
"""The largest configuration file air reads: the YAML loader takes at most 1 Mi characters
(``air.yamlload.MAX_CHARS``), at most 4 MiB of UTF-8; a prompt file is cut far below that."""

_KINDS = (
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


class _Refused(OSError):
    def __str__(self) -> str:
        """What was found, as readers quote an error after the path they name."""
        return str(self.strerror)


class NotRegular(_Refused):
    """What was opened is no regular file."""


class TooLarge(_Refused):
    """The file holds more than its reader reads."""


def _size(count: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} bytes"


def _too_large(path: str, size: int, max_bytes: int) -> TooLarge:
    said, limit = _size(size), _size(max_bytes)
    if said == limit:  # just past it: 4.0 MiB is not more than 4.0 MiB
        said = f"{size:,} bytes"
    return TooLarge(
        errno.EFBIG,
        f"{said}, more than the {limit} air reads of such a file; none of it was read",
        path,
    )


def open_regular(path: str | os.PathLike[str], *, follow: bool = True, exact: bool = False) -> int:
    """A descriptor of the regular file at ``path``, opened without waiting on a FIFO's writer
    or making a terminal the controlling one (``follow=False``: a link there is refused, ELOOP).
    ``exact``: ``path`` is a real path its caller checked (inside a project, no protected file)
    and what is opened must be that file: a link put at it, or at a directory above it, since
    the check (a command running beside air) is refused (ELOOP), never followed.

    Raises:
        FileNotFoundError: nothing is there.
        NotRegular: something else than a regular file is.
        OSError: it cannot be opened.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    fd = os.open(path, flags if follow and not exact else flags | os.O_NOFOLLOW)
    try:
        if exact and os.readlink(f"/proc/self/fd/{fd}") != os.path.abspath(path):
            said = "a link where the file was checked; none of it was read"
            raise _Refused(errno.ELOOP, said, os.fspath(path))
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "no regular file")
            raise NotRegular(errno.EINVAL, f"{kind}, not a regular file; none of it was read", path)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_small(
    path: str | os.PathLike[str],
    max_bytes: int = MAX_BYTES,
    *,
    follow: bool = True,
    exact: bool = False,
) -> bytes:
    """The bytes of the regular file at ``path``, at most ``max_bytes`` of them (``follow``,
    ``exact``: as ``open_regular``).

    Raises:
        FileNotFoundError: nothing is there.
        NotRegular: something else than a regular file is.
        TooLarge: it holds more than ``max_bytes`` (by its size, or by what a read found).
        OSError: it cannot be opened or read.
    """
    fd = open_regular(path, follow=follow, exact=exact)
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(fd).st_size
        if size > max_bytes:
            raise _too_large(os.fspath(path), size, max_bytes)
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise _too_large(os.fspath(path), len(data), max_bytes)
    return data
