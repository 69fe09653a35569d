"""A project's submodules in a task's worktree: there, and never dropped.

Found with a C++ project vendoring a library as a submodule: a task's worktree had an empty
directory in the submodule's place (``git worktree add`` checks no submodule out), so its build
could not find the library; and a header the task added there was passed over by git's commit,
the merge said ``merged`` without it, and the landed worktree's removal lost it. Now each
submodule the project has checked out is checked out in the worktree too (a linked worktree
of the submodule's own repository, at the commit the base records), and whatever a task
changes inside a submodule is a ``write_area_violation`` naming it: nothing merges, the
worktree is kept."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from air.contracts.error import AirException, ErrorKind
from air.contracts.task import WorkspacePlan, WorkspaceStrategy
from air.workspace import submodules
from air.workspace.gitsafe import locate_git
from air.workspace.manager import WorkspaceManager
from tests.gitrepo import commit_files, git, with_submodules
from tests.workspace.recorder import Events

SUB = "third_party/lib"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _read(path: Path) -> str:
    return path.read_text()


def _listing(path: Path) -> list[str]:
    return sorted(os.listdir(path))


def _library(tmp_path: Path) -> Path:
    """The vendored library's own repository (one header, committed)."""
    return commit_files(tmp_path / "lib", {"f.h": "int f();\n"}, message="lib")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    files = {"a.txt": "a\n", ".gitignore": ".air/local/\n"}
    return with_submodules(tmp_path / "proj", _library(tmp_path), (SUB,), files)


async def _task(project: Path) -> tuple[WorkspaceManager, str, Path]:
    mgr = WorkspaceManager(str(project), Events())
    ref = await mgr.create_workspace(
        WorkspacePlan(task_id="t1", strategy=WorkspaceStrategy.WORKTREE)
    )
    return mgr, ref.workspace_id, Path(ref.path)


async def _refused(mgr: WorkspaceManager, workspace_id: str) -> str:
    with pytest.raises(AirException) as raised:
        await mgr.merge_workspace(workspace_id)
    assert raised.value.error.kind == ErrorKind.WRITE_AREA_VIOLATION
    return raised.value.error.message


async def test_a_checked_out_submodule_is_there_and_a_task_leaving_it_alone_merges(
    project: Path,
) -> None:
    mgr, workspace_id, path = await _task(project)
    assert _read(path / SUB / "f.h") == "int f();\n"  # the build finds it
    _write(path / "b.txt", "b\n")
    assert (await mgr.merge_workspace(workspace_id)).status == "merged"
    assert _read(project / "b.txt") == "b\n"
    assert git(project, "status", "--porcelain") == ""
    await mgr.cleanup_workspace(workspace_id)
    listed = git(project / SUB, "worktree", "list", "--porcelain")
    assert str(path) not in listed  # its record went with it


async def test_changes_inside_a_checked_out_submodule_are_named_and_kept(project: Path) -> None:
    mgr, workspace_id, path = await _task(project)
    _write(path / SUB / "include" / "new.h", "int g();\n")
    _write(path / SUB / "f.h", "int f(int);\n")
    _write(path / "b.txt", "b\n")
    head = git(project, "rev-parse", "HEAD")
    said = await _refused(mgr, workspace_id)
    assert f"{SUB}/include/new.h (inside submodule {SUB}" in said
    assert f"{SUB}/f.h (inside submodule {SUB}" in said
    assert git(project, "rev-parse", "HEAD") == head  # nothing merged, b.txt neither
    assert not (project / "b.txt").exists()
    assert _read(project / SUB / "f.h") == "int f();\n"
    assert _read(path / SUB / "include" / "new.h") == "int g();\n"
    assert mgr.get(workspace_id).status == "active"  # kept: the retention never takes it


async def test_a_rewritten_submodule_link_is_never_followed(project: Path) -> None:
    mgr, workspace_id, path = await _task(project)
    _write(path / SUB / ".git", f"gitdir: {project / '.git'}\n")
    with pytest.raises(AirException) as raised:
        await mgr.merge_workspace(workspace_id)
    assert raised.value.error.kind == ErrorKind.WORKSPACE_ERROR


