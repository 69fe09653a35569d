"""The workspace tests' project: a real git repository on ``main`` with two committed files
(``a.txt``: three lines, ``b.txt``) and ``.air/local/`` ignored. Modules that need another
project define their own ``repo``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gitrepo import init_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.txt").write_text("one\ntwo\nthree\n")
    (root / "b.txt").write_text("b\n")
    (root / ".gitignore").write_text(".air/local/\n")
    return init_repo(root, message="init")
