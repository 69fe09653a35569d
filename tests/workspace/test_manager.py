"""WorkspaceManager against real git repositories and real directories."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path
from typing import Any

import pytest
import trio

from air.contracts.error import AirException, ErrorKind
from air.contracts.task import WorkspacePlan, WorkspaceStrategy
from air.workspace.manager import WorkspaceManager
from air.workspace.records import RecordStore, WorkspaceRecord
from tests.gitrepo import git
from tests.workspace.recorder import Events


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _read(path: Path) -> str:
    return path.read_text()


def _mkdir(*parts: str) -> None:
    os.makedirs(os.path.join(*parts))


def _exists(path: Path | str) -> bool:
    return os.path.exists(path)


class Clock:
    def __init__(self) -> None:
        self.value = "2026-01-01T00:00:00.000000Z"

    def __call__(self) -> str:
        return self.value


async def test_worktree_merges_back_through_commit_and_merge(repo: Path) -> None:
    events = Events()
    mgr = WorkspaceManager(str(repo), events)
    ref = await mgr.create_workspace(
        WorkspacePlan(task_id="t1", strategy=WorkspaceStrategy.WORKTREE)
    )
    assert ref.branch == f"air/ws/{ref.workspace_id}"
    assert _read(Path(ref.path, "a.txt")) == "one\ntwo\nthree\n"
    _write(Path(ref.path, "new.txt"), "new\n")
    assert not _exists(repo / "new.txt")
    assert await mgr.changed_files(ref.workspace_id) == ["new.txt"]
    result = await mgr.merge_workspace(ref.workspace_id)
    assert result.status == "merged"
    assert _read(repo / "new.txt") == "new\n"
    assert git(repo, "rev-parse", "HEAD") == result.merge_commit
    assert events.types() == [
        "workspace.created",
        "workspace.merge.started",
        "workspace.merge.completed",
    ]


async def test_worktree_merge_leaves_cache_directories_behind(repo: Path) -> None:
    """Two tasks whose test runs both wrote __pycache__ must not conflict on the .pyc files."""
    mgr = WorkspaceManager(str(repo), Events())
    refs = [
        await mgr.create_workspace(WorkspacePlan(task_id=t, strategy=WorkspaceStrategy.WORKTREE))
        for t in ("t1", "t2")
    ]
    for n, ref in enumerate(refs):
        _write(Path(ref.path, f"f{n}.txt"), f"{n}\n")
        _write(Path(ref.path, "pkg", "__pycache__", "mod.cpython-311.pyc"), f"bytecode {n}")
        _write(Path(ref.path, ".pytest_cache", "v"), f"cache {n}")
        assert await mgr.changed_files(ref.workspace_id) == [f"f{n}.txt"]
    results = [await mgr.merge_workspace(ref.workspace_id) for ref in refs]
    assert [r.status for r in results] == ["merged", "merged"]
    assert _read(repo / "f0.txt") == "0\n"
    assert _read(repo / "f1.txt") == "1\n"
    tracked = git(repo, "ls-files").splitlines()
    assert not [t for t in tracked if "__pycache__" in t or ".pytest_cache" in t]


async def test_worktree_conflict_is_reported_and_root_untouched(repo: Path) -> None:
    events = Events()
    mgr = WorkspaceManager(str(repo), events)
    ref = await mgr.create_workspace(
        WorkspacePlan(task_id="t1", strategy=WorkspaceStrategy.WORKTREE)
    )
    _write(Path(ref.path, "a.txt"), "ONE\ntwo\nthree\n")
    _write(repo / "a.txt", "uno\ntwo\nthree\n")
    git(repo, "commit", "-q", "-am", "concurrent change")
    head = git(repo, "rev-parse", "HEAD")
    result = await mgr.merge_workspace(ref.workspace_id)
    assert result.status == "conflicted"
    assert result.conflicted_paths == ["a.txt"]
    assert git(repo, "rev-parse", "HEAD") == head
    assert _read(repo / "a.txt") == "uno\ntwo\nthree\n"
    assert git(repo, "status", "--porcelain") == ""
    assert events.types()[-1] == "workspace.merge.conflicted"
    # the work is kept on its branch
    assert "ONE" in git(repo, "show", f"{ref.branch}:a.txt")


async def test_cleanup_keeps_uncommitted_work_on_branch(repo: Path) -> None:
    events = Events()
    mgr = WorkspaceManager(str(repo), events)
    ref = await mgr.create_workspace(
        WorkspacePlan(task_id="t1", strategy=WorkspaceStrategy.WORKTREE)
    )
    _write(Path(ref.path, "wip.txt"), "precious\n")
    await mgr.abandon_workspace(ref.workspace_id, "cancelled")
    await mgr.cleanup_workspace(ref.workspace_id)
    assert not _exists(ref.path)
    assert git(repo, "show", f"{ref.branch}:wip.txt") == "precious"
    assert events.types()[-2:] == ["workspace.abandoned", "workspace.cleaned"]


async def test_isolated_copy_copies_back_and_detects_conflicts(repo: Path) -> None:
    events = Events()
    mgr = WorkspaceManager(str(repo), events)
    ref = await mgr.create_workspace(
        WorkspacePlan(task_id="t1", strategy=WorkspaceStrategy.ISOLATED_COPY)
    )
    assert not _exists(Path(ref.path, ".git"))
    _write(Path(ref.path, "b.txt"), "B\n")
    _mkdir(ref.path, "sub")
    _write(Path(ref.path, "sub", "c.txt"), "c\n")
    assert (await mgr.merge_workspace(ref.workspace_id)).status == "merged"
    assert _read(repo / "b.txt") == "B\n"
    assert _read(repo / "sub" / "c.txt") == "c\n"

    ref2 = await mgr.create_workspace(
        WorkspacePlan(task_id="t2", strategy=WorkspaceStrategy.ISOLATED_COPY)
    )
    _write(Path(ref2.path, "b.txt"), "mine\n")
    _write(repo / "b.txt", "theirs\n")
    result = await mgr.merge_workspace(ref2.workspace_id)
    assert result.status == "conflicted"
    assert result.conflicted_paths == ["b.txt"]
    assert _read(repo / "b.txt") == "theirs\n"
    # unmerged changes without a branch are never deleted
    with pytest.raises(AirException) as info:
        await mgr.cleanup_workspace(ref2.workspace_id)
    assert info.value.kind == "workspace_error"
    assert _read(Path(ref2.path, "b.txt")) == "mine\n"


def test_gc_reads_its_timestamps_as_strptime_did_without_importing_it() -> None:
    """IMPL-BOOT-8: ``utc_now_iso``'s shape through ``fromisoformat``; any other text is the
    ValueError ``strptime("%Y-%m-%dT%H:%M:%S.%fZ")`` raised."""
    from datetime import UTC, datetime

    from air.contracts.ids import utc_now_iso
    from air.workspace.records import parse_iso as _parse_iso

    for text in (utc_now_iso(), "2026-01-03T23:59:59.000000Z", "2026-01-03T23:59:59.5Z"):
        expected = datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
        assert _parse_iso(text) == expected
    for bad in ("2026-01-03", "2026-01-03T23:59:59Z", "2026-01-03T23:59:59.5+00:00", "x"):
        with pytest.raises(ValueError, match="does not match format"):
            _parse_iso(bad)


async def test_gc_retention_merged_7_days_abandoned_3_days(repo: Path) -> None:
    events = Events()
    clock = Clock()
    mgr = WorkspaceManager(str(repo), events, now=clock)
    merged = await mgr.create_workspace(
        WorkspacePlan(task_id="m", strategy=WorkspaceStrategy.WORKTREE)
    )
    _write(Path(merged.path, "m.txt"), "m\n")
    await mgr.merge_workspace(merged.workspace_id)
    abandoned = await mgr.create_workspace(
        WorkspacePlan(task_id="a", strategy=WorkspaceStrategy.WORKTREE)
    )
    await mgr.abandon_workspace(abandoned.workspace_id, "gave up")
    active = await mgr.create_workspace(
        WorkspacePlan(task_id="x", strategy=WorkspaceStrategy.WORKTREE)
    )

    clock.value = "2026-01-03T23:59:59.000000Z"
    assert await mgr.gc() == []
    clock.value = "2026-01-04T00:00:00.000000Z"
    assert await mgr.gc() == [abandoned.workspace_id]
    clock.value = "2026-01-08T00:00:00.000000Z"
    assert await mgr.gc() == [merged.workspace_id]
    assert _exists(active.path)
    assert not _exists(merged.path)
    # a fresh manager reads the durable sidecars; each start lists only what it may still
    # clean (a project's whole history would make every start slower), and finds the rest
    again = WorkspaceManager(str(repo), events, now=clock)
    assert [r.workspace_id for r in again.list_records()] == [active.workspace_id]
    assert again.get(merged.workspace_id).status == "cleaned"
    assert again.get(abandoned.workspace_id).status == "cleaned"
    area = repo / ".air" / "local" / "workspaces"
    assert sorted(p.name for p in area.glob("*.json")) == [f"{active.workspace_id}.json"]


class FailingRecorder(Events):
    """A session ledger that cannot write (its disk is full) when ``workspace.created`` comes."""

    async def __call__(self, kind: str, payload: dict[str, Any]) -> None:
        if kind == "workspace.created":
            raise AirException.of(
                kind=ErrorKind.STORAGE_ERROR,
                message="SQLite could not commit: database or disk is full",
                user_action="Free space on that file system.",
            )
        await super().__call__(kind, payload)


def _leftovers(repo: Path) -> dict[str, list[str]]:
    """What a failed workspace could leave for `air doctor` to find unowned."""
    area = repo / ".air" / "local" / "workspaces"
    return {
        "worktrees": git(repo, "worktree", "list").splitlines()[1:],
        "branches": git(repo, "branch", "--list", "air/ws/*").split(),
        "files": sorted(p.name for p in area.iterdir()) if area.is_dir() else [],
    }


@pytest.mark.parametrize("strategy", [WorkspaceStrategy.WORKTREE, WorkspaceStrategy.ISOLATED_COPY])
async def test_a_workspace_that_cannot_be_recorded_leaves_nothing_behind(
    repo: Path, strategy: WorkspaceStrategy
) -> None:
    # found with a full disk: the worktree was made, its record could not be written, and
    # `air doctor` then reported an orphan worktree after `air resume` had finished the batch
    mgr = WorkspaceManager(str(repo), FailingRecorder())
    with pytest.raises(AirException) as caught:
        await mgr.create_workspace(WorkspacePlan(task_id="t1", strategy=strategy))
    assert caught.value.error.kind == ErrorKind.STORAGE_ERROR  # the cause, not a cleanup error
    assert _leftovers(repo) == {"worktrees": [], "branches": [], "files": []}
    assert git(repo, "status", "--porcelain") == ""


async def test_a_sidecar_that_cannot_be_written_leaves_no_worktree(repo: Path) -> None:
    area = repo / ".air" / "local" / "workspaces"
    (area / "ws_fixed.json.tmp").mkdir(parents=True)  # the sidecar's temporary file cannot be made
    events = Events()
    mgr = WorkspaceManager(str(repo), events)
    with pytest.raises(IsADirectoryError):
        await mgr.create_workspace(
            WorkspacePlan(task_id="t1", strategy=WorkspaceStrategy.WORKTREE),
            workspace_id="ws_fixed",
        )
    assert _leftovers(repo) == {"worktrees": [], "branches": [], "files": ["ws_fixed.json.tmp"]}
    assert events.items == []


async def test_taking_a_workspace_back_never_deletes_a_branch_with_work(repo: Path) -> None:
    # a branch of that name already holding a commit (a workspace id given twice): the make
    # fails at git, and the branch and its commit stay
    git(repo, "branch", "air/ws/ws_given")
    git(repo, "checkout", "-q", "air/ws/ws_given")
    _write(repo / "work.txt", "work\n")
    git(repo, "add", "work.txt")
    git(repo, "commit", "-q", "-m", "work")
    work = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "main")
    mgr = WorkspaceManager(str(repo), Events())
    with pytest.raises(AirException):
        await mgr.create_workspace(
            WorkspacePlan(task_id="t1", strategy=WorkspaceStrategy.WORKTREE),
            workspace_id="ws_given",
        )
    assert git(repo, "rev-parse", "air/ws/ws_given") == work


def test_a_sidecar_that_fails_midway_leaves_no_temporary_file(repo: Path) -> None:
    store = RecordStore(str(repo / ".air" / "local" / "workspaces"))
    rec = WorkspaceRecord(
        workspace_id="ws_x", strategy="isolated_copy", path=str(repo), created_at="t"
    )
    rec.manifest = {"a.txt": object()}  # type: ignore[dict-item]  # not JSON: json.dump fails
    with pytest.raises(TypeError):
        store.save(rec)
    assert os.listdir(repo / ".air" / "local" / "workspaces") == []


async def test_the_doctor_finds_no_orphan_in_the_cleaned_records(repo: Path) -> None:
    from air.cli.doctor_worktrees import WorktreeCheck

    mgr = WorkspaceManager(str(repo), Events())
    ref = await mgr.create_workspace(
        WorkspacePlan(task_id="t1", strategy=WorkspaceStrategy.WORKTREE)
    )
    _write(Path(ref.path, "new.txt"), "new\n")
    await mgr.merge_workspace(ref.workspace_id)
    await mgr.cleanup_workspace(ref.workspace_id)
    assert _exists(repo / ".air" / "local" / "workspaces" / "cleaned")
    check = WorktreeCheck(str(repo))
    assert await check.run() == []
    assert check.found() == "0 workspace(s) with a record; 0 git worktree(s)"


async def _cleaned_beside_the_live_ones(repo: Path) -> tuple[Path, str]:
    """A project whose cleaned workspace's record was written beside the live ones (air
    before ``cleaned/``): the workspaces' directory and that workspace's id."""
    mgr = WorkspaceManager(str(repo), Events())
    ref = await mgr.create_workspace(
        WorkspacePlan(task_id="t1", strategy=WorkspaceStrategy.WORKTREE)
    )
    await mgr.abandon_workspace(ref.workspace_id, "test")
    await mgr.cleanup_workspace(ref.workspace_id)
    area = repo / ".air" / "local" / "workspaces"
    os.replace(area / "cleaned" / f"{ref.workspace_id}.json", area / f"{ref.workspace_id}.json")
    return area, ref.workspace_id


async def test_a_cleaned_record_from_before_the_archive_moves_there_once(repo: Path) -> None:
    area, wid = await _cleaned_beside_the_live_ones(repo)
    again = WorkspaceManager(str(repo), Events())
    assert again.list_records() == []
    assert not _exists(area / f"{wid}.json")
    assert WorkspaceManager(str(repo), Events()).get(wid).status == "cleaned"


async def test_a_cleaned_record_that_cannot_move_is_still_left_out(repo: Path) -> None:
    # the move is maintenance: where the disk refuses it (here a file stands where the
    # directory goes), a start still reads on, and the record moves another time
    area, wid = await _cleaned_beside_the_live_ones(repo)
    os.rmdir(area / "cleaned")
    _write(area / "cleaned", "not a directory\n")
    assert WorkspaceManager(str(repo), Events()).list_records() == []
    assert _exists(area / f"{wid}.json")


def _lexists(path: Path) -> bool:
    return os.path.lexists(path)


def _special_files(root: Path) -> None:
    """What a development tool leaves in a project: a FIFO, a server's socket."""
    os.mkfifo(root / "pipe")
    (root / "tmp" / "sockets").mkdir(parents=True)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(root / "tmp" / "sockets" / "dev.sock"))
    server.close()