async def test_a_submodule_the_project_has_not_checked_out_stays_empty(project: Path) -> None:
    git(project, "submodule", "deinit", "-q", "-f", SUB)
    mgr, workspace_id, path = await _task(project)
    assert _listing(path / SUB) == []
    _write(path / SUB / "include" / "new.h", "int g();\n")
    said = await _refused(mgr, workspace_id)
    assert f"{SUB}/include/new.h (inside submodule {SUB}" in said


async def test_a_link_in_an_empty_submodules_place_is_named(project: Path) -> None:
    git(project, "submodule", "deinit", "-q", "-f", SUB)
    mgr, workspace_id, path = await _task(project)
    (path / SUB).rmdir()
    (path / SUB).symlink_to("../a.txt")  # stays inside the project
    said = await _refused(mgr, workspace_id)
    assert f"{SUB} (inside submodule {SUB}" in said


async def test_a_link_in_a_checked_out_submodules_place_is_named_not_followed(
    project: Path, tmp_path: Path
) -> None:
    """The task swaps the submodule's checkout for a link to another checkout of it (one with
    a valid git link): the link is what is reported; nothing there is read."""
    elsewhere = tmp_path / "elsewhere"
    git(project / SUB, "worktree", "add", "-q", "--detach", str(elsewhere))
    _write(elsewhere / "spy.txt", "read through the link\n")
    mgr, workspace_id, path = await _task(project)
    _remove_tree(path / SUB)
    (path / SUB).symlink_to(elsewhere)
    said = await _refused(mgr, workspace_id)
    assert f"{SUB} (" in said  # the link itself
    assert "spy.txt" not in said  # nothing behind it was read


def _remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path)


async def test_a_submodules_changes_are_kept_on_a_branch_when_the_worktree_goes(
    project: Path,
) -> None:
    """A failed attempt's worktree is committed to its branch and removed at the retention:
    what it changed in a submodule is committed there too, on the branch of the same name in
    the submodule's repository, before the files go."""
    mgr, workspace_id, path = await _task(project)
    _write(path / SUB / "f.h", "int f(int);\n")
    _write(path / SUB / "include" / "new.h", "int g();\n")
    branch = mgr.get(workspace_id).branch
    assert branch is not None
    await mgr.abandon_workspace(workspace_id, "attempt 1 did not complete")
    await mgr.cleanup_workspace(workspace_id)
    assert not path.exists()
    assert git(project / SUB, "show", f"{branch}:f.h") == "int f(int);"
    assert git(project / SUB, "show", f"{branch}:include/new.h") == "int g();"
    assert _read(project / SUB / "f.h") == "int f();\n"  # the project's checkout untouched
    assert str(path) not in git(project / SUB, "worktree", "list", "--porcelain")


async def test_a_submodule_left_alone_gets_no_branch(project: Path) -> None:
    mgr, workspace_id, _path = await _task(project)
    branch = mgr.get(workspace_id).branch
    await mgr.abandon_workspace(workspace_id, "cancelled")
    await mgr.cleanup_workspace(workspace_id)
    assert git(project / SUB, "branch", "--list", str(branch)) == ""


@pytest.fixture
def four_submodules(tmp_path: Path) -> Path:
    """Two the project has not checked out (listed first), then two it has."""
    places = ("aa/empty", "ab/empty", SUB, "third_party/more")
    files = {".gitignore": ".air/local/\n"}
    root = with_submodules(tmp_path / "proj", _library(tmp_path), places, files)
    for place in ("aa/empty", "ab/empty"):
        git(root, "submodule", "deinit", "-q", "-f", place)
    return root


