"""A file air writes for the user written whole or not at all, and through no link (``--junit``,
``--html``, ``air release``'s artefacts and ``SHA256SUMS``).

Owns ``write_whole``: the bytes go to a temporary file of this process beside the target, made
with ``O_EXCL | O_NOFOLLOW``, then renamed over the target (a link there is replaced, never
followed). Found: the fixed ``FILE.tmp`` both reports were written through followed a link
someone had put there (in a project, a task's merged file; in a shared directory, another
user), and the report overwrote the file it named; ``air release`` copied its artefacts through
links put in ``DIR``.
"""

from __future__ import annotations

import contextlib
import os

__all__ = ["write_whole"]


def write_whole(path: str | os.PathLike[str], data: bytes) -> None:
    """``data`` as the file at ``path``, replacing what is there.

    Raises:
        OSError: the directory cannot be written.
    """
    target = os.path.abspath(os.fspath(path))
    tmp = os.path.join(os.path.dirname(target), f".{os.path.basename(target)}.{os.getpid()}.tmp")
    if os.path.lexists(tmp):
        os.unlink(tmp)  # a crashed run's of this pid, or a link put there: removed, not followed
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