async def test_an_isolated_copy_leaves_fifos_and_sockets_out(tmp_path: Path) -> None:
    """Found with a FIFO in a project without git: every isolated copy failed ("`pipe` is a
    named pipe"), so no writer could run beside another; a socket failed it the same way."""
    root = tmp_path / "plain"
    root.mkdir()
    _write(root / "a.txt", "a\n")
    _special_files(root)
    mgr = WorkspaceManager(str(root), Events())
    with trio.fail_after(30):
        ref = await mgr.create_workspace(
            WorkspacePlan(task_id="t1", strategy=WorkspaceStrategy.ISOLATED_COPY)
        )
    assert _read(Path(ref.path, "a.txt")) == "a\n"
    assert not _lexists(Path(ref.path, "pipe"))
    assert not _lexists(Path(ref.path, "tmp", "sockets", "dev.sock"))
    _write(Path(ref.path, "b.txt"), "b\n")
    assert await mgr.changed_files(ref.workspace_id) == ["b.txt"]
    assert (await mgr.merge_workspace(ref.workspace_id)).status == "merged"
    assert _read(root / "b.txt") == "b\n"
    assert stat.S_ISFIFO(os.lstat(root / "pipe").st_mode)
    assert stat.S_ISSOCK(os.lstat(root / "tmp" / "sockets" / "dev.sock").st_mode)
