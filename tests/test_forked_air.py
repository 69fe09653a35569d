"""The forked ``air`` (tests/forked_air.py) stands for the real command in a whole run too: the
calc example's batch, run as ``python -m air.cli`` in a fresh interpreter and as a process
forked from the warm air, exits the same way, records the same events and leaves the same
files (its workers are real processes either way)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

from tests.forked_air import air_cli
from tests.gitrepo import git
from tests.headless import session_events
from tests.trust.calc_runs import EXAMPLE, RUN


def _calc(where: Path) -> tuple[Path, dict[str, str]]:
    root = where / "calc"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", ".air"))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "calc")
    (where / "home").mkdir()
    return root, {**os.environ, "HOME": str(where / "home")}


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".air" not in p.parts and ".git" not in p.parts
    }


def test_a_whole_run_forked_is_the_run_of_the_real_command(tmp_path: Path) -> None:
    real_root, real_env = _calc(tmp_path / "real")
    real = subprocess.run(
        [sys.executable, "-m", "air.cli", *RUN],
        cwd=real_root,
        env=real_env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    forked_root, forked_env = _calc(tmp_path / "forked")
    forked = air_cli(RUN, cwd=forked_root, env=forked_env, timeout=180)
    assert real.returncode == forked.returncode == 0, real.stderr + forked.stderr
    assert "Traceback" not in real.stderr + forked.stderr
    types = [Counter(e["type"] for e in session_events(r)) for r in (real_root, forked_root)]
    assert types[0] == types[1]
    assert types[0]["task.completed"] >= 1
    assert _files(real_root) == _files(forked_root)
    assert _files(real_root) != _files(EXAMPLE)  # the run changed the project
