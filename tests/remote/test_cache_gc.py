"""A host's work directory is collected (issue #27): ``air.remote.repo gc`` run locally against a
temporary WORKDIR with real git. After a run's gc, runs whose lease ran out (their parent died)
go too and a run within its lease is never touched; the objects only removed runs needed are
pruned once they have been unreferenced for the grace period and the cache is over its bound."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from air.remote import cache_gc, repo

HOUR = 3600.0


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=True)
    return done.stdout.decode().strip()


def commit_with_blob(src: Path, name: str, size: int = 64 * 1024) -> tuple[str, str, bytes]:
    """A new commit on a branch of its own holding a unique file; (commit, blob, bundle)."""
    if not (src / ".git").exists():
        src.mkdir()
        git(src, "init", "-q")
        git(src, "config", "user.email", "t@t")
        git(src, "config", "user.name", "t")
    git(src, "checkout", "-q", "--orphan", name)
    git(src, "rm", "-rfq", "--ignore-unmatch", ".")  # an orphan keeps the index: empty it
    data = os.urandom(size)
    (src / f"{name}.bin").write_bytes(data)
    git(src, "add", f"{name}.bin")
    git(src, "commit", "-q", "-m", name)
    commit = git(src, "rev-parse", "HEAD")
    blob = git(src, "rev-parse", f"HEAD:{name}.bin")
    bundle = subprocess.run(
        ["git", "bundle", "create", "-q", "-", name], cwd=src, capture_output=True, check=True
    ).stdout
    return commit, blob, bundle


def has_object(workdir: Path, sha: str) -> bool:
    cache = workdir / "cache.git"
    done = subprocess.run(["git", "--git-dir", str(cache), "cat-file", "-e", sha], check=False)
    return done.returncode == 0


def refs(workdir: Path) -> list[str]:
    cache = workdir / "cache.git"
    return git(cache, "for-each-ref", "--format=%(refname)").split()


def test_gc_removes_runs_past_their_lease_and_never_a_live_one(tmp_path: Path) -> None:
    src, work = tmp_path / "src", tmp_path / "work"
    made: dict[str, str] = {}
    leases = {"short": 60.0, "long": 10 * HOUR, "undeclared": None, "done": 60.0}
    for run, lease in leases.items():
        commit, _, bundle = commit_with_blob(src, run)
        made[run] = commit
        repo.receive(str(work), run, commit, bundle, lease)
    now = time.time() + 2 * HOUR  # past short's lease and grace only

    assert repo.gc(str(work), "done", now=now) == ["short"]
    assert sorted(os.listdir(work / "runs")) == ["long", "undeclared"]
    assert (work / "runs" / "long" / "wt" / "long.bin").is_file()  # live: untouched
    assert "refs/air/long/base" in refs(work)
    assert "refs/air/short/base" not in refs(work)
    assert f"refs/air-gone/{now:.0f}/short" in refs(work)  # its objects stay for the grace
    assert "refs/air/short/base" not in repo.known(str(work))

    later = time.time() + 25 * HOUR  # past the long lease and the undeclared bound
    assert repo.gc(str(work), "nothing-here", now=later) == ["long", "undeclared"]
    assert os.listdir(work / "runs") == []


def test_objects_only_removed_runs_needed_are_pruned_after_the_grace(tmp_path: Path) -> None:
    src, work = tmp_path / "src", tmp_path / "work"
    blobs: dict[str, str] = {}
    for run in ("gone", "live"):
        commit, blobs[run], bundle = commit_with_blob(src, run)
        repo.receive(str(work), run, commit, bundle, 10 * HOUR)
    now = time.time()

    repo.gc(str(work), "gone", now=now, bound=1)  # over the bound: collected, within the grace
    assert has_object(work, blobs["gone"])  # a task may still send a bundle built on it

    after = now + cache_gc.GRACE_S + 60
    repo.gc(str(work), "other", now=after, bound=10**12)  # under the bound: no repack
    assert has_object(work, blobs["gone"])
    repo.gc(str(work), "other", now=after, bound=1)  # not yet twice its last collected size
    assert has_object(work, blobs["gone"])
    commit, blobs["big"], bundle = commit_with_blob(src, "big", size=512 * 1024)
    repo.receive(str(work), "big", commit, bundle, 10 * HOUR)
    repo.gc(str(work), "other", now=after, bound=1)
    assert not has_object(work, blobs["gone"])
    assert has_object(work, blobs["live"])  # a live run's objects stay
    assert (work / "runs" / "live" / "wt" / "live.bin").is_file()
    assert git(work / "runs" / "live" / "wt", "status", "--porcelain") == ""


def test_receive_refuses_a_bad_lifetime(tmp_path: Path) -> None:
    argv = ["receive", str(tmp_path / "w"), "r1", "0" * 40, "soon"]
    done = subprocess.run(
        [sys.executable, "-P", "-m", "air.remote.repo", *argv],
        input=b"",
        capture_output=True,
        check=False,
    )
    assert done.returncode == 2
    assert b"bad lifetime" in done.stderr
