"""Workspace sync by git, the parent's side (issue #27 item 5; IMPL-REMOTE-4).

Owns ``capture_base`` (the work tree's tracked files as they are now — a dirty tree included —
as one commit on HEAD; untracked files, ``.env`` among them, are never part of it),
``RemoteRun`` (where a run's worktree is on the host), ``push_base`` (a bundle of the base
without the commits the host's cache already has, sent over ssh to ``air.remote.repo receive``:
a per-run bare repository and worktree there, no remotes, no credentials), ``fetch_result``
(the remote worktree as a commit, back as a bundle of one head, its pack indexed here with
every object checked as ``git fsck`` checks it, and refused unless it descends from the base;
the caller then runs the same write-area check and merge as for a local task) and
``gc_remote``. Every local git command is air's hardened one.
"""

from __future__ import annotations

import math
import os
import re
import tempfile
from typing import NamedTuple

from air.contracts.error import AirException, ErrorKind
from air.remote.hosts import HostConfig
from air.remote.login import run_on_host
from air.workspace.gitsafe import GitLocation, run_git, run_git_bounded

__all__ = ["RemoteRun", "capture_base", "fetch_result", "gc_remote", "push_base"]

IDENTITY = ("-c", "user.name=air", "-c", "user.email=air@localhost")
_HEAD = re.compile(rb"([0-9a-f]{40}|[0-9a-f]{64}) refs/air/result")
"""The one head of a result bundle as ``air.remote.repo result`` makes it."""
RESULT_MAX = 4 << 30
"""The largest result bundle taken from a host (written to a file as it comes, never held)."""
_HEADER_MAX = 1 << 20
"""The most of a bundle's header read looking for its end (one head and the base's commits)."""


class RemoteRun(NamedTuple):
    host: HostConfig
    run: str
    base: str
    worktree: str
    """The run's worktree on the host."""
    sent_bytes: int
    """The size of the base bundle sent (0: the host had the base already)."""


def _failed(message: str, detail: bytes = b"") -> AirException:
    return AirException.of(
        kind=ErrorKind.WORKSPACE_ERROR,
        message=message,
        detail=detail.decode("utf-8", "replace")[-2000:] or None,
        user_action="Check the host with `air doctor --host NAME`; the local work is unchanged.",
    )


async def _git(location: GitLocation, *args: str, stdin: bytes = b"") -> bytes:
    done = await run_git(location, *args, stdin=stdin)
    if done.returncode != 0:
        raise _failed(f"git {args[0] if args[0] != '-c' else args[4]} failed", done.stderr)
    return done.stdout


async def capture_base(location: GitLocation) -> str:
    """HEAD, or (with changes to tracked files) a commit on HEAD holding the work tree's tracked
    files as they are; the index and the work tree are left as they were."""
    head = (await _git(location, "rev-parse", "HEAD")).decode().strip()
    stash = (await _git(location, *IDENTITY, "stash", "create")).decode().strip()
    if not stash:
        return head
    tree = (await _git(location, "rev-parse", f"{stash}^{{tree}}")).decode().strip()
    commit = await _git(
        location, *IDENTITY, "commit-tree", tree, "-p", head, "-m", "air: the work tree as it was"
    )
    return commit.decode().strip()


async def push_base(
    host: HostConfig, location: GitLocation, run: str, lifetime_s: float | None = None
) -> RemoteRun:
    """Send the base of ``location`` to ``host`` and make the run's worktree there.

    Args:
        lifetime_s: how long the run may live (its task's deadline): the host's gc removes it
            as stale only after that (``air.remote.cache_gc``); None: the host's default bound.

    Raises:
        AirException(workspace_error): git or the host failed (nothing local changed).
    """
    base = await capture_base(location)
    known = await run_on_host(host, "air.remote.repo", "known", host.workdir)
    if known is None or known.returncode != 0:
        raise _failed(
            f"cannot reach the object cache on {host.name}", known.stderr if known else b""
        )
    listed = known.stdout.split()
    have = b""
    if listed:  # only what this repository has can be left out of the bundle
        check = await _git(location, "cat-file", "--batch-check", stdin=b"\n".join(listed) + b"\n")
        have = b"\n".join(
            line.split()[0] for line in check.splitlines() if not line.endswith(b" missing")
        )
    bundle = b""
    if base.encode() not in have.split():
        ref = f"refs/air/sync/{run}"  # a bundle carries refs, not bare commits
        await _git(location, "update-ref", ref, base)
        revs = [ref.encode(), *(b"^" + sha for sha in have.split())]
        try:
            bundle = await _git(
                location, "bundle", "create", "-q", "-", "--stdin", stdin=b"\n".join(revs) + b"\n"
            )
        finally:
            await _git(location, "update-ref", "-d", ref)
    lease = [] if lifetime_s is None else [str(max(0, math.ceil(lifetime_s)))]
    done = await run_on_host(
        host,
        "air.remote.repo",
        "receive",
        host.workdir,
        run,
        base,
        *lease,
        stdin=bundle,
        timeout_s=600,
    )
    if done is None or done.returncode != 0:
        raise _failed(
            f"cannot make the run's worktree on {host.name}", done.stderr if done else b""
        )
    worktree = _worktree(done.stdout)
    if worktree is None:
        raise _failed(f"{host.name} named no worktree for the run", done.stdout[-2000:])
    return RemoteRun(host, run, base, worktree, len(bundle))


