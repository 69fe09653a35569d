"""A task's merge never ends, or mixes with, what the user's own git is doing in the project.

Found running a task while resolving a merge by hand: air's ``git merge`` refused ("you have
not concluded your merge"), air took that for a conflict of its own and ran ``git merge
--abort`` — which ended the user's merge and threw away their half-done resolution — then
reported a conflict in the user's file and ran the task again. An editor's ``git status``
holding ``.git/index.lock`` for a moment made a merge "conflict" too (the task ran again), or
left the project in a merge state of air's whose next commit would have recorded the task as
merged without its changes; uncommitted changes in the way were reported as a conflict and
retried to no end. Now air merges only into a project whose git is not in the middle of
something, aborts only its own merge, waits out another git command's lock, and otherwise says
what git refused; the task's work is kept on its branch each time.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from air.contracts.error import AirException, ErrorKind
from air.contracts.task import WorkspacePlan, WorkspaceStrategy
from air.workspace import worktrees
from air.workspace.manager import WorkspaceManager
from air.workspace.worktrees import ProjectGit
from tests.gitrepo import diverge, git, git_stops
from tests.workspace.conftest import task_with_new_file
from tests.workspace.recorder import Events

RESOLVING = "resolved by hand, half done\n"


def _write(path: Path, text: str) -> None:
    path.write_text(text)


def _diverge(repo: Path) -> None:
    """Branch ``theirs`` and ``main`` each change a.txt's first line."""
    diverge(repo, "a.txt", "eins\ntwo\nthree\n", "uno\ntwo\nthree\n")


def _start_merge(repo: Path) -> str:
    git_stops(repo, "merge", "theirs")
    return "a merge"


def _start_cherry_pick(repo: Path) -> str:
    git_stops(repo, "cherry-pick", "theirs")
    return "a cherry-pick"


def _start_revert(repo: Path) -> str:
    (repo / "a.txt").write_text("EINS\ntwo\nthree\n")
    git(repo, "commit", "-q", "-am", "ours again")
    git_stops(repo, "revert", "--no-edit", "HEAD~1")
    return "a revert"


def _start_rebase(repo: Path) -> str:
    git(repo, "switch", "-q", "theirs")
    git_stops(repo, "rebase", "main")
    return "a rebase"


@pytest.mark.parametrize("start", [_start_merge, _start_cherry_pick, _start_revert, _start_rebase])
async def test_the_users_merge_or_rebase_under_way_is_left_as_it_is(repo: Path, start) -> None:  # type: ignore[no-untyped-def]
    events = Events()
    mgr = WorkspaceManager(str(repo), events)
    workspace_id, kept = await task_with_new_file(mgr)
    _diverge(repo)
    doing = start(repo)
    (repo / "a.txt").write_text(RESOLVING)  # the user is resolving it
    head = git(repo, "rev-parse", "HEAD")
    state = git(repo, "status", "--porcelain")
    with pytest.raises(AirException) as raised:
        await mgr.merge_workspace(workspace_id)
    error = raised.value.error
    assert error.kind == ErrorKind.WORKSPACE_ERROR
    assert f"the project's git is in the middle of {doing}: task t1 was not merged" in (
        error.message
    )
    assert kept in error.message
    assert error.user_action == (
        f"Finish or abort {doing} (git status says how), then merge it: git merge {kept}"
    )
    # the user's work in progress is exactly as it was; nothing of the task's landed
    assert (repo / "a.txt").read_text() == RESOLVING
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "status", "--porcelain") == state
    assert not (repo / "new.txt").exists()
    assert git(repo, "show", f"{kept}:new.txt") == "new"
    assert "workspace.merge.started" not in events.types()


