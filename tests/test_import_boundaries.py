"""import-linter enforces ARCHITECTURE §1: a forbidden import makes the linter fail."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _lint(tree: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    linter = Path(sys.executable).with_name("lint-imports")
    return subprocess.run(
        [str(linter), "--config", str(tree / "pyproject.toml"), "--no-cache"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_linter_passes_on_the_tree_and_fails_on_a_violation(tmp_path: Path) -> None:
    tree = tmp_path / "copy"
    shutil.copytree(ROOT / "air", tree / "air", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tree / "pyproject.toml")
    clean = _lint(tree)
    assert clean.returncode == 0, clean.stdout + clean.stderr

    (tree / "air" / "contracts" / "zz_violation.py").write_text(
        '"""A contract module that reaches into storage: forbidden."""\n'
        "import air.store  # noqa: F401\n"
    )
    broken = _lint(tree)
    assert broken.returncode != 0
    assert "air.contracts may import only" in broken.stdout
    assert "BROKEN" in broken.stdout
    assert "air.contracts.zz_violation -> air.store" in broken.stdout
