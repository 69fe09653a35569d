"""WorkspaceManager against real git repositories and real directories."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from air.contracts.error import AirException
from air.contracts.task import WorkspacePlan, WorkspaceStrategy
from air.workspace.manager import WorkspaceManager
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
    # a fresh manager reads the durable sidecars
    again = WorkspaceManager(str(repo), events, now=clock)
    assert {r.status for r in again.list_records()} == {"cleaned", "active"}
