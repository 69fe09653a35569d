"""A project that is a sparse checkout (a big monorepo's usual shape, often a partial clone
too). Found: ``git worktree add`` gives the task's worktree the project's sparse patterns,
and a file the task wrote outside them made ``git add`` refuse ("paths ... outside of your
sparse-checkout definition"): the task failed ``workspace_error`` with its work unmerged. Now
its worktree's commit takes them (``--sparse``) and they merge into the project's history
as git's sparse checkout keeps such paths: in the index, not in the working tree. The partial
clone's missing blobs are never fetched (air's git allows no protocol)."""

from __future__ import annotations

from pathlib import Path

from air.contracts.task import WorkspacePlan, WorkspaceStrategy
from air.workspace.manager import WorkspaceManager
from tests.gitrepo import commit_files, git
from tests.workspace.recorder import Events


def _sparse_clone(tmp_path: Path) -> Path:
    """A partial clone (no blobs) of a three-file repository, its checkout only ``a.txt``."""
    files = {name: f"{name}\n" for name in ("a.txt", "b.txt", "c.txt")}
    src = commit_files(tmp_path / "src", {**files, ".gitignore": ".air/local/\n"})
    git(src, "config", "uploadpack.allowFilter", "true")
    root = tmp_path / "proj"
    git(tmp_path, "clone", "-q", "--filter=blob:none", "--no-checkout", f"file://{src}", "proj")
    git(root, "sparse-checkout", "set", "--no-cone", "a.txt", ".gitignore")
    git(root, "checkout", "-q", "main")
    return root


async def test_a_task_writing_outside_the_sparse_patterns_merges(tmp_path: Path) -> None:
    root = _sparse_clone(tmp_path)
    assert sorted(p.name for p in root.iterdir()) == [".git", ".gitignore", "a.txt"]
    mgr = WorkspaceManager(str(root), Events())
    ref = await mgr.create_workspace(
        WorkspacePlan(task_id="t1", strategy=WorkspaceStrategy.WORKTREE)
    )
    worktree = Path(ref.path)
    assert not (worktree / "b.txt").exists()  # the project's patterns: no blob fetched
    (worktree / "a.txt").write_text("changed\n")
    (worktree / "tools").mkdir()
    (worktree / "tools" / "new.py").write_text("print(1)\n")
    result = await mgr.merge_workspace(ref.workspace_id)
    assert result.status == "merged"
    assert git(root, "show", "HEAD:tools/new.py") == "print(1)"
    assert (root / "a.txt").read_text() == "changed\n"
    # outside the patterns: in the index as git keeps such paths, not in the working tree
    assert git(root, "ls-files", "-t", "tools/new.py") == "S tools/new.py"
    assert not (root / "tools").exists()
    assert git(root, "status", "--porcelain") == ""
