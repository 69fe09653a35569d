"""The git-backed backup repository of a project: snapshots before merges, and restore.

Owns: ``BackupRepository`` over ``<project>/.air/local/backups/repo.git`` (a bare repository
of air's own; the project's ``.git`` is never used), ``snapshot`` (one commit on
``refs/heads/snapshots`` of the whole work tree — tracked and untracked files, minus what the
project's ignore rules, ``.air/`` and build caches exclude; before a task that writes in the
project itself, its git-ignored files too, bounded by ``IGNORED_BOUND``, but no tree a tool
makes again: a CMake build directory, a virtualenv, ``node_modules``, a tagged cache),
``snapshots``, ``restore_file`` / ``restore_tree`` (with a rescue snapshot taken first) and
``pick`` (which snapshot a file, a time or a session means). IMPL-REL-4.

Every git command goes through ``air.workspace.gitsafe.run_git`` with ``GIT_DIR`` pinned to the
backup repository; every write of it (a snapshot, a restore) holds the project's ``BACKUPS``
lock (``air.workspace.tree_lock``), so air processes in one project take turns, and the
snapshot ref moves only from the parent its commit was made on. Restore writes only regular
files and symlinks at paths git accepted, never under ``.air/`` or ``.git``, and never through a
symlink: a parent component that is a symlink or a file is removed first (it is in the rescue
snapshot). The user's branch, index, HEAD and history are never read or written.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

import trio

from air.contracts.error import AirException, ErrorKind
from air.contracts.ids import utc_now_iso
from air.tree_walk import dir_beneath, walk
from air.workspace.gitsafe import GitLocation, run_git
from air.workspace.regenerable import regenerable
from air.workspace.tree_lock import BACKUPS, hold

__all__ = ["IGNORED_BOUND", "LOOSE_LIMIT", "BackupRepository", "IgnoredBound", "Snapshot"]

_REF = "refs/heads/snapshots"
_ID = ["-c", "user.name=air", "-c", "user.email=air@localhost", "-c", "commit.gpgsign=false"]
_EXCLUDE = (
    "/.air/\n.git\n__pycache__/\n.pytest_cache/\n.mypy_cache/\n.ruff_cache/\n*.air-merge.tmp\n"
)
LOOSE_LIMIT = 2048
"""Loose objects the backup repository holds before it is packed. Each snapshot leaves a few,
each a file of at least one disk block, and nothing else ever packs them (air's git runs with
``gc.auto=0``): 600 snapshots of a small project left 3,649 loose objects in 16 MiB."""
_NEVER = (".air", ".git")
_CACHES = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", "node_modules"})
_OURS = (".air-merge.tmp", ".air-restore.tmp")


class IgnoredBound(NamedTuple):
    """How much of the git-ignored files a pre-task snapshot takes (IMPL-MERGE-1)."""

    max_file_bytes: int = 8 << 20
    max_total_bytes: int = 256 << 20
    max_files: int = 20_000


IGNORED_BOUND = IgnoredBound()


@dataclass(frozen=True)
class Snapshot:
    """One commit of the backup repository."""

    commit: str
    at: str
    """When it was taken (UTC ISO 8601, microseconds)."""
    reason: str
    session_id: str | None
    task_id: str | None
    workspace_id: str | None


def _fail(message: str, user_action: str, kind: ErrorKind = ErrorKind.NOT_FOUND) -> AirException:
    return AirException.of(kind=kind, message=message, user_action=user_action)


def _parse_time(text: str) -> datetime:
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.astimezone()  # a time without a zone is the user's local time
    return value


def blob_id(data: bytes) -> str:
    """The git blob id of ``data`` (what ``git hash-object`` prints)."""
    digest = _blob_hash(len(data))
    digest.update(data)
    return digest.hexdigest()


def _blob_or_none(blob: str) -> str | None:
    """A raw diff's blob id, None for git's all-zero "no file"."""
    return None if blob.strip("0") == "" else blob


def _blob_hash(size: int) -> hashlib._Hash:
    """A blob id's hash of ``size`` bytes, its header fed: the content follows."""
    return hashlib.sha1(b"blob %d\0" % size, usedforsecurity=False)


