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


def _copy(tmp_path: Path) -> Path:
    tree = tmp_path / "copy"
    shutil.copytree(ROOT / "air", tree / "air", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tree / "pyproject.toml")
    return tree


def test_a_new_package_must_be_placed_in_a_layer_before_it_imports_anything(
    tmp_path: Path,
) -> None:
    """The contracts are an allow-list: an unplaced package fails even importing contracts."""
    tree = _copy(tmp_path)
    (tree / "air" / "zz_new").mkdir()
    (tree / "air" / "zz_new" / "__init__.py").write_text(
        '"""A package nobody placed."""\nimport air.contracts  # noqa: F401\n'
    )
    broken = _lint(tree)
    assert broken.returncode != 0
    assert "air layers" in broken.stdout
    assert "zz_new" in broken.stdout


def test_a_package_cannot_import_a_layer_above_it_or_a_sibling(tmp_path: Path) -> None:
    """Upward (tools → nursery) and sideways (security → ipc) imports break the layers."""
    tree = _copy(tmp_path)
    (tree / "air" / "tools" / "zz_up.py").write_text(
        '"""Up."""\nimport air.nursery  # noqa: F401\n'
    )
    (tree / "air" / "security" / "zz_side.py").write_text(
        '"""Sideways."""\nimport air.ipc  # noqa: F401\n'
    )
    broken = _lint(tree)
    assert broken.returncode != 0
    assert "air.tools.zz_up -> air.nursery" in broken.stdout
    assert "air.security.zz_side -> air.ipc" in broken.stdout


def test_a_package_cannot_skip_to_a_lower_layer_it_may_not_use(tmp_path: Path) -> None:
    """What the layers cannot say: the console (ui_urwid) reads contracts only, not the store."""
    tree = _copy(tmp_path)
    (tree / "air" / "ui_urwid" / "zz_skip.py").write_text(
        '"""Skips down to storage."""\nimport air.store  # noqa: F401\n'
    )
    broken = _lint(tree)
    assert broken.returncode != 0
    assert "air.ui_urwid may import only" in broken.stdout
    assert "air.ui_urwid.zz_skip -> air.store" in broken.stdout


def test_the_cli_has_no_import_cycle() -> None:
    """``air.cli`` and ``air.cli.run`` no longer import each other (is_bad_input moved to
    contracts): no command module of air/cli imports the package ``air.cli`` itself (only its
    ``__main__`` does, to run it)."""
    import ast

    for path in sorted((ROOT / "air" / "cli").glob("*.py")):
        if path.name == "__main__.py":
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "air.cli":
                raise AssertionError(f"{path.name} imports from air.cli: {ast.unparse(node)}")
            if isinstance(node, ast.Import):
                assert all(alias.name != "air.cli" for alias in node.names), path.name
