"""What the ``air`` command does before it imports anything else: its search paths hold only
absolute entries (``air.search_path.own_search_paths``, IMPL-PATH-1), so not even the standard
library modules ``air.cli`` imports next (``re``, ``typing``) can come from a ``PYTHONPATH``
entry that names the directory air starts in; and its standard streams can be written
whatever air writes (``standard_streams``). Imported first by ``air.cli``; importing it twice
does nothing more."""

from __future__ import annotations

import io
import os
import sys

from air.search_path import own_search_paths

__all__ = ["standard_streams"]


def standard_streams() -> None:
    """A standard descriptor closed when air started (``air history >&-``, a job with no
    output) is ``/dev/null``, and its ``sys`` stream writes there: the stream was ``None`` (the
    first write ended in a traceback), and the first file air opened took the number. Standard
    output and error write a character their encoding lacks escaped (``\\u2014``) instead of
    raising: in a terminal of a non-UTF-8 locale (or ``PYTHONIOENCODING=ascii``) ``air --help``
    and ``air history`` ended in a traceback at their first dash or quote."""
    for fd, name, flags in (
        (0, "stdin", os.O_RDONLY),
        (1, "stdout", os.O_WRONLY),
        (2, "stderr", os.O_WRONLY),
    ):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, flags)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            if getattr(sys, name) is None:
                setattr(sys, name, open(fd, "r" if fd == 0 else "w", closefd=False))
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict":
            stream.reconfigure(errors="backslashreplace")


own_search_paths()
standard_streams()
