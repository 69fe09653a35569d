"""Two air processes in one project change its files and its backups one at a time
(IMPL-REL-4): snapshots from several processes at once all land in the backup repository, and a
merge or a snapshot waits while another process holds the project's lock.

Found with two `air run --headless` batches in one project (a supported use: two runs never
touch each other's workers): in 2 of 12 rounds a task failed after its work was verified, at its
pre-merge snapshot ("git add failed in the backup repository": the other process held the
backup index), and two snapshots taken at once both read the same parent, so one of them was
lost from the snapshot chain `air restore` reads.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import trio

from air.contracts.error import AirException, ErrorKind
from air.contracts.task import WorkspacePlan, WorkspaceStrategy
from air.workspace.backups import BackupRepository
from air.workspace.manager import WorkspaceManager
from air.workspace.tree_lock import BACKUPS, TREE
from tests.forked_air import air_cli
from tests.gitrepo import git
from tests.workspace.recorder import Events

PROCESSES = 4
SNAPSHOTS = 6

_SNAPSHOTTER = """
import sys, trio
from air.workspace.backups import BackupRepository
root, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
backups = BackupRepository(root, session_id=name)
async def main():
    for i in range(count):
        with open(f"{root}/{name}.txt", "w") as handle:
            handle.write(f"{name} {i}\\n")
        await backups.snapshot(f"{name} {i}")
trio.run(main)
"""

_HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
os.ftruncate(fd, 0)
os.pwrite(fd, f"{os.getpid()}\\n".encode(), 0)  # as air's own holder does
print("held", flush=True)
sys.stdin.readline()
"""


