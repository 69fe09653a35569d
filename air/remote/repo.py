"""The remote end of workspace sync by git: ``python -P -m air.remote.repo CMD WORKDIR ...``
(issue #27 item 5; IMPL-REMOTE-4).

Owns the layout under the host's work directory and the commands the parent runs over ssh:

- ``known WORKDIR``: the commits the host's object cache (``cache.git``, bare, no remotes, no
  credentials) already holds, one per line — the parent leaves them out of the next bundle;
- ``receive WORKDIR RUN BASE [LIFETIME_S]`` (a bundle on stdin): its objects into the cache,
  then a per-run bare repository ``runs/RUN/repo.git`` (alternates to the cache, no remotes),
  the run's worktree ``runs/RUN/wt`` at BASE, detached, and its lease (how long it may live);
  prints the worktree's path;
- ``result WORKDIR RUN``: the worktree's state as one commit on BASE (everything but what
  ``.gitignore`` ignores) and a bundle ``BASE..result`` on stdout;
- ``gc WORKDIR RUN``: the run's repository and worktree removed and its cache ref retired; then
  the runs whose lease ran out (their parent died) the same way, and the object cache collected
  when over its bound (``air.remote.cache_gc``).

Every command holds an exclusive ``flock`` on ``WORKDIR/.lock`` while it runs: the tasks of one
run (and other air processes) sync to the same host at once, and the cache is created and fed by
one of them at a time. Every git command is air's hardened one (``air.workspace.gitsafe``): a
task-written config, hook or driver in the worktree runs nothing here either. RUN and BASE are
checked before use.
"""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import sys

from air.remote import PRIVATE_UMASK, cache_gc
from air.workspace.gitsafe import git_environment, hardened_argv

__all__ = ["RUN_ID", "main"]

RUN_ID = re.compile(r"^[A-Za-z0-9_-]{1,80}$")
COMMIT = re.compile(r"^[0-9a-f]{40}$")
IDENTITY = ("-c", "user.name=air", "-c", "user.email=air@localhost")


def _git(git_dir: str, *args: str, work_tree: str | None = None, stdin: bytes = b"") -> bytes:
    env = git_environment()
    env["GIT_DIR"] = git_dir
    if work_tree is not None:
        env["GIT_WORK_TREE"] = work_tree
    done = subprocess.run(
        hardened_argv(*args),
        input=stdin,
        capture_output=True,
        env=env,
        cwd=work_tree or git_dir,
        check=False,
    )
    if done.returncode != 0:
        sys.stderr.write(done.stderr.decode("utf-8", "replace"))
        raise SystemExit(f"air.remote.repo: git {args[0]} failed ({done.returncode})")
    return done.stdout


def _cache(workdir: str) -> str:
    cache = os.path.join(workdir, "cache.git")
    if not os.path.isdir(cache):
        os.makedirs(workdir, exist_ok=True)
        subprocess.run(
            hardened_argv("init", "-q", "--bare", cache),
            env=git_environment(),
            check=True,
            capture_output=True,
        )
    return cache


def known(workdir: str) -> str:
    cache = _cache(workdir)
    return _git(cache, "for-each-ref", "--format=%(objectname)", "refs/air/").decode()


def receive(
    workdir: str, run: str, base: str, bundle: bytes, lifetime_s: float | None = None
) -> str:
    cache = _cache(workdir)
    run_dir = os.path.join(workdir, "runs", run)
    os.makedirs(run_dir, exist_ok=True)
    cache_gc.declare_lifetime(run_dir, lifetime_s)  # first: a stale-run sweep must see it live
    path = os.path.join(run_dir, "base.bundle")
    with open(path, "wb") as fh:
        fh.write(bundle)
    _git(cache, "bundle", "unbundle", path)
    os.remove(path)
    _git(cache, "update-ref", f"refs/air/{run}/base", base)
    repo = os.path.join(run_dir, "repo.git")
    if not os.path.isdir(repo):
        subprocess.run(
            hardened_argv("init", "-q", "--bare", repo),
            env=git_environment(),
            check=True,
            capture_output=True,
        )
        with open(os.path.join(repo, "objects", "info", "alternates"), "w") as fh:
            fh.write(os.path.join(os.path.abspath(cache), "objects") + "\n")
    _git(repo, "update-ref", "refs/air/base", base)
    tree = os.path.join(run_dir, "wt")
    if not os.path.isdir(tree):
        _git(repo, "worktree", "add", "-q", "--detach", tree, base)
    return os.path.abspath(tree)


