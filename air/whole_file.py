"""A file air writes for the user, written whole or not at all and through no link: the doctor's
bundle, ``--junit``, ``air report --html``, ``air release``'s artefacts and ``SHA256SUMS``.

Owns ``whole_file`` (a handle on a temporary file of this process beside the target, made with
``O_EXCL | O_NOFOLLOW`` and renamed over the target once the caller is done: a link there is
replaced, never followed; on an error nothing is left) and ``write_whole`` (bytes written so).
Found: the fixed ``FILE.tmp`` both reports were written through followed a link someone had put
there (in a project, a task's merged file; in a shared directory, another user), and the report
overwrote the file it named; ``air release`` copied its artefacts through links put in ``DIR``.
Standard library only.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import BinaryIO

__all__ = ["whole_file", "write_whole"]


@contextlib.contextmanager
def whole_file(path: str | os.PathLike[str], mode: int = 0o644) -> Iterator[BinaryIO]:
    """A binary handle whose bytes become the file at ``path`` when the block ends.

    Raises:
        OSError: the directory cannot be written.
    """
    target = os.path.abspath(os.fspath(path))
    tmp = os.path.join(os.path.dirname(target), f".{os.path.basename(target)}.{os.getpid()}.tmp")
    if os.path.lexists(tmp):
        os.unlink(tmp)  # a crashed run's of this pid, or a link put there: removed, not followed
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_whole(path: str | os.PathLike[str], data: bytes) -> None:
    """``data`` as the file at ``path``, replacing what is there (``whole_file``).

    Raises:
        OSError: the directory cannot be written.
    """
    with whole_file(path) as handle:
        handle.write(data)
