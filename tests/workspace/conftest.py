"""The workspace tests' project: a real git repository on ``main`` with two committed files
(``a.txt``: three lines, ``b.txt``) and ``.air/local/`` ignored. Modules that need another
project define their own ``repo``."""

from __future__ import annotations

from pathlib import Path

import pytest

from air.contracts.task import WorkspacePlan, WorkspaceStrategy
from air.workspace.manager import WorkspaceManager
from tests.gitrepo import init_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.txt").write_text("one\ntwo\nthree\n")
    (root / "b.txt").write_text("b\n")
    (root / ".gitignore").write_text(".air/local/\n")
    return init_repo(root, message="init")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME of the test's own: git reads the user's global config and ignore file from it."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    return home


def _write(path: Path, text: str) -> None:
    path.write_text(text)


async def task_with_new_file(mgr: WorkspaceManager) -> tuple[str, str]:
    """A worktree for task ``t1`` whose task wrote ``new.txt``: (workspace id, its branch)."""
    ref = await mgr.create_workspace(
        WorkspacePlan(task_id="t1", strategy=WorkspaceStrategy.WORKTREE)
    )
    _write(Path(ref.path, "new.txt"), "new\n")
    assert ref.branch is not None
    return ref.workspace_id, ref.branch
