"""An isolated copy's merge writes only the paths it names, where they are (IMPL-MERGE-1):
never through a link (a directory of the project that is one, a temporary name a task
planted as one), and with the modes a git merge gives (no set-user-ID bit: a task's build as
root made a set-user-ID root copy of a shell, which the merge took into the project).
Real files, the real ``WorkspaceManager`` and the Scheduler's write-area guard."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from air.contracts.error import AirException, ErrorKind
from air.contracts.task import TaskScope, WorkspacePlan, WorkspaceStrategy
from air.nursery.write_areas import merge_guard
from air.workspace import copies
from air.workspace.manager import WorkspaceManager
from tests.workspace.recorder import Events


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    for d in ("docs", "config"):
        (root / d).mkdir(parents=True)
    (root / "docs" / "guide.md").write_text("guide\n")
    (root / "config" / "app.yaml").write_text("debug: false\n")
    (root / "AGENTS.md").write_text("be careful\n")
    return root


async def _copies(mgr: WorkspaceManager, *task_ids: str) -> list[tuple[str, Path]]:
    made = []
    for task_id in task_ids:
        ref = await mgr.create_workspace(
            WorkspacePlan(task_id=task_id, strategy=WorkspaceStrategy.ISOLATED_COPY)
        )
        made.append((ref.workspace_id, Path(ref.path)))
    return made


async def test_a_directory_link_of_the_project_is_not_written_through(project: Path) -> None:
    """The project holds ``docs/lib -> ../config`` (the user's link); a task held to docs/
    replaced it in its copy by a directory with a file. The merge wrote
    ``config/settings.yaml``, outside the task's area, through the project's link."""
    os.symlink("../config", project / "docs" / "lib")
    mgr = WorkspaceManager(str(project), Events())
    ((copy, ws),) = await _copies(mgr, "t1")
    os.unlink(ws / "docs" / "lib")
    (ws / "docs" / "lib").mkdir()
    (ws / "docs" / "lib" / "settings.yaml").write_text("debug: true\n")
    result = await mgr.merge_workspace(
        copy, guard=merge_guard(TaskScope(write_area=["docs"]), str(project))
    )
    assert result.status == "conflicted"
    assert result.conflicted_paths == ["docs/lib/settings.yaml"]
    assert not (project / "config" / "settings.yaml").exists()
    assert os.readlink(project / "docs" / "lib") == "../config"


async def test_a_directory_swapped_for_a_link_after_the_check_is_not_written_through(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command running beside the merge (another task under ``--isolation main``, another
    session) swaps ``docs`` for a link right after the copy back looked for links on the way:
    the merge made ``docs``' missing directories and wrote the file through the link, outside
    the project. Now every directory is opened without following a link: the merge stops with
    ``workspace_error``, nothing written through it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    mgr = WorkspaceManager(str(project), Events())
    ((copy, ws),) = await _copies(mgr, "t1")
    (ws / "docs" / "new" / "deep").mkdir(parents=True)
    (ws / "docs" / "new" / "deep" / "notes.md").write_text("from the task\n")
    (ws / "docs" / "guide.md").write_text("guide, improved\n")
    hashed = copies.entry_hash
    checked: list[str] = []

    def swapped_after(path: str) -> str | None:
        found = hashed(path)
        if path.startswith(str(project / "docs")):  # the check reads each changed path once
            checked.append(path)
        if (
            len(checked) == 2 and not (project / "docs").is_symlink()
        ):  # both checked: no link on the way; now one is put there
            (project / "docs").rename(tmp_path / "docs.aside")
            (project / "docs").symlink_to(outside)
        return found

    monkeypatch.setattr(copies, "entry_hash", swapped_after)
    with pytest.raises(AirException) as caught:
        await mgr.merge_workspace(
            copy, guard=merge_guard(TaskScope(write_area=["docs"]), str(project))
        )
    assert caught.value.kind == ErrorKind.WORKSPACE_ERROR
    assert caught.value.error.message == (
        "docs/guide.md was not merged: 'docs' on its way in the project is a link or a file "
        "now; nothing was written through it"
    )
    assert caught.value.user_action == (
        "See what changed that directory of the project, then run the task again (its copy "
        "is kept as it is)."
    )
    assert checked == [str(project / "docs" / p) for p in ("guide.md", "new/deep/notes.md")]
    assert list(outside.iterdir()) == []
    assert (ws / "docs" / "guide.md").read_text() == "guide, improved\n"  # the copy kept


async def test_a_link_at_the_merge_s_temporary_name_is_not_written_through(
    project: Path,
) -> None:
    """The copy back wrote each file to ``<path>.air-merge.tmp`` and renamed it: a task that
    merged a link by that name (pointing inside the project) had the next merge of ``<path>``
    write AGENTS.md, and ``<path>`` become that link."""
    mgr = WorkspaceManager(str(project), Events())
    guard = merge_guard(TaskScope(write_area=["docs"]), str(project))
    (first, first_ws), (second, second_ws) = await _copies(mgr, "t1", "t2")
    os.symlink("../AGENTS.md", first_ws / "docs" / "guide.md.air-merge.tmp")
    assert (await mgr.merge_workspace(first, guard=guard)).status == "merged"
    (second_ws / "docs" / "guide.md").write_text("guide, improved\n")
    assert (await mgr.merge_workspace(second, guard=guard)).status == "merged"
    assert (project / "AGENTS.md").read_text() == "be careful\n"
    merged = project / "docs" / "guide.md"
    assert not merged.is_symlink()
    assert merged.read_text() == "guide, improved\n"
    assert sorted(os.listdir(project / "docs")) == ["guide.md", "guide.md.air-merge.tmp"]


async def test_a_merged_file_gets_the_mode_a_git_merge_gives(project: Path) -> None:
    """A sandboxed command of a task run as root writes root's files: a ``chmod 4755`` copy
    of a shell in its copy was merged set-user-ID root, and a ``chmod 666`` file writable by
    every local user. As a git merge does, only whether its owner may execute it is kept."""
    mgr = WorkspaceManager(str(project), Events())
    ((copy, ws),) = await _copies(mgr, "t1")
    modes = {"suid": 0o4755, "sgid": 0o2750, "sticky": 0o1644, "shared": 0o666, "mine": 0o700}
    for name, mode in modes.items():
        (ws / "docs" / name).write_bytes(b"#!/bin/sh\n")
        os.chmod(ws / "docs" / name, mode)
    result = await mgr.merge_workspace(
        copy, guard=merge_guard(TaskScope(write_area=["docs"]), str(project))
    )
    assert result.status == "merged"
    merged = {name: stat.S_IMODE(os.stat(project / "docs" / name).st_mode) for name in modes}
    assert merged == {"suid": 0o755, "sgid": 0o755, "sticky": 0o644, "shared": 0o644, "mine": 0o755}


def test_temporaries_a_cut_copy_back_left_are_dropped_never_through_a_link(
    project: Path, tmp_path: Path
) -> None:
    """After a crash, the merge's temporary files beside its paths go; a directory that is a
    link (the person's, or one swapped in) is never listed or removed through, at any depth."""
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (project / "zz").mkdir()
    for rel in ("docs/.0a1b.air-merge.tmp", ".1c2d.air-merge.tmp", "zz/.3e4f.air-merge.tmp"):
        (project / rel).write_text("cut short")
    (project / "docs" / ".d.air-merge.tmp").mkdir()  # a directory by that name: left
    (project / "docs" / "keep.tmp").write_text("the person's")
    (project / "docs" / ".hidden").write_text("the person's")
    (outside / ".9f8e.air-merge.tmp").write_text("not the project's")
    (outside / "sub" / ".7a6b.air-merge.tmp").write_text("not the project's")
    os.symlink(outside, project / "linked")
    changed = ["docs/guide.md", "linked/x.md", "linked/sub/y.md", "AGENTS.md", "zz/f.md"]
    assert copies.drop_copy_back_temps(str(project), changed) == [
        ".1c2d.air-merge.tmp",
        "docs/.0a1b.air-merge.tmp",
        "zz/.3e4f.air-merge.tmp",
    ]
    assert sorted(os.listdir(project / "docs")) == [
        ".d.air-merge.tmp",
        ".hidden",
        "guide.md",
        "keep.tmp",
    ]
    assert sorted(os.listdir(outside)) == [".9f8e.air-merge.tmp", "sub"]
    assert os.listdir(outside / "sub") == [".7a6b.air-merge.tmp"]


async def test_a_copy_back_deletes_and_makes_directories_below_the_project(project: Path) -> None:
    """What a copy back writes through the directories it opens: a deleted file goes (a
    directory the task emptied stays, as git leaves it), a file below directories the project
    does not have yet makes them, a file deleted with its directory already gone from the
    project is nothing to do, and a path that is a directory in the project is left to it."""
    mgr = WorkspaceManager(str(project), Events())
    ((copy, ws),) = await _copies(mgr, "t1")
    (project / "docs" / "old").mkdir()
    (project / "docs" / "old" / "gone.md").write_text("made after the copy\n")
    (ws / "docs" / "guide.md").unlink()
    (ws / "docs" / "new" / "deeper").mkdir(parents=True)
    (ws / "docs" / "new" / "deeper" / "page.md").write_text("new\n")
    result = await mgr.merge_workspace(
        copy, guard=merge_guard(TaskScope(write_area=["docs"]), str(project))
    )
    assert result.status == "merged"
    assert not (project / "docs" / "guide.md").exists()
    assert (project / "docs" / "new" / "deeper" / "page.md").read_text() == "new\n"
    assert (project / "docs" / "old" / "gone.md").exists()  # not the task's: never in its copy
    gone = ["docs/none/x.md", "docs/missing.md", "docs/old"]  # nothing there, or a directory
    assert copies.copy_back(str(project), str(ws), {}, gone) == []
    assert (project / "docs" / "old").is_dir()
