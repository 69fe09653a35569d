"""What the user's own git ignores everywhere, air's git ignores too. Found: air's git reads no
global config (IMPL-GIT-1), so a ``core.excludesFile`` the user set there (``.env``,
``*.log``: the usual global ignore) did not count: a task's ``.env`` and test log were
committed in its worktree and merged into the user's history, which their own ``git add -A``
would never have done, and the uncommitted-changes warning named their editor's files. Now
that one file is read (``user_excludes``: the path only, no include followed; git's default
``$XDG_CONFIG_HOME/git/ignore`` when none is set)."""

from __future__ import annotations

from pathlib import Path

from air.contracts.task import WorkspacePlan, WorkspaceStrategy
from air.workspace import gitsafe
from air.workspace.manager import WorkspaceManager
from tests.gitrepo import commit_files, git
from tests.workspace.recorder import Events


def _project(tmp_path: Path) -> Path:
    return commit_files(tmp_path / "proj", {"a.txt": "a\n", ".gitignore": ".air/local/\n"})


def _write(path: Path) -> None:
    path.write_text("x\n")


async def _task_leaving(root: Path, *names: str) -> tuple[str, list[str]]:
    mgr = WorkspaceManager(str(root), Events())
    ref = await mgr.create_workspace(
        WorkspacePlan(task_id="t1", strategy=WorkspaceStrategy.WORKTREE)
    )
    for name in ["a.txt", *names]:
        _write(Path(ref.path, name))
    result = await mgr.merge_workspace(ref.workspace_id, wrote=[".env"])
    merged = git(root, "show", "--name-only", "--format=", "HEAD^2").split()
    return str(result.left_out), merged


async def test_the_users_global_ignore_file_counts(tmp_path: Path, home: Path) -> None:
    (home / ".gitignore_global").write_text(".env\n*.log\n")
    (home / ".gitconfig").write_text(
        "[user]\n\tname = u\n[core]\n\texcludesFile = ~/.gitignore_global\n"
    )
    assert gitsafe.user_excludes() == str(home / ".gitignore_global")
    root = _project(tmp_path)
    left_out, merged = await _task_leaving(root, ".env", "test.log")
    assert merged == ["a.txt"]  # not the .env, not the log
    assert left_out == "['.env']"
    assert not (root / ".env").exists()


async def test_gits_default_ignore_file_counts(tmp_path: Path, home: Path) -> None:
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".config" / "git" / "ignore").write_text("*.log\n")
    assert gitsafe.user_excludes() == str(home / ".config" / "git" / "ignore")
    _, merged = await _task_leaving(_project(tmp_path), "test.log")
    assert merged == ["a.txt"]


async def test_without_one_everything_the_task_made_is_its_work(tmp_path: Path, home: Path) -> None:
    (home / ".gitconfig").write_text("[core]\n\texcludesFile = relative/ignore\n")
    assert gitsafe.user_excludes() is None  # a relative path would name the work tree's file
    _, merged = await _task_leaving(_project(tmp_path), "test.log")
    assert sorted(merged) == ["a.txt", "test.log"]