async def test_once_the_user_has_finished_the_task_merges(repo: Path) -> None:
    mgr = WorkspaceManager(str(repo), Events())
    workspace_id, _ = await task_with_new_file(mgr)
    _diverge(repo)
    _start_merge(repo)
    with pytest.raises(AirException):
        await mgr.merge_workspace(workspace_id)
    (repo / "a.txt").write_text("resolved\ntwo\nthree\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "--no-edit")
    assert (await mgr.merge_workspace(workspace_id)).status == "merged"
    assert (repo / "new.txt").read_text() == "new\n"
    assert (repo / "a.txt").read_text() == "resolved\ntwo\nthree\n"


async def test_a_merge_the_user_begins_at_the_last_moment_is_never_aborted(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user's merge begins between air's look at the project and its ``git merge``: git
    refuses air's, and air ends nothing of the user's."""
    mgr = WorkspaceManager(str(repo), Events())
    workspace_id, kept = await task_with_new_file(mgr)
    _diverge(repo)
    real_run = ProjectGit.run

    async def run(self: ProjectGit, where, *args: str, **kw):  # type: ignore[no-untyped-def]
        if args[:2] == ("merge", "--no-ff") and not (repo / ".git" / "MERGE_HEAD").exists():
            _start_merge(repo)
            (repo / "a.txt").write_text(RESOLVING)
        return await real_run(self, where, *args, **kw)

    monkeypatch.setattr(ProjectGit, "run", run)
    with pytest.raises(AirException) as raised:
        await mgr.merge_workspace(workspace_id)
    assert "git would not begin it: error: Merging is not possible because you have" in (
        raised.value.error.message
    )
    assert (repo / "a.txt").read_text() == RESOLVING
    assert (repo / ".git" / "MERGE_HEAD").read_text().strip() == git(repo, "rev-parse", "theirs")
    assert git(repo, "show", f"{kept}:new.txt") == "new"


@pytest.mark.parametrize(
    ("in_the_way", "git_says"),
    [
        ("changed", "Your local changes to the following files would be overwritten by merge: "),
        ("staged", "Your local changes to the following files would be overwritten by merge: "),
        ("untracked", "untracked working tree files would be overwritten by merge: "),
    ],
)
async def test_the_users_changes_in_the_way_are_said_not_called_a_conflict(
    repo: Path, in_the_way: str, git_says: str
) -> None:
    events = Events()
    mgr = WorkspaceManager(str(repo), events)
    ref = await mgr.create_workspace(
        WorkspacePlan(task_id="t1", strategy=WorkspaceStrategy.WORKTREE)
    )
    name = "new.txt" if in_the_way == "untracked" else "a.txt"
    _write(Path(ref.path, name), "the task's\n")
    mine = "the user's, not committed\n"
    (repo / name).write_text(mine)
    if in_the_way == "staged":
        git(repo, "add", name)
    head = git(repo, "rev-parse", "HEAD")
    with pytest.raises(AirException) as raised:
        await mgr.merge_workspace(ref.workspace_id)
    error = raised.value.error
    assert error.kind == ErrorKind.WORKSPACE_ERROR
    assert error.message.startswith("task t1 was not merged into the project: git would not ")
    assert git_says + name in error.message
    assert f"its work is kept on branch {ref.branch}" in error.message
    assert error.user_action is not None
    assert error.user_action.endswith(f"then merge it: git merge {ref.branch}")
    assert (repo / name).read_text() == mine
    assert git(repo, "rev-parse", "HEAD") == head
    assert not (repo / ".git" / "MERGE_HEAD").exists()
    assert "workspace.merge.conflicted" not in events.types()
    assert git(repo, "show", f"{ref.branch}:{name}") == "the task's"


async def test_unmerged_files_of_a_stash_pop_are_left_as_they_are(repo: Path) -> None:
    """Unmerged files with no state file of git's (a ``git stash pop`` that conflicted)."""
    mgr = WorkspaceManager(str(repo), Events())
    workspace_id, _ = await task_with_new_file(mgr)
    (repo / "a.txt").write_text("stashed\ntwo\nthree\n")
    git(repo, "stash", "-q")
    (repo / "a.txt").write_text("committed\ntwo\nthree\n")
    git(repo, "commit", "-q", "-am", "meanwhile")
    git_stops(repo, "stash", "pop")
    conflicted = (repo / "a.txt").read_text()
    assert "<<<<<<<" in conflicted
    with pytest.raises(AirException) as raised:
        await mgr.merge_workspace(workspace_id)
    assert "git would not begin it: error: Merging is not possible because you have unmerged" in (
        raised.value.error.message
    )
    assert (repo / "a.txt").read_text() == conflicted
    assert git(repo, "diff", "--name-only", "--diff-filter=U") == "a.txt"


async def test_a_merge_waits_out_another_git_commands_index_lock(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git is not even asked to merge while the lock is held (it would begin a merge it
    cannot write: see below)."""
    mgr = WorkspaceManager(str(repo), Events())
    workspace_id, _ = await task_with_new_file(mgr)
    lock = repo / ".git" / "index.lock"
    lock.write_text("")
    real_run = ProjectGit.run
    merges = []

    async def run(self: ProjectGit, where, *args: str, **kw):  # type: ignore[no-untyped-def]
        if args[:2] == ("merge", "--no-ff"):
            merges.append(lock.exists())
        return await real_run(self, where, *args, **kw)

    monkeypatch.setattr(ProjectGit, "run", run)

    async def editor_status() -> None:
        await trio.sleep(0.3)
        lock.unlink()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(editor_status)
        result = await mgr.merge_workspace(workspace_id)
    assert result.status == "merged"
    assert merges == [False]
    assert (repo / "new.txt").read_text() == "new\n"
    assert git(repo, "rev-parse", "HEAD^2") != git(repo, "rev-parse", "HEAD^1")


async def test_a_lock_taken_as_git_merges_leaves_no_half_merge(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another git command takes the index the moment air's merge starts: git 2.39 then writes
    ``MERGE_HEAD`` without the merge's changes (a commit now would record the task merged
    without them). Air ends its own merge state and merges again once the lock is gone."""
    mgr = WorkspaceManager(str(repo), Events())
    workspace_id, _ = await task_with_new_file(mgr)
    lock = repo / ".git" / "index.lock"
    real_run = ProjectGit.run
    merges = []

    first_ended = trio.Event()

    async def run(self: ProjectGit, where, *args: str, **kw):  # type: ignore[no-untyped-def]
        if args[:2] == ("merge", "--no-ff"):
            merges.append(args)
            if len(merges) == 1:
                lock.write_text("")
                try:
                    return await real_run(self, where, *args, **kw)
                finally:
                    first_ended.set()
        return await real_run(self, where, *args, **kw)

    async def release() -> None:
        # after the first merge met the lock (a fixed 0.5 s let a loaded machine's first
        # merge start after the release: it merged at once, and the test saw one merge)
        await first_ended.wait()
        await trio.sleep(0.2)
        lock.unlink()

    monkeypatch.setattr(ProjectGit, "run", run)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(release)
        result = await mgr.merge_workspace(workspace_id)
    assert len(merges) == 2
    assert result.status == "merged"
    assert (repo / "new.txt").read_text() == "new\n"
    assert not (repo / ".git" / "MERGE_HEAD").exists()
    assert git(repo, "status", "--porcelain") == ""


@pytest.mark.parametrize("when", ["before", "during"])
async def test_a_lock_never_released_fails_the_merge_and_changes_nothing(
    repo: Path, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    """A lock left by a git that crashed: after ``INDEX_LOCK_PATIENCE_S`` the merge gives up,
    with nothing of its own left in the project (``before``: it never began; ``during``: it
    began and could write nothing, and its merge state is forgotten)."""
    monkeypatch.setattr(worktrees, "INDEX_LOCK_PATIENCE_S", 0.4)
    mgr = WorkspaceManager(str(repo), Events())
    workspace_id, kept = await task_with_new_file(mgr)
    lock = repo / ".git" / "index.lock"
    head = git(repo, "rev-parse", "HEAD")
    if when == "before":
        lock.write_text("")
    else:
        real_run = ProjectGit.run

        async def run(self: ProjectGit, where, *args: str, **kw):  # type: ignore[no-untyped-def]
            if args[:2] == ("merge", "--no-ff"):
                lock.write_text("")
            return await real_run(self, where, *args, **kw)

        monkeypatch.setattr(ProjectGit, "run", run)
    with pytest.raises(AirException) as raised:
        await mgr.merge_workspace(workspace_id)
    error = raised.value.error
    assert error.kind == ErrorKind.WORKSPACE_ERROR
    assert "another git command held the project's index (.git/index.lock) for 0.4 s" in (
        error.message
    )
    assert error.user_action == (
        "When no git command runs in the project, remove .git/index.lock if it is still "
        f"there, then merge it: git merge {kept}"
    )
    assert not (repo / ".git" / "MERGE_HEAD").exists()
    lock.unlink()
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "status", "--porcelain") == ""
    assert not (repo / "new.txt").exists()
