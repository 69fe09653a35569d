"""What a task writes inside a submodule's path is never dropped without a word.

A worktree never checks a submodule out: its path starts as an empty directory, and git's
commit passes over whatever is put there. Found with a C++ project vendoring a library as a
submodule: a task added a header under it, the merge reported ``merged``, and the header was
in neither the merge nor anywhere once the landed task's worktree was removed. Now such a
write is a ``write_area_violation`` naming it: nothing merges and the worktree (with the
file) is kept."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from air.contracts.error import AirException, ErrorKind
from air.contracts.task import WorkspacePlan, WorkspaceStrategy
from air.workspace.manager import WorkspaceManager
from tests.gitrepo import git, init_repo
from tests.workspace.recorder import Events


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _exists(path: Path) -> bool:
    return os.path.lexists(path)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "f.h").write_text("int f();\n")
    init_repo(lib, message="lib")
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    (root / ".gitignore").write_text(".air/local/\n")
    init_repo(root)
    git(
        root,
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        str(lib),
        "third_party/lib",
    )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    return root


async def _task(project: Path) -> tuple[WorkspaceManager, str, Path]:
    events = Events()
    mgr = WorkspaceManager(str(project), events)
    ref = await mgr.create_workspace(
        WorkspacePlan(task_id="t1", strategy=WorkspaceStrategy.WORKTREE)
    )
    return mgr, ref.workspace_id, Path(ref.path)


async def test_a_file_written_inside_a_submodule_is_named_and_kept(project: Path) -> None:
    mgr, workspace_id, path = await _task(project)
    assert os.listdir(path / "third_party" / "lib") == []  # a worktree has no submodule files
    _write(path / "third_party" / "lib" / "include" / "new.h", "int g();\n")
    _write(path / "b.txt", "b\n")
    head = git(project, "rev-parse", "HEAD")
    with pytest.raises(AirException) as raised:
        await mgr.merge_workspace(workspace_id)
    error = raised.value.error
    assert error.kind == ErrorKind.WRITE_AREA_VIOLATION
    assert "third_party/lib/include/new.h (inside submodule third_party/lib" in error.message
    assert git(project, "rev-parse", "HEAD") == head  # nothing merged, b.txt neither
    assert not _exists(project / "b.txt")
    assert (path / "third_party" / "lib" / "include" / "new.h").read_text() == "int g();\n"
    assert mgr.get(workspace_id).status == "active"  # kept: the retention never takes it


async def test_a_link_in_a_submodules_place_is_named(project: Path) -> None:
    mgr, workspace_id, path = await _task(project)
    (path / "third_party" / "lib").rmdir()
    (path / "third_party" / "lib").symlink_to("../a.txt")  # stays inside the project
    with pytest.raises(AirException) as raised:
        await mgr.merge_workspace(workspace_id)
    assert "third_party/lib (inside submodule third_party/lib" in raised.value.error.message


async def test_a_task_that_leaves_the_submodule_alone_merges(project: Path) -> None:
    mgr, workspace_id, path = await _task(project)
    _write(path / "b.txt", "b\n")
    assert (await mgr.merge_workspace(workspace_id)).status == "merged"
    assert (project / "b.txt").read_text() == "b\n"
    assert (project / "third_party" / "lib" / "f.h").read_text() == "int f();\n"
