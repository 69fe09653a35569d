"""The trust tests' way to run ``air``: in a project, with its own HOME, as root or as an
unprivileged user (``user``: its uid and gid, no other group), forked from that user's warm air
(tests/forked_air.py), over examples/calc and its cassettes (``RUN``); and how many events each
session in a ``.air/local`` holds."""

from __future__ import annotations

import contextlib
import os
import site
import sqlite3
import subprocess
from pathlib import Path

from tests.forked_air import shared

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "calc"
RUN = ("run", "--headless", "batch.yaml", "--cassette", "cassettes")


def air_as(
    root: Path, home: Path, *args: str, user: int | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m air.cli ARGS`` in ``root`` with ``HOME=home``, as ``user`` (None: this one),
    forked from that user's shared warm air (tests/forked_air.py): the refusals under test are
    the command's, not its interpreter's start."""
    env = {
        **os.environ,
        "HOME": str(home),
        "PYTHONPATH": os.pathsep.join([str(REPO), *site.getsitepackages()]),
    }
    return shared(user).run(args, cwd=root, env=env, timeout=120)


def session_events(local: Path) -> dict[str, int]:
    """Session id -> its event count, for every session database under ``local``."""
    counts = {}
    for db in sorted(local.glob("sessions/*/session.db")):
        # closed here, not whenever the garbage collector gets to it (``with`` on a connection
        # only commits): its close removes the WAL file, which tests compare byte for byte
        with contextlib.closing(sqlite3.connect(db)) as conn:
            counts[db.parent.name] = conn.execute("SELECT count(*) FROM events").fetchone()[0]
    return counts