def _worktree(stdout: bytes) -> str | None:
    """The run's worktree as ``air.remote.repo receive`` names it (its last line): an absolute
    path of printable UTF-8, as the host chose it."""
    lines = stdout.strip().splitlines()
    try:
        path = lines[-1].decode() if lines else ""
    except UnicodeDecodeError:
        return None
    return path if path.startswith("/") and path.isprintable() and len(path) <= 4096 else None


async def fetch_result(location: GitLocation, remote: RemoteRun) -> str:
    """The remote worktree's state as a commit in ``location`` (ref ``refs/air/remote/RUN``).

    Raises:
        AirException(workspace_error): the host failed, or what came back does not descend
            from the base (then nothing is kept).
    """
    with tempfile.TemporaryDirectory(prefix="air-sync-") as tmp:
        path = os.path.join(tmp, "result.bundle")
        done = await run_on_host(
            remote.host,
            "air.remote.repo",
            "result",
            remote.host.workdir,
            remote.run,
            timeout_s=600,
            max_stdout=RESULT_MAX,
            stdout_path=path,
        )
        if done is None or done.returncode != 0:
            raise _failed(
                f"cannot take the result from {remote.host.name}", done.stderr if done else b""
            )
        await _git(location, "bundle", "verify", "-q", path)
        # air's host makes one head (refs/air/result); a bundle may carry any number of refs
        listed, cut = await run_git_bounded(location, "bundle", "list-heads", path, limit=4096)
        heads = listed.stdout.splitlines()
        if cut or len(heads) != 1 or not _HEAD.fullmatch(heads[0]):
            raise _failed(f"the result from {remote.host.name} is not one commit", listed.stdout)
        result = heads[0].split()[0].decode()
        await _index_checked(location, path, remote.host.name)
    ancestry = await run_git(location, "merge-base", "--is-ancestor", remote.base, result)
    if ancestry.returncode != 0:
        raise _failed(
            f"the result from {remote.host.name} does not descend from the base {remote.base[:12]}"
        )
    await _git(location, "update-ref", f"refs/air/remote/{remote.run}", result)
    return result


async def _index_checked(location: GitLocation, path: str, host: str) -> None:
    """The pack of the bundle at ``path`` into ``location``'s objects, each object checked as
    ``git fsck`` checks it (``index-pack --strict``; git 2.39's ``bundle unbundle`` checks
    none): a tree naming ``.git`` or ``..``, a hostile ``.gitmodules``, a malformed commit a
    host made never enters the project's repository.

    Raises:
        AirException(workspace_error): no bundle, or git refused an object (nothing kept).
    """
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        header = b""
        while b"\n\n" not in header:  # the header (verified above) ends with an empty line
            piece = os.read(fd, 1 << 16)
            if not piece or len(header) > _HEADER_MAX:
                raise _failed(f"the result from {host} is no bundle")
            header += piece
        os.lseek(fd, header.index(b"\n\n") + 2, os.SEEK_SET)
        done = await run_git(location, "index-pack", "--stdin", "--fix-thin", "--strict", stdin=fd)
    finally:
        os.close(fd)
    if done.returncode != 0:
        raise _failed(f"the result from {host} holds an object git refuses", done.stderr)


async def gc_remote(remote: RemoteRun) -> bool:
    """Remove the run's repository and worktree on the host; False when it could not."""
    done = await run_on_host(remote.host, "air.remote.repo", "gc", remote.host.workdir, remote.run)
    return done is not None and done.returncode == 0
