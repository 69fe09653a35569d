"""examples/calc: real workers replaying cassettes repair a broken project through parallel
and dependent tasks; the project's own tests fail before and pass after."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).parents[2] / "examples" / "calc"


def _unittest(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "unittest", "-q"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_example_batch_repairs_the_project(tmp_path: Path) -> None:
    root = tmp_path / "calc"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", ".air"))
    assert _unittest(root).returncode != 0
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "air.cli",
            "run",
            "--headless",
            str(root / "batch.yaml"),
            "--project",
            str(root),
            "--cassette",
            str(root / "cassettes"),
            "--junit",
            str(tmp_path / "report.xml"),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    assert "completed: done 3/3" in proc.stderr
    after = _unittest(root)
    assert after.returncode == 0, after.stderr
    assert "tokenizer" in (root / "CHANGES.md").read_text()
    # the two fixes ran in one wave, the changelog after both
    assert "waves 2" in proc.stderr
    assert 'failures="0"' in (tmp_path / "report.xml").read_text()
