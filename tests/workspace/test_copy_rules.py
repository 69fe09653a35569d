"""An isolated copy (a project outside git) holds what a task may see, and its merge back reads
what the task changed (``air.workspace.copies``, IMPL-SCOPE-1, IMPL-MERGE-1).

`scripts/mutation.sh merge air/workspace/copies.py` (docs/mutation.md) showed that no test in
process held the copy's own rules: ``.git``/``.air`` left out at the top only, caches at any
depth, the task's denied paths left out (only a real run's ``grep -r`` reached it), and the
changes a merge reads back (added, deleted, modified, a file turned link, a build tree, a marker
planted in a directory the project has). Each case fails when its rule is changed.
"""

from __future__ import annotations

import os
from pathlib import Path

from air.contracts.task import WorkspacePlan, WorkspaceStrategy
from air.workspace.changes import SYMLINK, PathChange
from air.workspace.copies import copy_project, manifest_changes
from air.workspace.manager import WorkspaceManager
from tests.workspace.recorder import Events


def _files(root: Path) -> list[str]:
    return sorted(
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_symlink() or p.is_file()
    )


def _tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_a_copy_leaves_out_airs_state_caches_and_the_tasks_denied_paths(tmp_path: Path) -> None:
    project, copy = tmp_path / "proj", tmp_path / "copy"
    _tree(
        project,
        {
            ".git/config": "x",
            ".air/local/state.db": "x",
            "sub/.air/notes": "kept: only the top's .air is air's",
            "sub/.git": "gitdir: elsewhere",
            "__pycache__/a.cpython-311.pyc": "x",
            "src/__pycache__/b.pyc": "x",
            "src/a.py": "a",
            "src/c.pyc": "copied, not in the manifest",
            "secrets/key": "SECRET",
            "src/deny.key": "SECRET",
            "src/keep.txt": "k",
        },
    )
    (project / "link").symlink_to("src")
    os.mkfifo(project / "pipe")

    def denied(rel: str) -> bool:
        return rel == "secrets" or rel.endswith(".key")

    manifest = copy_project(str(project), str(copy), leave_out=denied)
    assert _files(copy) == [
        "link",
        "src/a.py",
        "src/c.pyc",
        "src/keep.txt",
        "sub/.air/notes",
        "sub/.git",
    ]
    assert (copy / "link").is_symlink()
    assert sorted(manifest) == ["link", "src/a.py", "src/keep.txt", "sub/.air/notes", "sub/.git"]
    assert manifest["link"] == "link:src"


def test_the_merge_reads_back_what_the_task_changed_and_nothing_a_tool_makes_again(
    tmp_path: Path,
) -> None:
    project, copy = tmp_path / "proj", tmp_path / "copy"
    _tree(project, {"src/a.py": "a", "src/b.py": "b", "docs/x.md": "x", "gone.txt": "g"})
    manifest = copy_project(str(project), str(copy))
    (copy / "src/a.py").write_text("changed")
    (copy / "gone.txt").unlink()
    (copy / "docs/x.md").unlink()
    (copy / "docs/x.md").symlink_to("../src/b.py")
    _tree(
        copy,
        {
            "new.txt": "n",
            "build/CMakeCache.txt": "a build tree",
            "build/out.o": "o",
            "nested/venv/pyvenv.cfg": "a virtualenv",
            ".air/local/x": "air's",
            "src/CMakeCache.txt": "planted where the project has files",
            "src/__pycache__/a.pyc": "x",
            "src/a.pyc": "x",
        },
    )
    assert manifest_changes(manifest, str(copy)) == [
        PathChange("docs/x.md", "M", "100644", SYMLINK, link_target="../src/b.py"),
        PathChange("gone.txt", "D", "100644", "000000"),
        PathChange("new.txt", "A", "000000", "100644"),
        PathChange("src/CMakeCache.txt", "A", "000000", "100644"),
        PathChange("src/a.py", "M", "100644", "100644"),
    ]


async def test_a_link_to_a_directory_a_task_made_lands_with_the_merge(tmp_path: Path) -> None:
    """Found: a link to a directory (``ln -s ../vendor/include include``, common in a C++
    tree) was in no manifest (the walk lists it among the directories and never enters it), so
    an isolated copy's merge left it behind without a word: the task's build passed in its copy,
    the project's failed. Its removal and a new target were lost the same way."""
    project = tmp_path / "proj"
    _tree(project, {"vendor/include/x.h": "x", "src/a.c": "a"})
    (project / "old").symlink_to("vendor")
    (project / "moved").symlink_to("src")
    manager = WorkspaceManager(str(project), Events())
    ref = await manager.create_workspace(
        WorkspacePlan(task_id="t1", strategy=WorkspaceStrategy.ISOLATED_COPY)
    )
    work = Path(ref.path)
    (work / "include").symlink_to("vendor/include")
    (work / "old").unlink()
    (work / "moved").unlink()
    (work / "moved").symlink_to("vendor")
    assert (await manager.merge_workspace(ref.workspace_id)).status == "merged"
    assert os.readlink(project / "include") == "vendor/include"
    assert not (project / "old").is_symlink()
    assert not (project / "old").exists()
    assert os.readlink(project / "moved") == "vendor"
    assert (project / "include" / "x.h").read_text() == "x"
