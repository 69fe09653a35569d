"""Real projects for the doctor tests: a git repository with ``air init``, session databases
written through the EventStore, and the ``air`` command run as a subprocess."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

from air.events.store import EventStore
from air.store.session_db import open_session_database
from air.testing.sequences import SessionSimulator
from tests.forked_air import air_cli
from tests.gitrepo import git


def make_project(tmp_path: Path) -> tuple[Path, Path]:
    """A git repository made an air project, and an empty HOME for it."""
    home = tmp_path / "home"
    home.mkdir()
    project = tmp_path / "proj"
    project.mkdir()
    git(project, "init", "-q", "-b", "main")
    (project / "README.md").write_text("hello\n")
    git(project, "add", "README.md")
    git(project, "commit", "-q", "-m", "init")
    done = air(project, home, "init", ".")
    assert done.returncode == 0, done.stderr
    return project, home


def air(
    cwd: Path, home: Path, *args: str, path: str | None = None, prefix: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIR_")}
    env["HOME"] = str(home)
    if path is not None:
        env["PATH"] = path
    if prefix is None:
        return air_cli(args, cwd=cwd, env=env)
    argv = [*prefix, sys.executable, "-m", "air.cli", *args]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def doctor_json(
    cwd: Path, home: Path, *args: str, **kw: Any
) -> tuple[int, dict[str, Any], subprocess.CompletedProcess[str]]:
    done = air(cwd, home, "doctor", "--json", *args, **kw)
    assert done.stdout.strip(), done.stderr
    return done.returncode, json.loads(done.stdout), done


def write_session(project: Path, session_id: str, length: int = 40, seed: int = 3) -> Path:
    """A real session database holding a simulated, valid event log."""
    sim = SessionSimulator(session_id, "prj_doctor")
    rnd = random.Random(seed)
    events = [sim.start()]
    while len(events) < length or not sim.tasks:
        events += sim.step(rnd.choice, rnd)
    path = project / ".air" / "local" / "sessions" / session_id / "session.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    db = open_session_database(path)
    try:
        EventStore(db).append_many(events)
    finally:
        db.close()
    return path


def path_without(*names: str, tmp_path: Path) -> str:
    """A PATH holding every program of /usr/bin except those named (by prefix)."""
    bindir = tmp_path / "bin-without"
    bindir.mkdir()
    for entry in os.scandir("/usr/bin"):
        if not entry.name.startswith(names):
            os.symlink(entry.path, bindir / entry.name)
    return str(bindir)