class BackupRepository:
    """The backup repository of the project at ``project_root``."""

    def __init__(self, project_root: str, *, session_id: str | None = None) -> None:
        self.project_root = os.path.realpath(project_root)
        self.git_dir = os.path.join(self.project_root, ".air", "local", "backups", "repo.git")
        self.session_id = session_id
        self._lock = trio.Lock()
        self._location = GitLocation(
            work_tree=self.project_root,
            git_dir=self.git_dir,
            common_dir=self.git_dir,
            fingerprint="",
        )

    async def _git(self, *args: str, check: bool = True) -> bytes:
        result = await run_git(self._location, *_ID, *args)
        if check and result.returncode != 0:
            raise _fail(
                f"git {args[0]} failed in the backup repository {self.git_dir}",
                "Run `air doctor`; the backup repository may be damaged.",
                ErrorKind.WORKSPACE_ERROR,
            )
        return result.stdout

    def _exists(self) -> bool:
        return os.path.isfile(os.path.join(self.git_dir, "HEAD"))

    def _write_exclude(self) -> None:
        exclude = os.path.join(self.git_dir, "info", "exclude")
        os.makedirs(os.path.dirname(exclude), exist_ok=True)
        with open(exclude, "w", encoding="utf-8") as handle:
            handle.write(_EXCLUDE)

    async def _ensure(self) -> None:
        if self._exists():
            return
        os.makedirs(self.git_dir, exist_ok=True)
        created = await run_git(None, "init", "--quiet", "--bare", self.git_dir)
        if created.returncode != 0:
            raise _fail(
                f"cannot create the backup repository {self.git_dir}",
                "Check that .air/local is writable.",
                ErrorKind.WORKSPACE_ERROR,
            )
        self._write_exclude()

    async def snapshot(
        self,
        reason: str,
        *,
        task_id: str | None = None,
        workspace_id: str | None = None,
        include_ignored: bool = False,
    ) -> Snapshot:
        """Commit the current work tree to the backup repository; returns the snapshot.

        A snapshot identical to the previous one is still a commit (it marks the time).

        Args:
            reason: why (shown by ``air restore --list``).
            task_id: the task it was taken for.
            workspace_id: the workspace it was taken for.
            include_ignored: take the project's git-ignored files too (not ``.air``, ``.git``,
                build caches or nested repositories), within ``IGNORED_BOUND``; an ignored
                file once taken stays in every later snapshot while it exists.
        """
        async with self._writing():
            return await self._snapshot(reason, task_id, workspace_id, include_ignored)

    @asynccontextmanager
    async def _writing(self) -> AsyncIterator[None]:
        """This process's turn, then the project's (``BACKUPS``): one writer of the backup
        index and ref at a time, across air processes too."""
        async with self._lock, hold(self.project_root, BACKUPS):
            yield

    async def _snapshot(
        self, reason: str, task_id: str | None, workspace_id: str | None, include_ignored: bool
    ) -> Snapshot:
        await self._ensure()
        await self._git("add", "--all", "--", ".")
        skipped = await self._add_ignored(IGNORED_BOUND) if include_ignored else 0
        tree = (await self._git("write-tree")).decode().strip()
        at = utc_now_iso()
        lines = [f"air: {reason}", "", f"Air-Time: {at}", f"Air-Reason: {reason}"]
        if skipped:
            lines.append(f"Air-Skipped-Ignored: {skipped}")
        if self.session_id:
            lines.append(f"Air-Session: {self.session_id}")
        if task_id:
            lines.append(f"Air-Task: {task_id}")
        if workspace_id:
            lines.append(f"Air-Workspace: {workspace_id}")
        parent = await run_git(self._location, "rev-parse", "--verify", "--quiet", _REF)
        previous = parent.stdout.decode().strip() if parent.returncode == 0 else ""
        argv = ["commit-tree", tree, "-m", "\n".join(lines)]
        if previous:
            argv += ["-p", previous]
        commit = (await self._git(*argv)).decode().strip()
        # only over the parent it was made on: a snapshot is never dropped from the chain
        await self._git("update-ref", _REF, commit, previous)
        await self._pack_when_loose()
        return Snapshot(
            commit=commit,
            at=at,
            reason=reason,
            session_id=self.session_id,
            task_id=task_id,
            workspace_id=workspace_id,
        )

    async def _pack_when_loose(self) -> None:
        """Pack the loose objects once there are more than ``LOOSE_LIMIT`` of them, rolling
        the packs up geometrically (each at least twice the next: a repository of N objects is
        rewritten O(log N) times, never whole at every packing). In the foreground, under the
        lock: a detached ``git gc`` would outlive air. Maintenance: a failure (a git before
        2.32 has no ``--geometric``) leaves the snapshot as taken."""
        if await trio.to_thread.run_sync(self._loose_objects) > LOOSE_LIMIT:
            await run_git(self._location, "repack", "-d", "-q", "--geometric=2")

    def _loose_objects(self) -> int:
        """How many loose objects the repository holds (what ``git count-objects`` counts,
        without a process)."""
        objects, count = os.path.join(self.git_dir, "objects"), 0
        for fan in range(256):
            try:
                with os.scandir(os.path.join(objects, f"{fan:02x}")) as entries:
                    count += sum(1 for _ in entries)
            except FileNotFoundError:
                continue
        return count

    async def _add_ignored(self, bound: IgnoredBound) -> int:
        """Stage the project's git-ignored files within ``bound``; returns how many were left
        out for the bound."""
        listed = await self._git(
            "ls-files",
            "-z",
            "--others",
            "--ignored",
            "--exclude-standard",
            "--directory",
            "--",
            ".",
            ":(exclude).air",
        )
        entries = [os.fsdecode(e) for e in listed.split(b"\0") if e]
        chosen, skipped = await trio.to_thread.run_sync(self._pick_ignored, entries, bound)
        if chosen:
            specs = b"".join(os.fsencode(":(literal)" + rel) + b"\0" for rel in chosen)
            result = await run_git(
                self._location,
                *_ID,
                "add",
                "--force",
                "--pathspec-from-file=-",
                "--pathspec-file-nul",
                stdin=specs,
            )
            if result.returncode != 0:
                raise _fail(
                    f"git add failed in the backup repository {self.git_dir}",
                    "Run `air doctor`; the backup repository may be damaged.",
                    ErrorKind.WORKSPACE_ERROR,
                )
        return skipped

    def _pick_ignored(self, entries: list[str], bound: IgnoredBound) -> tuple[list[str], int]:
        """The ignored files (``entries``: files, and directories ending in ``/``) to take,
        smallest walk first, and the count left out."""
        chosen: list[str] = []
        total = skipped = 0

        def consider(rel: str) -> None:
            nonlocal total, skipped
            try:
                info = os.lstat(os.path.join(self.project_root, rel))
            except OSError:
                return
            if not (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)):
                return
            size = info.st_size
            if (
                size > bound.max_file_bytes
                or total + size > bound.max_total_bytes
                or len(chosen) >= bound.max_files
            ):
                skipped += 1
                return
            chosen.append(rel)
            total += size

        for entry in sorted(entries):
            parts = entry.rstrip("/").split("/")
            if parts[0] in _NEVER or _CACHES.intersection(parts) or entry.endswith(_OURS):
                continue
            if not entry.endswith("/"):
                consider(entry)
                continue
            top = os.path.join(self.project_root, entry)
            for dirpath, dirnames, filenames in walk(top):
                if ".git" in dirnames or ".git" in filenames:
                    dirnames[:] = []  # a repository of its own: not ours to snapshot
                    continue
                if regenerable(dirpath, filenames):
                    dirnames[:] = []  # a build tree, a venv, a tagged cache: made again
                    continue
                dirnames[:] = sorted(d for d in dirnames if d not in _CACHES)
                rel_dir = os.path.relpath(dirpath, self.project_root).replace(os.sep, "/")
                for name in sorted(filenames):
                    consider(f"{rel_dir}/{name}")
                for name in dirnames:
                    if os.path.islink(os.path.join(dirpath, name)):
                        consider(f"{rel_dir}/{name}")  # walk does not descend into it
        return chosen, skipped

    async def snapshots(self) -> list[Snapshot]:
        """Every snapshot, oldest first."""
        if not self._exists():
            return []
        exists = await run_git(self._location, "rev-parse", "--verify", "--quiet", _REF)
        if exists.returncode != 0:
            return []
        out = await self._git("log", "--reverse", "--format=%H%x00%B%x1e", _REF)
        found = []
        for record in out.decode("utf-8", "replace").split("\x1e"):
            if not record.strip():
                continue
            commit, _, body = record.strip().partition("\x00")
            fields = {}
            for line in body.splitlines():
                key, sep, value = line.partition(": ")
                if sep and key.startswith("Air-"):
                    fields[key[4:]] = value.strip()
            found.append(
                Snapshot(
                    commit=commit,
                    at=fields.get("Time", ""),
                    reason=fields.get("Reason", ""),
                    session_id=fields.get("Session"),
                    task_id=fields.get("Task"),
                    workspace_id=fields.get("Workspace"),
                )
            )
        return found

    async def _entries(self, commit: str) -> dict[str, tuple[str, str]]:
        """``path -> (mode, blob id)`` of a snapshot's files."""
        out = await self._git("ls-tree", "-r", "-z", "--full-tree", commit)
        entries = {}
        for item in out.split(b"\0"):
            if not item:
                continue
            meta, _, path = item.partition(b"\t")
            mode, _kind, blob = meta.decode().split()
            entries[os.fsdecode(path)] = (mode, blob)
        return entries

    async def _changes_of(self, rel: str) -> list[tuple[str, str | None, str | None]]:
        """``(commit, blob before, blob after)`` of each snapshot that changed ``rel``, newest
        first (None: the file was not there)."""
        out = await self._git(
            "log",
            "--root",
            "--raw",
            "--no-abbrev",
            "--no-renames",
            "--format=@%H",
            _REF,
            "--",
            ":(literal)" + rel,
        )
        changes: list[tuple[str, str | None, str | None]] = []
        commit = ""
        for line in out.decode("utf-8", "replace").splitlines():
            if line.startswith("@"):
                commit = line[1:]
            elif line.startswith(":") and commit:
                _old_mode, _new_mode, before, after = line[1:].split("\t", 1)[0].split()[:4]
                changes.append((commit, _blob_or_none(before), _blob_or_none(after)))
                commit = ""
        return changes

    # -- which snapshot ------------------------------------------------------------------

    async def pick_for_file(self, rel: str) -> Snapshot:
        """The newest snapshot whose version of ``rel`` differs from the file now.

        Read from the commits of the chain that changed ``rel`` (one ``git log``), each with
        its version before and after: a snapshot's version is that of the newest change at or
        before it. Not by listing every snapshot's tree, one git process each: 300 snapshots
        took 1.1 s, and a project's history only grows."""
        current = self._current_blob(rel)
        snaps = await self.snapshots()
        place = {snap.commit: index for index, snap in enumerate(snaps)}
        changes = await self._changes_of(rel) if snaps else []
        newest = changes[0][2] if changes else None
        if snaps and newest != current:
            return snaps[-1]
        for commit, before, _after in changes:
            index = place.get(commit, 0)
            if before != current and index > 0:
                return snaps[index - 1]  # the newest snapshot holding the version before it
        raise _fail(
            f"no backup of {rel} differs from the file as it is now",
            "See `air restore --list`; only files air merged into have backups.",
        )

    async def pick_for_time(self, when: str) -> Snapshot:
        """The tree as it was at ``when``: the first snapshot taken after it."""
        moment = _parse_time(when)
        for snap in await self.snapshots():
            if snap.at and _parse_time(snap.at) > moment:
                return snap
        raise _fail(
            f"air took no snapshot after {when}: air merged nothing since then",
            "See `air restore --list` for the snapshots and their times.",
        )

    async def pick_for_session(self, session_id: str) -> Snapshot:
        """The tree before the session's first merge."""
        for snap in await self.snapshots():
            if snap.session_id == session_id and snap.reason != "rescue before restore":
                return snap
        raise _fail(
            f"session {session_id} merged nothing into the project: no snapshot of it",
            "See `air restore --list` for the snapshots and their sessions.",
        )

    # -- restore -------------------------------------------------------------------------

    def _current_blob(self, rel: str) -> str | None:
        path = os.path.join(self.project_root, rel)
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return None
        if stat.S_ISLNK(info.st_mode):
            return blob_id(os.fsencode(os.readlink(path)))
        if not stat.S_ISREG(info.st_mode):
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as handle:  # in pieces: a file can be gigabytes
            digest = _blob_hash(info.st_size)
            while piece := handle.read(1 << 20):
                digest.update(piece)
            return digest.hexdigest()

    def relative(self, path: str) -> str:
        """``path`` (absolute, or relative to the current directory) inside the project.

        Raises:
            AirException: ``validation_error`` for a path outside the project or in ``.air``.
        """
        absolute = os.path.normpath(os.path.join(os.getcwd(), path))
        parent = os.path.realpath(os.path.dirname(absolute))
        rel = os.path.relpath(os.path.join(parent, os.path.basename(absolute)), self.project_root)
        if rel.startswith("..") or rel == "." or rel.split(os.sep)[0] in _NEVER:
            raise _fail(
                f"{path} is not a file of the project {self.project_root}",
                "Name a file inside the project (not under .air or .git).",
                ErrorKind.VALIDATION_ERROR,
            )
        return rel

    async def restore_file(self, rel: str, snap: Snapshot) -> Snapshot:
        """Bring ``rel`` back as it was in ``snap`` (removed if it did not exist then).

        Returns the rescue snapshot taken first."""
        async with self._writing():
            rescue = await self._snapshot("rescue before restore", None, None, False)
            entry = (await self._entries(snap.commit)).get(rel)
            await self._put(rel, entry)
            return rescue

    async def restore_tree(self, snap: Snapshot) -> tuple[Snapshot, list[str]]:
        """Make the work tree's snapshotted files those of ``snap``: files it has are written,
        files snapshotted now but absent from it are removed; ignored files are left alone.

        Returns the rescue snapshot taken first and the paths changed."""
        async with self._writing():
            rescue = await self._snapshot("rescue before restore", None, None, False)
            now = await self._entries(rescue.commit)
            then = await self._entries(snap.commit)
            changed = []
            for rel in sorted(set(now) - set(then), reverse=True):
                await self._put(rel, None)
                changed.append(rel)
            for rel, entry in sorted(then.items()):
                if now.get(rel) != entry:
                    await self._put(rel, entry)
                    changed.append(rel)
            return rescue, sorted(changed)

    async def _put(self, rel: str, entry: tuple[str, str] | None) -> None:
        parts = rel.split("/")
        if not parts or parts[0] in _NEVER or any(p in ("", ".", "..") for p in parts):
            raise _fail(
                f"the backup names an unsafe path {rel!r}",
                "Run `air doctor`; the backup repository was changed by something other than air.",
                ErrorKind.WORKSPACE_ERROR,
            )
        if entry is None:
            self._remove(parts)
            return
        mode, blob = entry
        if mode == "160000":  # a submodule commit: nothing to write
            return
        data = await self._git("cat-file", "blob", blob)
        self._write(rel, parts, mode, data)

    def _write(self, rel: str, parts: list[str], mode: str, data: bytes) -> None:
        """``data`` at ``parts`` by a rename in its directory, every parent a real directory
        of the project (a link or a file in the way is removed: the rescue snapshot holds it),
        reached a level at a time without following a link (``dir_beneath``): one put in the
        way while the restore runs is never written through."""
        name = parts[-1]
        here = dir_beneath(os.path.realpath(self.project_root), parts[:-1], make=True, clear=True)
        try:
            with contextlib.suppress(FileNotFoundError):
                if stat.S_ISDIR(os.lstat(name, dir_fd=here).st_mode):
                    raise _fail(
                        f"{rel} is a directory now; air does not replace a directory with a file",
                        f"Move {rel} away, then run the restore again.",
                        ErrorKind.VALIDATION_ERROR,
                    )
            tmp = f".{name}.air-restore.tmp"
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=here)
            if mode == "120000":
                os.symlink(os.fsdecode(data), tmp, dir_fd=here)
            else:
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
                with os.fdopen(os.open(tmp, flags, 0o600, dir_fd=here), "wb") as handle:
                    handle.write(data)
                    os.fchmod(handle.fileno(), 0o755 if mode == "100755" else 0o644)
            # replaces a symlink itself, never its target
            os.replace(tmp, name, src_dir_fd=here, dst_dir_fd=here)
        finally:
            os.close(here)

    def _remove(self, parts: list[str]) -> None:
        """The file or link at ``parts`` removed (a directory is left), none below a link."""
        try:
            here = dir_beneath(os.path.realpath(self.project_root), parts[:-1])
        except (FileNotFoundError, NotADirectoryError):
            return  # gone already, or below a link: not the project's
        try:
            with contextlib.suppress(FileNotFoundError):
                if not stat.S_ISDIR(os.lstat(parts[-1], dir_fd=here).st_mode):
                    os.unlink(parts[-1], dir_fd=here)
        finally:
            os.close(here)