def result(workdir: str, run: str) -> bytes:
    run_dir = os.path.join(workdir, "runs", run)
    repo = os.path.join(run_dir, "repo.git")
    tree = os.path.join(run_dir, "wt")
    git_dir = os.path.join(repo, "worktrees", "wt")
    _git(git_dir, "add", "-A", work_tree=tree)
    _git(
        git_dir,
        *IDENTITY,
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "air: remote result",
        work_tree=tree,
    )
    head = _git(git_dir, "rev-parse", "HEAD", work_tree=tree).decode().strip()
    _git(repo, "update-ref", "refs/air/result", head)
    return _git(repo, "bundle", "create", "-", "refs/air/base..refs/air/result")


def gc(
    workdir: str,
    run: str,
    *,
    now: float | None = None,
    bound: int = cache_gc.CACHE_BOUND_BYTES,
) -> list[str]:
    """Remove ``run``, then every stale run, then collect the cache; the stale runs removed.
    ``now`` and ``bound``: a test's clock and cache bound."""
    cache = _cache(workdir)
    at = cache_gc.now() if now is None else now
    stale = [r for r in cache_gc.stale_runs(workdir, at) if r != run and RUN_ID.match(r)]
    for each in (run, *stale):
        cache_gc.remove_run(workdir, each)
        cache_gc.retire(_git, cache, each, at)
    cache_gc.expire_gone(_git, cache, at)
    cache_gc.collect_cache(_git, cache, bound)
    return stale


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        sys.stderr.write("usage: python -m air.remote.repo known|receive|result|gc WORKDIR ...\n")
        return 2
    command, workdir, rest = argv[0], argv[1], argv[2:]
    if rest and not RUN_ID.match(rest[0]):
        sys.stderr.write(f"air.remote.repo: bad run id {rest[0]!r}\n")
        return 2
    os.makedirs(workdir, exist_ok=True)
    with open(os.path.join(workdir, ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released with the file: at the end of the command
        return _run(command, workdir, rest, argv)


def _run(command: str, workdir: str, rest: list[str], argv: list[str]) -> int:
    if command == "known" and not rest:
        sys.stdout.write(known(workdir))
    elif command == "receive" and len(rest) in (2, 3) and COMMIT.match(rest[1]):
        lifetime = _seconds(rest[2]) if len(rest) == 3 else None
        if len(rest) == 3 and lifetime is None:
            sys.stderr.write(f"air.remote.repo: bad lifetime {rest[2]!r}\n")
            return 2
        tree = receive(workdir, rest[0], rest[1], sys.stdin.buffer.read(), lifetime)
        sys.stdout.write(tree + "\n")
    elif command == "result" and len(rest) == 1:
        sys.stdout.buffer.write(result(workdir, rest[0]))
    elif command == "gc" and len(rest) == 1:
        for stale in gc(workdir, rest[0]):
            sys.stdout.write(f"removed stale run {stale}\n")
    else:
        sys.stderr.write(f"air.remote.repo: bad command {argv!r}\n")
        return 2
    return 0


def _seconds(text: str) -> float | None:
    """A lifetime in whole seconds (``receive``'s LIFETIME_S), or None when it is not one."""
    return float(text) if text.isdigit() and len(text) <= 12 else None


if __name__ == "__main__":
    os.umask(PRIVATE_UMASK)  # what air makes on a shared host is the user's alone
    sys.exit(main(sys.argv[1:]))