async def test_every_submodule_is_read_whichever_came_before(
    four_submodules: Path, tmp_path: Path
) -> None:
    """Each submodule's writes are named, not only the first's: an empty one listed before a
    checked-out one, a link in an empty one's place before another empty one, two checked-out
    ones, a link to a directory inside an empty one (named, not entered)."""
    mgr, workspace_id, path = await _task(four_submodules)
    # each one the project checked out is there, whatever came before it
    assert _listing(path / "aa" / "empty") == _listing(path / "ab" / "empty") == []
    assert _read(path / SUB / "f.h") == _read(path / "third_party" / "more" / "f.h")
    (path / "aa" / "empty").rmdir()
    (path / "aa" / "empty").symlink_to("../ab")
    _write(path / "ab" / "empty" / "inc" / "x.h", "x\n")
    (path / "ab" / "empty" / "up").symlink_to("../../third_party")
    _write(path / SUB / "new.h", "n\n")
    _write(path / "third_party" / "more" / "more.h", "m\n")
    record = mgr.get(workspace_id)
    project = locate_git(str(four_submodules), project_root=str(four_submodules))
    links = await submodules.gitlinks(project, str(record.base_commit))
    found = await submodules.writes(str(four_submodules), record, links)
    assert sorted(found) == [
        ("aa/empty", "aa/empty"),
        ("ab/empty/inc/x.h", "ab/empty"),
        ("ab/empty/up", "ab/empty"),
        (f"{SUB}/new.h", SUB),
        ("third_party/more/more.h", "third_party/more"),
    ]
    said = await _refused(mgr, workspace_id)
    for name, _ in found:
        assert f"{name} (inside submodule" in said


async def test_every_submodules_changes_are_kept_whichever_came_before(
    four_submodules: Path,
) -> None:
    mgr, workspace_id, path = await _task(four_submodules)
    _write(path / SUB / "f.h", "int f(int);\n")
    _write(path / "third_party" / "more" / "more.h", "int m();\n")
    branch = mgr.get(workspace_id).branch
    await mgr.abandon_workspace(workspace_id, "attempt 1 did not complete")
    await mgr.cleanup_workspace(workspace_id)
    assert git(four_submodules / SUB, "show", f"{branch}:f.h") == "int f(int);"
    assert git(four_submodules / "third_party" / "more", "show", f"{branch}:more.h") == "int m();"


async def test_the_worktree_holds_the_commit_the_base_records_and_a_moved_head_is_named(
    project: Path,
) -> None:
    """The project's checkout of the submodule has moved on (a commit the project has not
    recorded): a task's worktree holds the recorded one, the version its build is meant for.
    A task that commits inside its submodule is named by the submodule's path."""
    _write(project / SUB / "f.h", "int f(long);\n")
    git(project / SUB, "commit", "-q", "-am", "not recorded by the project")
    mgr, workspace_id, path = await _task(project)
    assert _read(path / SUB / "f.h") == "int f();\n"
    _write(path / SUB / "g.h", "int g();\n")
    git(path / SUB, "add", "g.h")
    git(path / SUB, "commit", "-q", "-m", "the task's commit")
    said = await _refused(mgr, workspace_id)
    assert f"{SUB} (inside submodule {SUB}" in said


async def test_a_submodule_checkout_as_the_project_merges_as_commits_of_its_own(
    project: Path,
) -> None:
    """air run in the submodule's checkout itself (to change the library): its ``.git`` names
    the superproject's ``.git/modules/<name>``, a repository's own git directory kept
    elsewhere, which air took for no repository at all: a task got a copy, and what it did
    landed in the files with no commit. Now that directory is the project's, as git has it: a
    task's worktree is the library's, and its change lands as a commit of the library."""
    lib = project / SUB
    before, superproject = git(lib, "rev-parse", "HEAD"), git(project, "rev-parse", "HEAD")
    mgr, workspace_id, path = await _task(lib)
    assert await mgr.is_git_repo()
    assert locate_git(str(path), project_root=str(lib)).common_dir == str(
        project / ".git" / "modules" / SUB
    )
    _write(path / "g.h", "int g();\n")
    assert (await mgr.merge_workspace(workspace_id)).status == "merged"
    assert _read(lib / "g.h") == "int g();\n"
    assert git(lib, "rev-parse", "HEAD^1") == before  # the task's commit, merged on top
    assert "g.h" in git(lib, "show", "--name-only", "--format=", "HEAD^2")
    assert git(lib, "status", "--porcelain", "--", ".", ":!.air") == ""
    assert git(project, "rev-parse", "HEAD") == superproject  # its own history untouched
