"""A build tree, a virtualenv or a tagged cache a task made in its workspace is never merged
into the project (``air.workspace.regenerable``), whatever the project's ignore rules say.
Real git worktrees and copies.

Found reading the merge path: a task's whole workspace is committed to its branch and merged
(a task's write area is the whole project unless the batch narrows it), so a model that ran
``cmake -B out`` or ``python -m venv venv`` through ``shell.run`` in a project that does not
ignore those directories merged object files, binaries and absolute paths into the user's
history (the ``cpp.*`` tools' own build directory carries a ``.gitignore`` of ``*``)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from air.contracts.task import WorkspacePlan, WorkspaceStrategy
from air.workspace.manager import WorkspaceManager
from air.workspace.regenerable import CACHEDIR_TAG, untracked_regenerable
from tests.gitrepo import git
from tests.workspace.recorder import Events

MADE_AGAIN = {
    "out/CMakeCache.txt": "CMAKE_HOME_DIRECTORY:INTERNAL=/home/someone/proj\n",
    "out/CMakeFiles/main.o": "\x7fELF object\n",
    "venv/pyvenv.cfg": "home = /usr/bin\n",
    "venv/lib/python3.11/site-packages/mod.py": "x = 1\n",
    "target/CACHEDIR.TAG": CACHEDIR_TAG.decode() + "\n# cargo\n",
    "target/debug/app": "binary\n",
    "pkg/build/CMakeCache.txt": "nested build tree\n",
    "pkg/build/lib.a": "archive\n",
}
"""What a task's build, venv and cargo commands leave: never merged."""

THE_WORK = {
    "src/new.c": "int main(void) { return 0; }\n",
    "pkg/code.txt": "the package's code\n",
    "notes/CACHEDIR.TAG": "not the signature: an ordinary file\n",
    "notes/todo.txt": "kept\n",
}
"""What the task wrote as its change (a CACHEDIR.TAG without its signature is a file)."""


def _write_all(root: str, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = Path(root, rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _read(path: Path) -> str:
    return path.read_text()


def _files(root: Path) -> set[str]:
    return {
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and ".git" not in p.parts and ".air" not in p.parts
    }


@pytest.mark.parametrize("strategy", [WorkspaceStrategy.WORKTREE, WorkspaceStrategy.ISOLATED_COPY])
async def test_a_merge_takes_the_work_and_leaves_the_trees_a_tool_makes_again(
    repo: Path, strategy: WorkspaceStrategy
) -> None:
    mgr = WorkspaceManager(str(repo), Events())
    ref = await mgr.create_workspace(WorkspacePlan(task_id="t1", strategy=strategy))
    _write_all(ref.path, {**MADE_AGAIN, **THE_WORK})
    result = await mgr.merge_workspace(ref.workspace_id)
    assert result.status == "merged"
    assert _files(repo) == {"a.txt", "b.txt", ".gitignore", *THE_WORK}
    if strategy == WorkspaceStrategy.WORKTREE:
        merged = set(git(repo, "ls-tree", "-r", "--name-only", "HEAD").splitlines())
        assert merged == {"a.txt", "b.txt", ".gitignore", *THE_WORK}


async def test_an_abandoned_attempt_keeps_its_work_not_its_build_tree(repo: Path) -> None:
    mgr = WorkspaceManager(str(repo), Events())
    ref = await mgr.create_workspace(
        WorkspacePlan(task_id="t1", strategy=WorkspaceStrategy.WORKTREE)
    )
    _write_all(ref.path, {**MADE_AGAIN, **THE_WORK})
    await mgr.abandon_workspace(ref.workspace_id, "attempt 1 did not complete")
    kept = set(git(repo, "ls-tree", "-r", "--name-only", str(ref.branch)).splitlines())
    assert kept == {"a.txt", "b.txt", ".gitignore", *THE_WORK}


async def test_a_project_built_in_its_own_source_tree_still_merges(repo: Path) -> None:
    # an in-source CMake build: CMakeCache.txt at the project's top is no reason to merge
    # nothing (the top of a copy is never a tree made again)
    _write_all(str(repo), {"CMakeCache.txt": "in-source build\n"})
    mgr = WorkspaceManager(str(repo), Events())
    ref = await mgr.create_workspace(
        WorkspacePlan(task_id="t1", strategy=WorkspaceStrategy.ISOLATED_COPY)
    )
    _write_all(ref.path, {"a.txt": "changed\n"})
    result = await mgr.merge_workspace(ref.workspace_id)
    assert result.status == "merged"
    assert git(repo, "diff", "--name-only") == "a.txt"  # copied back, left for the user


@pytest.mark.parametrize("strategy", [WorkspaceStrategy.WORKTREE, WorkspaceStrategy.ISOLATED_COPY])
async def test_a_marker_planted_in_a_project_directory_hides_none_of_its_files(
    repo: Path, strategy: WorkspaceStrategy
) -> None:
    # the attack: a marker in a directory of the project, so that its files read as deleted
    _write_all(str(repo), {"lib/x.c": "int x;\n", "lib/y.c": "int y;\n"})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "lib")
    mgr = WorkspaceManager(str(repo), Events())
    ref = await mgr.create_workspace(WorkspacePlan(task_id="t1", strategy=strategy))
    _write_all(ref.path, {"lib/CMakeCache.txt": "planted\n", "lib/x.c": "int x = 1;\n"})
    result = await mgr.merge_workspace(ref.workspace_id)
    assert result.status == "merged"
    assert _read(repo / "lib" / "y.c") == "int y;\n"
    assert _read(repo / "lib" / "x.c") == "int x = 1;\n"
    assert _read(repo / "lib" / "CMakeCache.txt") == "planted\n"  # a file of the change


def test_a_tag_that_is_a_fifo_or_a_link_never_blocks_or_leads_the_merge(tmp_path: Path) -> None:
    """A task makes what a merge looks at: ``mkfifo out/CACHEDIR.TAG`` blocked the merge's
    open of the tag until a writer came (for ever: a thread the run's cancel cannot stop);
    a link could name any file. Neither is a tag."""
    fifo_dir, link_dir = tmp_path / "out", tmp_path / "linked"
    fifo_dir.mkdir()
    link_dir.mkdir()
    os.mkfifo(fifo_dir / "CACHEDIR.TAG")
    (tmp_path / "real.tag").write_text(CACHEDIR_TAG.decode() + "\n")
    (link_dir / "CACHEDIR.TAG").symlink_to(tmp_path / "real.tag")
    answers: list[list[str]] = []
    looking = threading.Thread(
        target=lambda: answers.append(untracked_regenerable(str(tmp_path), ["out/", "linked/"])),
        daemon=True,  # if it blocks, the test fails instead of hanging
    )
    looking.start()
    looking.join(timeout=10)
    assert answers == [[]]
