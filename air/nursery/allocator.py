"""Giving the C allocator's free memory back to the system (IMPL-RSS-1).

Owns ``release_free_memory``: glibc's ``malloc_trim(0)``, called through ctypes. CPython's objects
over 512 bytes, SQLite's pages and a snapshot's 64 KiB parts come from ``malloc``; what is freed
inside its heap stays in the process (glibc returns only the heap's top, and only past a
threshold). The session's ledger calls this after each fold snapshot it stores, a quiet point
that comes every ``SNAPSHOT_EVERY`` events: at 10,000 review tasks the heap held 6.8 MiB freed
but resident (``mallinfo2``), and a trim took the resident set down by as much, in under a
millisecond (``bench/results.md``, "third pass").
Elsewhere (macOS, musl) there is no ``malloc_trim`` and this does nothing.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable
from functools import cache

__all__ = ["release_free_memory"]


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None where the C library has none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError):  # musl: no such symbol
        return None
    return trim


def release_free_memory() -> bool:
    """Return the allocator's free pages to the system (the heap's data stays as it is).

    Returns:
        Whether a trim was made (False where the C library cannot).
    """
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)  # 0: keep no slack at the heap's top
    return True
