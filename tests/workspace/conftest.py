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
