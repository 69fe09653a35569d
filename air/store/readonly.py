"""How a reader opens a database it must not write (``air history``, ``air session list``, the
console's list, ``air report``'s first reads): ``read_only_uri``.

SQLite opens a WAL database read-only only where it can make the ``-shm`` index beside it: on a
read-only file system (an archived project, a read-only mount) every reader failed with
"unable to open database file", which the full open then took for corruption. On a file
system mounted read-only (nothing can write the file) with no ``-wal`` file (the database file
alone is the whole state) the reader opens it ``immutable``; a directory merely not writable
by this user may have a writer, so it is read as before. Standard library only: the readers
start without pydantic.
"""

from __future__ import annotations

import os

__all__ = ["read_only_mount", "read_only_uri"]


def read_only_uri(path: str | os.PathLike[str]) -> str:
    """The ``sqlite3.connect(..., uri=True)`` address of ``path`` for reading only."""
    spath = os.fspath(path)
    if read_only_mount(os.path.dirname(spath) or ".") and not os.path.lexists(f"{spath}-wal"):
        return f"file:{spath}?immutable=1"
    return f"file:{spath}?mode=ro"


def read_only_mount(directory: str) -> bool:
    """Whether ``directory``'s file system is mounted read-only (nothing can write there)."""
    try:
        return bool(os.statvfs(directory).f_flag & os.ST_RDONLY)
    except OSError:
        return False