def test_snapshots_from_processes_at_once_all_land(repo: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _SNAPSHOTTER, str(repo), f"p{n}", str(SNAPSHOTS)],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(PROCESSES)
    ]
    errors = [proc.communicate(timeout=120)[1] for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * PROCESSES, errors
    snaps = trio.run(BackupRepository(str(repo)).snapshots)
    reasons = sorted(snap.reason for snap in snaps)
    assert reasons == sorted(f"p{n} {i}" for n in range(PROCESSES) for i in range(SNAPSHOTS))


def _write(path: Path, text: str) -> None:
    path.write_text(text)


def _read(path: Path) -> str:
    return path.read_text()


def _exists(path: Path) -> bool:
    return path.exists()


async def _a_change_to_merge(repo: Path, events: Events) -> tuple[WorkspaceManager, str]:
    """A manager with backups and a worktree task that wrote ``new.txt``: (it, the workspace)."""
    mgr = WorkspaceManager(str(repo), events, backups=BackupRepository(str(repo)))
    ref = await mgr.create_workspace(
        WorkspacePlan(task_id="t1", strategy=WorkspaceStrategy.WORKTREE)
    )
    _write(Path(ref.path, "new.txt"), "new\n")
    return mgr, ref.workspace_id


class LockHolder:
    """Another process holding one of the project's locks until ``release``."""

    def __init__(self, repo: Path, name: str) -> None:
        path = repo / ".air" / "local" / "locks" / f"{name}.lock"
        path.parent.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline() == "held\n"

    def release(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        assert self.proc.wait(timeout=30) == 0


@pytest.mark.parametrize("name", [TREE, BACKUPS])
async def test_a_merge_waits_while_another_process_holds_a_lock(repo: Path, name: str) -> None:
    events = Events()
    mgr, workspace_id = await _a_change_to_merge(repo, events)
    holder = LockHolder(repo, name)
    done: list[str] = []
    async with trio.open_nursery() as nursery:

        async def merge() -> None:
            done.append((await mgr.merge_workspace(workspace_id)).status)

        nursery.start_soon(merge)
        started = time.monotonic()
        while time.monotonic() - started < 1.0:
            await trio.sleep(0.05)
            # neither the project's files nor its backups change while the lock is held
            assert not _exists(repo / "new.txt")
            assert done == []
        assert "workspace.merge.completed" not in events.types()
        await trio.to_thread.run_sync(holder.release)
    assert done == ["merged"]
    assert _read(repo / "new.txt") == "new\n"
    snaps = await BackupRepository(str(repo)).snapshots()
    assert [snap.reason for snap in snaps] == ["before merge"]


async def test_a_snapshot_made_on_a_parent_that_moved_is_refused_not_dropped(repo: Path) -> None:
    """Past the lock too: the ref moves only from the parent the snapshot was made on."""
    backups, other = BackupRepository(str(repo)), BackupRepository(str(repo))
    await backups.snapshot("first")
    real_git = backups._git

    async def moved_meanwhile(*args: str, check: bool = True) -> bytes:
        if args[0] == "update-ref":
            await other._snapshot("meanwhile", None, None, False)  # as if no lock were held
        return await real_git(*args, check=check)

    backups._git = moved_meanwhile  # type: ignore[method-assign]
    with pytest.raises(AirException) as raised:
        await backups.snapshot("second")
    assert raised.value.error.kind == ErrorKind.WORKSPACE_ERROR
    assert [snap.reason for snap in await other.snapshots()] == ["first", "meanwhile"]


def test_air_restore_waits_for_a_merge_of_another_air(repo: Path) -> None:
    assert air_cli(["init"], cwd=repo).returncode == 0
    trio.run(BackupRepository(str(repo)).snapshot, "before")
    (repo / "a.txt").write_text("changed\n")
    holder = LockHolder(repo, TREE)  # another air process amid a merge
    ended: list[Any] = []
    restore = threading.Thread(
        target=lambda: ended.append(air_cli(["restore", "a.txt"], cwd=repo, timeout=60))
    )
    restore.start()
    restore.join(1.0)
    assert ended == []
    assert (repo / "a.txt").read_text() == "changed\n"
    holder.release()
    restore.join(60)
    [done] = ended
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("air: another air process is changing the project's files")
    assert (repo / "a.txt").read_text() == "one\ntwo\nthree\n"


async def test_the_snapshot_before_a_task_waits_for_another_airs_merge(repo: Path) -> None:
    mgr = WorkspaceManager(str(repo), Events(), backups=BackupRepository(str(repo)))
    holder = LockHolder(repo, TREE)
    with trio.move_on_after(0.5) as waited:
        await mgr.snapshot_before_task("t1", "ws1")
    assert waited.cancelled_caught  # it never read a tree another air was merging into
    await trio.to_thread.run_sync(holder.release)
    await mgr.snapshot_before_task("t1", "ws1")
    assert [snap.reason for snap in await BackupRepository(str(repo)).snapshots()] == [
        "before task"
    ]


async def test_a_branch_is_checked_out_after_another_airs_merge(repo: Path) -> None:
    mgr = WorkspaceManager(str(repo), Events())
    holder = LockHolder(repo, TREE)
    with trio.move_on_after(0.5) as waited:
        await mgr.use_branch("air-run")
    assert waited.cancelled_caught
    assert git(repo, "symbolic-ref", "--short", "HEAD") == "main"
    await trio.to_thread.run_sync(holder.release)
    await mgr.use_branch("air-run")
    assert git(repo, "symbolic-ref", "--short", "HEAD") == "air-run"


async def test_a_link_in_the_locks_place_is_a_clear_error(repo: Path, tmp_path: Path) -> None:
    locks = repo / ".air" / "local" / "locks"
    locks.mkdir(parents=True)
    (locks / "backups.lock").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(AirException) as raised:
        await BackupRepository(str(repo)).snapshot("x")
    assert raised.value.error.kind == ErrorKind.WORKSPACE_ERROR
    assert "cannot open air's lock" in raised.value.error.message
    assert not (tmp_path / "elsewhere").exists()


async def test_a_merge_waits_for_a_stopped_holder_only_so_long(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A holder stopped (Ctrl-Z) or hung mid-merge: the merge gives up after its patience with
    the holder's pid and what to do, within its grace; found as a run that ended "blocked"
    after 120 s without a word."""
    monkeypatch.setattr("air.workspace.manager.TREE_PATIENCE_S", 0.5)
    events = Events()
    mgr, workspace_id = await _a_change_to_merge(repo, events)
    holder = LockHolder(repo, TREE)
    try:
        with trio.fail_after(30), pytest.raises(AirException) as raised:
            await mgr.merge_workspace(workspace_id)
    finally:
        await trio.to_thread.run_sync(holder.release)
    error = raised.value.error
    assert error.kind == ErrorKind.WORKSPACE_ERROR
    assert f"another air process {holder.proc.pid} has held the project's files" in error.message
    assert f"kill {holder.proc.pid}" in (error.user_action or "")
    assert not _exists(repo / "new.txt")
    assert "workspace.merge.started" not in events.types()
    # the holder gone, the kept workspace merges
    assert (await mgr.merge_workspace(workspace_id)).status == "merged"
