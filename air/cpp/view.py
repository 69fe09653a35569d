"""Where the files of a read-only view live on the host, for the toolchain's own reads.

Owns ``OverlayView`` and ``using_view``/``active_view``. A task without a write area runs its
commands on an overlay of the workspace whose writes land in a per-task upper directory
(IMPL-SBX-3): what cmake or ctest wrote is there, never in the project. ``OverlayView.locate``
says where a workspace path lives now, as the overlay would show it (the upper directory, the
workspace below it, or nowhere: a whiteout, or a directory the view replaced); the file helpers
of ``air.cpp.process`` (``is_plain_file``, ``read_workspace_file``, ``remove_written_file``) and
``mark_build_dir`` consult the view of the cpp tool call in progress (a context variable set
with ``using_view``), so the toolchain reads and marks build directories in the view.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

__all__ = ["OverlayView", "active_view", "using_view"]

_OPAQUE = "user.overlay.opaque"
"""The xattr overlayfs sets (``userxattr`` mounts) on an upper directory that hides the lower."""


def _opaque(path: str) -> bool:
    try:
        return os.getxattr(path, _OPAQUE, follow_symlinks=False) == b"y"
    except OSError:
        return False


@dataclass(frozen=True)
class OverlayView:
    """A workspace (``lower``, a real path) seen through an overlay whose writes are in
    ``upper``."""

    lower: str
    upper: str

    def _relative(self, path: str) -> str | None:
        rel = os.path.relpath(path, self.lower)
        return None if rel == "." or rel == ".." or rel.startswith("../") else rel

    def locate(self, path: str) -> str | None:
        """The host path where ``path`` (inside ``lower``) lives in the view; None when the view
        deleted it. Paths outside ``lower`` are returned as they are."""
        rel = self._relative(path)
        if rel is None:
            return path
        current = self.upper
        parts = rel.split(os.sep)
        for index, part in enumerate(parts):
            current = os.path.join(current, part)
            try:
                info = os.lstat(current)
            except FileNotFoundError:
                return os.path.join(self.lower, rel)  # not in the upper dir: the lower shows
            if stat.S_ISCHR(info.st_mode) and info.st_rdev == 0:
                return None  # a whiteout: deleted in the view
            if index == len(parts) - 1:
                return current
            if not stat.S_ISDIR(info.st_mode) or _opaque(current):
                return os.path.join(self.upper, rel)  # the upper entry hides the lower
        return os.path.join(self.lower, rel)

    def in_upper(self, path: str) -> bool:
        return path == self.upper or path.startswith(self.upper.rstrip("/") + "/")

    def writable(self, path: str) -> str:
        """Where to write ``path`` (inside ``lower``) so that the view shows it."""
        rel = self._relative(path)
        return path if rel is None else os.path.join(self.upper, rel)


_VIEW: ContextVar[OverlayView | None] = ContextVar("air_cpp_view", default=None)


def active_view() -> OverlayView | None:
    """The view of the cpp tool call in progress (None: it works in the workspace itself)."""
    return _VIEW.get()


@contextlib.contextmanager
def using_view(view: OverlayView | None) -> Iterator[None]:
    """Within the block, the toolchain's file helpers see ``view`` (None: the workspace)."""
    token = _VIEW.set(view)
    try:
        yield
    finally:
        _VIEW.reset(token)
