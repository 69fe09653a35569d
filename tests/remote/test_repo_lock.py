"""The host side of workspace sync (``air.remote.repo``) is safe when several tasks sync to one
host at once: each command holds ``WORKDIR/.lock``, so the object cache is created and read by
one of them at a time (two parallel tasks of the calc batch on a fresh host failed with "cannot
reach the object cache")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.slow
def test_commands_on_a_fresh_work_directory_at_once_all_succeed(tmp_path: Path) -> None:
    for round_ in range(2):
        workdir = tmp_path / f"work{round_}"
        procs = [
            subprocess.Popen(
                [sys.executable, "-P", "-m", "air.remote.repo", "known", str(workdir)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for _ in range(8)
        ]
        results = [(p.wait(timeout=60), p.stderr.read() if p.stderr else b"") for p in procs]
        assert [rc for rc, _ in results] == [0] * 8, results
        assert (workdir / "cache.git" / "HEAD").is_file()
        assert (workdir / ".lock").is_file()
