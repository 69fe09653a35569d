"""A merge never lands a file over ``MERGE_FILE_MAX_MB`` in the project.

A merged file stays in the project's history for good, and git hosts refuse files over 100 MiB:
a core dump, a downloaded dataset or a binary a task's commands left where nothing ignores it
was merged like source. Now it is a ``write_area_violation`` naming it (nothing merges, the
workspace is kept), for both strategies; the limit is lowered here to keep the test small."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from air.contracts.error import AirException, ErrorKind
from air.contracts.task import WorkspacePlan, WorkspaceStrategy
from air.workspace import merge_checks
from air.workspace.manager import WorkspaceManager
from tests.gitrepo import git
from tests.workspace.recorder import Events


def _size(path: Path) -> int | None:
    return os.path.getsize(path) if os.path.lexists(path) else None


def _sized(path: Path, size: int) -> None:
    with open(path, "wb") as handle:
        handle.write(b"\0" * size)


@pytest.mark.parametrize("strategy", [WorkspaceStrategy.WORKTREE, WorkspaceStrategy.ISOLATED_COPY])
async def test_a_file_over_the_limit_is_never_merged(
    repo: Path, monkeypatch: pytest.MonkeyPatch, strategy: WorkspaceStrategy
) -> None:
    monkeypatch.setattr(merge_checks, "MERGE_FILE_MAX_MB", 1)
    mgr = WorkspaceManager(str(repo), Events())
    ref = await mgr.create_workspace(WorkspacePlan(task_id="t1", strategy=strategy))
    _sized(Path(ref.path, "core"), (2 << 20) + 5)
    _sized(Path(ref.path, "small.bin"), 1 << 20)  # at the limit: fine
    head = git(repo, "rev-parse", "HEAD")
    with pytest.raises(AirException) as raised:
        await mgr.merge_workspace(ref.workspace_id)
    error = raised.value.error
    assert error.kind == ErrorKind.WRITE_AREA_VIOLATION
    assert "core (a 2 MiB file (a merge takes files up to 1 MiB))" in error.message
    assert "small.bin" not in error.message
    assert git(repo, "rev-parse", "HEAD") == head
    assert _size(repo / "core") is None
    assert _size(repo / "small.bin") is None
    assert mgr.get(ref.workspace_id).status == "active"  # kept as it is


async def test_files_at_the_limit_merge(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(merge_checks, "MERGE_FILE_MAX_MB", 1)
    mgr = WorkspaceManager(str(repo), Events())
    ref = await mgr.create_workspace(
        WorkspacePlan(task_id="t1", strategy=WorkspaceStrategy.WORKTREE)
    )
    _sized(Path(ref.path, "small.bin"), 1 << 20)
    assert (await mgr.merge_workspace(ref.workspace_id)).status == "merged"
    assert _size(repo / "small.bin") == 1 << 20
