"""Workspace sync by git with this machine's sshd (tests/remote/conftest.py; IMPL-REMOTE-4):
the base (a dirty tracked file included, untracked and ignored secrets never) reaches a per-run
worktree on the host, the second push sends only what the host lacks, the result comes back as
a commit on the base, one that does not descend from it is refused, and gc removes the run."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from air.contracts.error import AirException
from air.remote.hosts import HostConfig
from air.remote.sync import fetch_result, gc_remote, push_base
from air.workspace.gitsafe import locate_git
from tests.gitrepo import git, init_repo
from tests.remote.conftest import REMOTE_USER

pytestmark = pytest.mark.slow
CANARY = "canary-7c1d9e0f2a3b"


def as_remote(*argv: str, cwd: str) -> str:
    """A command as the remote user, in its worktree (what its executor would do there)."""
    done = subprocess.run(
        ["setpriv", f"--reuid={REMOTE_USER}", f"--regid={REMOTE_USER}", "--init-groups",
         "env", "-i", f"HOME=/home/{REMOTE_USER}", "PATH=/usr/bin:/bin", *argv],
        cwd=cwd, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout


def _files_under(root: str) -> list[str]:
    return sorted(
        os.path.relpath(os.path.join(d, f), root)
        for d, _dirs, files in os.walk(root)
        for f in files
        if ".git" not in os.path.relpath(d, root).split(os.sep) and f != ".git"
    )


def _read(path: Path) -> bytes:
    return path.read_bytes()


def _with_canary(root: str) -> list[str]:
    """Every file under ``root`` (the host's work directory) holding the canary."""
    return [
        os.path.join(d, name)
        for d, _dirs, files in os.walk(root)
        for name in files
        if CANARY.encode() in Path(d, name).read_bytes()
    ]


def _project(tmp_path: Path) -> Path:
    repo = tmp_path / "proj"
    repo.mkdir()
    (repo / "a.txt").write_text("one\n")
    (repo / ".gitignore").write_text("secret.key\n")
    (repo / "blob.bin").write_bytes(os.urandom(64 * 1024))
    init_repo(repo, message="first")
    (repo / "a.txt").write_text("one, edited\n")  # dirty, tracked: travels
    (repo / ".env").write_text(f"TOKEN={CANARY}\n")  # untracked: never travels
    (repo / "secret.key").write_text(CANARY)  # ignored: never travels
    return repo


async def test_base_goes_result_comes_back_secrets_stay(
    tmp_path: Path, remote_host: HostConfig
) -> None:
    repo = _project(tmp_path)
    location = locate_git(str(repo), project_root=str(repo))
    status_before = git(repo, "status", "--porcelain")
    run = "run_sync_" + os.urandom(4).hex()
    remote = await push_base(remote_host, location, run)
    try:
        assert remote.sent_bytes > 64 * 1024
        assert _files_under(remote.worktree) == [".gitignore", "a.txt", "blob.bin"]
        assert _read(Path(remote.worktree, "a.txt")) == b"one, edited\n"
        assert _with_canary(remote_host.workdir) == []
        assert git(repo, "status", "--porcelain") == status_before
        as_remote("sh", "-c", "echo made there > b.txt", cwd=remote.worktree)
        result = await fetch_result(location, remote)
        assert git(repo, "show", f"{result}:b.txt") == "made there"
        assert git(repo, "show", f"{result}:a.txt") == "one, edited"
        assert git(repo, "rev-parse", f"{result}^") == remote.base
        assert git(repo, "rev-parse", f"refs/air/remote/{run}") == result
        assert git(repo, "status", "--porcelain") == status_before
        # a second run of the same project: only what the host lacks (a new base commit)
        again = await push_base(remote_host, location, run + "b")
        assert 0 < again.sent_bytes < 4096
        assert await gc_remote(again)
    finally:
        assert await gc_remote(remote)
    assert _files_under(remote.worktree) == []


async def test_a_result_that_does_not_descend_from_the_base_is_refused(
    tmp_path: Path, remote_host: HostConfig
) -> None:
    repo = _project(tmp_path)
    location = locate_git(str(repo), project_root=str(repo))
    run = "run_forged_" + os.urandom(4).hex()
    remote = await push_base(remote_host, location, run)
    try:
        as_remote("git", "checkout", "-q", "--orphan", "elsewhere", cwd=remote.worktree)
        with pytest.raises(AirException) as info:
            await fetch_result(location, remote)
        assert info.value.kind == "workspace_error"
        assert "does not descend from the base" in info.value.error.message
        assert git(repo, "for-each-ref", "refs/air/remote/") == ""
    finally:
        assert await gc_remote(remote)
