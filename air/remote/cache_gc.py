"""Collecting a host's work directory: ended runs, stale runs and the object cache (issue #27).

Owns what ``python -P -m air.remote.repo gc WORKDIR RUN`` does after it removed RUN, always
under the work directory's ``.lock`` (``air.remote.repo.main``):

- ``declare_lifetime``: ``receive`` writes ``runs/RUN/lease`` — how long the run may live, in
  seconds, counted from the file's mtime (the parent sends its task's deadline: one deadline
  bounds queueing, start, running and retries, IMPL-DEADLINE-1);
- ``stale_runs``: the ``runs/`` directories whose lease ran out ``GRACE_S`` ago (one without a
  lease: ``UNDECLARED_STALE_S`` after its mtime) — runs whose parent died before their gc; a
  run within its lease is live and never touched;
- ``retire``: a removed run's cache ref moves to ``refs/air-gone/EPOCH/RUN``, so what it needed
  stays reachable for ``GRACE_S`` more (a ``known`` listed it to a task still sending its
  bundle); ``expire_gone`` deletes the gone refs older than that;
- ``collect_cache``: when the cache is over ``max(CACHE_BOUND_BYTES, 2 × its size after the
  last collection)``, ``git gc --prune=now`` drops every object no ref reaches — the amortised
  cost stays linear in what was added, and a cache whose live set is over the bound is not
  repacked after every run.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable

from air.tree_walk import remove_tree

__all__ = [
    "CACHE_BOUND_BYTES",
    "GRACE_S",
    "UNDECLARED_STALE_S",
    "cache_bytes",
    "collect_cache",
    "declare_lifetime",
    "expire_gone",
    "now",
    "remove_run",
    "retire",
    "stale_runs",
]

CACHE_BOUND_BYTES = 256 * 1024 * 1024
GRACE_S = 3600.0
"""How long a run's objects stay after its gc, and a lease after it ran out."""
UNDECLARED_STALE_S = 24 * 3600.0
"""A run directory without a lease (a receive that died first) is stale this long after."""
LAST_SIZE = "air-gc-size"
"""In the cache: its size in bytes after the last collection."""

Git = Callable[..., bytes]
"""``air.remote.repo._git``: (git_dir, *args) → stdout; exits on failure."""


def declare_lifetime(run_dir: str, lifetime_s: float | None) -> None:
    """The run's lease: ``lifetime_s`` from now (None: undeclared, the default bound applies)."""
    if lifetime_s is None:
        return
    with open(os.path.join(run_dir, "lease"), "w") as fh:
        fh.write(f"{lifetime_s:.0f}\n")


def _expires(run_dir: str) -> float:
    path = os.path.join(run_dir, "lease")
    try:
        with open(path) as fh:
            lifetime = float(fh.read().strip())
        return os.stat(path).st_mtime + lifetime + GRACE_S
    except (OSError, ValueError):
        return os.stat(run_dir).st_mtime + UNDECLARED_STALE_S


def stale_runs(workdir: str, now: float) -> list[str]:
    """The runs under ``workdir/runs`` whose lease ran out (module docstring), by name."""
    runs = os.path.join(workdir, "runs")
    try:
        names = sorted(os.listdir(runs))
    except FileNotFoundError:
        return []
    stale = []
    for name in names:
        path = os.path.join(runs, name)
        try:
            if os.path.isdir(path) and not os.path.islink(path) and _expires(path) < now:
                stale.append(name)
        except OSError:
            continue
    return stale


def retire(git: Git, cache: str, run: str, now: float) -> None:
    """Move the run's base ref to ``refs/air-gone/EPOCH/RUN`` (kept for ``GRACE_S``)."""
    ref = f"refs/air/{run}/base"
    found = git(cache, "for-each-ref", "--format=%(objectname)", ref).decode().split()
    if found:
        git(cache, "update-ref", f"refs/air-gone/{now:.0f}/{run}", found[0])
        git(cache, "update-ref", "-d", ref)


def expire_gone(git: Git, cache: str, now: float) -> int:
    """Delete the gone refs older than ``GRACE_S``; how many."""
    refs = git(cache, "for-each-ref", "--format=%(refname)", "refs/air-gone/").decode().split()
    expired = 0
    for ref in refs:
        match = re.match(r"^refs/air-gone/(\d+)/", ref)
        if match is None or int(match.group(1)) + GRACE_S < now:
            git(cache, "update-ref", "-d", ref)
            expired += 1
    return expired


def cache_bytes(git: Git, cache: str) -> int:
    """The cache's object store size (``git count-objects -v``: loose, packs, garbage)."""
    counts = dict(
        line.split(": ", 1) for line in git(cache, "count-objects", "-v").decode().splitlines()
    )
    kib = sum(int(counts.get(k, "0")) for k in ("size", "size-pack", "size-garbage"))
    return kib * 1024


def collect_cache(git: Git, cache: str, bound: int = CACHE_BOUND_BYTES) -> bool:
    """``git gc --prune=now`` when the cache is over its bound (module docstring); True if it
    ran. Only what no ref (``refs/air/``, ``refs/air-gone/``) reaches goes."""
    marker = os.path.join(cache, LAST_SIZE)
    try:
        with open(marker) as fh:
            last = int(fh.read().strip())
    except (OSError, ValueError):
        last = 0
    if cache_bytes(git, cache) <= max(bound, 2 * last):
        return False
    git(cache, "gc", "--quiet", "--prune=now")
    with open(marker, "w") as fh:
        fh.write(f"{cache_bytes(git, cache)}\n")
    return True


def remove_run(workdir: str, run: str) -> None:
    """The run's directory (repository, worktree, lease) removed."""
    remove_tree(os.path.join(workdir, "runs", run), ignore_errors=True)


def now() -> float:
    return time.time()
