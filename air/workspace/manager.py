"""WorkspaceManager: materialise, merge back and garbage-collect task workspaces (SDD §7.5).

Owns: ``WorkspaceManager`` and ``WorkspaceRecord``. Strategies: ``main`` (the project root
itself, nothing to merge), ``worktree`` (a git worktree on branch ``air/ws/<id>``, merged back
by commit → ``git merge``) and ``isolated_copy`` (a plain copy with a hash manifest, copied
back file by file; a file changed on both sides is a conflict). The manager is a pure
executor of Scheduler decisions: it never plans and never resolves a conflict — it reports
``workspace.merge.conflicted`` and keeps everything. A workspace with changes is never
deleted unless its commits are kept on a branch. Lifecycle events are durable and recorded
through the injected ``record`` callable; a JSON sidecar per workspace under the workspaces
root keeps what the mechanism needs across restarts.

With a ``BackupRepository`` the project's files are snapshotted before every merge into it
and before a task that writes in the project itself starts (``air restore``, IMPL-REL-4,
IMPL-MERGE-1).

Before a merge every path the workspace changed is listed from git (or the copy's manifest),
never from the worker's word, and checked: a symlink whose target leaves the project is never
merged, and the caller's ``MergeGuard`` (the task's write area) judges every path. One
offending path and nothing is merged: the workspace is kept as it is (still ``active``, so GC
never takes it) and ``write_area_violation`` is raised (IMPL-MERGE-1). A worktree merges the
exact commit that was checked.

Every git command goes through ``air.workspace.gitsafe`` and, for a worktree, only after its
git directory was verified to be the one recorded at creation (IMPL-GIT-2): a tampered
workspace raises ``workspace_error`` and is left exactly as it is (never merged, committed or
cleaned).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import trio

from air.contracts.error import AirException, ErrorKind
from air.contracts.ids import new_id, utc_now_iso
from air.contracts.task import WorkspacePlan, WorkspaceRef, WorkspaceStatus, WorkspaceStrategy
from air.workspace.backups import BackupRepository
from air.workspace.changes import (
    SYMLINK,
    MergeGuard,
    PathChange,
    WriteAreaViolation,
    link_escapes,
    parse_raw_diff,
    violation_error,
)
from air.workspace.gitsafe import GitLocation, locate_git, run_git, verify_location

if TYPE_CHECKING:  # built when a workspace is merged (IMPL-BOOT-12)
    from air.contracts.task_results import MergeResult

__all__ = [
    "ABANDONED_RETENTION",
    "MERGED_RETENTION",
    "Recorder",
    "WorkspaceManager",
    "WorkspaceRecord",
]

MERGED_RETENTION = timedelta(days=7)
ABANDONED_RETENTION = timedelta(days=3)
_COPY_IGNORE = (".git", ".air")
_JUNK_DIRS = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"})
"""Build/cache directories an isolated copy neither copies nor merges back."""
_GIT_ID = ["-c", "user.name=air", "-c", "user.email=air@localhost", "-c", "commit.gpgsign=false"]

Recorder = Callable[[str, dict[str, Any]], Awaitable[object]]
"""``await record(event_type, payload)``: ingest one durable event."""


@dataclass(eq=False)
class WorkspaceRecord:
    """The mechanism's view of one workspace (also written as ``<id>.json``)."""

    workspace_id: str
    strategy: str
    path: str
    status: str = WorkspaceStatus.ACTIVE.value
    task_id: str | None = None
    agent_id: str | None = None
    branch: str | None = None
    base_commit: str | None = None
    created_at: str = ""
    merged_at: str | None = None
    abandoned_at: str | None = None
    manifest: dict[str, str] = field(default_factory=dict)
    git_dir: str | None = None
    """A worktree's git directory (realpath) as created; every git command checks it."""
    git_fingerprint: str | None = None
    """``GitLocation.fingerprint`` at creation (None in records written before IMPL-GIT-2)."""

    def ref(self) -> WorkspaceRef:
        return WorkspaceRef(
            workspace_id=self.workspace_id,
            task_id=self.task_id,
            agent_id=self.agent_id,
            strategy=WorkspaceStrategy(self.strategy),
            path=self.path,
            branch=self.branch,
            base_commit=self.base_commit,
        )


def _fail(message: str, detail: str | None = None) -> AirException:
    return AirException.of(
        kind=ErrorKind.WORKSPACE_ERROR,
        message=message,
        detail=detail,
        user_action="Check the project's git state (git status, git worktree list) and retry.",
    )


def _hash_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 16), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _entry_hash(path: str) -> str | None:
    """A manifest entry: a regular file's sha256, ``link:<target>`` for a symlink (never
    followed), None for anything else or nothing."""
    if os.path.islink(path):
        return "link:" + os.readlink(path)
    return _hash_file(path) if os.path.isfile(path) else None


def _tree_manifest(root: str) -> dict[str, str]:
    manifest: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        if rel_dir == ".":
            dirnames[:] = [d for d in dirnames if d not in _COPY_IGNORE]
        dirnames[:] = [d for d in dirnames if d not in _JUNK_DIRS]
        for name in filenames:
            if name.endswith((".pyc", ".pyo")):
                continue
            digest = _entry_hash(os.path.join(dirpath, name))
            if digest is not None:
                manifest[os.path.normpath(os.path.join(rel_dir, name))] = digest
    return manifest


def _porcelain_paths(raw: bytes) -> set[str]:
    """Every path in ``git status --porcelain -z`` output (both sides of a rename)."""
    names: set[str] = set()
    entries = os.fsdecode(raw).split("\0")
    i = 0
    while i < len(entries):
        entry = entries[i]
        i += 1
        if len(entry) < 4:
            continue
        names.add(entry[3:])
        if "R" in entry[:2] or "C" in entry[:2]:
            if i < len(entries) and entries[i]:
                names.add(entries[i])
            i += 1
    return names


def _realpath(path: str) -> str:
    return os.path.realpath(path)


def _is_dir(path: str) -> bool:
    return os.path.isdir(path)


_ISO_UTC = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{1,6}Z")


def _parse_iso(text: str) -> datetime:
    """``utc_now_iso``'s shape only (``2025-01-31T12:00:00.123456Z``), like the
    ``strptime("%Y-%m-%dT%H:%M:%S.%fZ")`` it replaces, without importing ``_strptime``.

    Raises:
        ValueError: any other text.
    """
    if not _ISO_UTC.fullmatch(text):
        raise ValueError(f"time data {text!r} does not match format '%Y-%m-%dT%H:%M:%S.%fZ'")
    return datetime.fromisoformat(text[:-1]).replace(tzinfo=UTC)


class WorkspaceManager:
    """Creates, merges and cleans workspaces for one project.

    Args:
        project_root: the project's root directory (a git repository for ``worktree``).
        record: ``await record(type, payload)`` for the durable ``workspace.*`` events.
        root: where workspaces live (default ``<project>/.air/local/workspaces``).
        now: the wall clock as ISO text (injected so GC can be tested).
    """

    def __init__(
        self,
        project_root: str,
        record: Recorder,
        *,
        root: str | None = None,
        now: Callable[[], str] = utc_now_iso,
        backups: BackupRepository | None = None,
    ) -> None:
        self.project_root = os.path.realpath(project_root)
        self.backups = backups
        """Where the pre-merge snapshots go (IMPL-REL-4); None takes none."""
        self.record = record
        self.root = root or os.path.join(self.project_root, ".air", "local", "workspaces")
        self.now = now
        self._records: dict[str, WorkspaceRecord] = {}
        self._worktree_lock = trio.Lock()
        """One ``git worktree`` command at a time: ``worktree add`` reads every worktree's
        metadata and fails on one another ``worktree add`` is still writing."""

    # -- persistence of the mechanism record ----------------------------------------------
    def _sidecar(self, workspace_id: str) -> str:
        return os.path.join(self.root, f"{workspace_id}.json")

    def _save(self, rec: WorkspaceRecord) -> None:
        os.makedirs(self.root, exist_ok=True)
        tmp = self._sidecar(rec.workspace_id) + ".tmp"
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(asdict(rec), handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self._sidecar(rec.workspace_id))
        self._records[rec.workspace_id] = rec

    def get(self, workspace_id: str) -> WorkspaceRecord:
        rec = self._records.get(workspace_id)
        if rec is not None:
            return rec
        try:
            with open(self._sidecar(workspace_id), encoding="utf-8") as handle:
                rec = WorkspaceRecord(**json.load(handle))
        except FileNotFoundError as exc:
            raise AirException.of(
                kind=ErrorKind.NOT_FOUND,
                message=f"unknown workspace {workspace_id}",
                user_action="List workspaces with `air history`; the id may be another project's.",
            ) from exc
        self._records[workspace_id] = rec
        return rec

    def list_records(self) -> list[WorkspaceRecord]:
        if not os.path.isdir(self.root):
            return []
        out = []
        for name in sorted(os.listdir(self.root)):
            if name.endswith(".json"):
                out.append(self.get(name[: -len(".json")]))
        return out

    # -- git --------------------------------------------------------------------------------
    def _has_dot_git(self) -> bool:
        """Whether the project root has a ``.git`` entry at all (one ``lstat``)."""
        return os.path.lexists(os.path.join(self.project_root, ".git"))

    def _main_location(self) -> GitLocation:
        return locate_git(self.project_root, project_root=self.project_root)

    def _location(self, rec: WorkspaceRecord) -> GitLocation:
        """The worktree's git directory, verified against the record (IMPL-GIT-2)."""
        return verify_location(
            rec.path,
            project_root=self.project_root,
            git_dir=rec.git_dir,
            fingerprint=rec.git_fingerprint,
        )

    async def _git(
        self, where: WorkspaceRecord | None, *args: str, check: bool = True
    ) -> subprocess.CompletedProcess[bytes]:
        """Run one hardened git command in ``where`` (None: the project root), verifying its
        git directory right before (IMPL-GIT-2)."""
        location = self._main_location() if where is None else self._location(where)
        if args[0] == "worktree":
            async with self._worktree_lock:
                result = await run_git(location, *_GIT_ID, *args)
        else:
            result = await run_git(location, *_GIT_ID, *args)
        if check and result.returncode != 0:
            raise _fail(
                f"git {args[0]} failed in {location.work_tree}",
                detail=result.stderr.decode("utf-8", "replace").strip()[:2000],
            )
        return result

    async def _out(self, where: WorkspaceRecord | None, *args: str) -> str:
        return (await self._git(where, *args)).stdout.decode().strip()

    async def is_git_repo(self) -> bool:
        """True when the project root holds its own repository (a ``.git`` directory, or the
        ``.git`` file of a linked worktree) with at least one commit (a project nested inside
        another repository is not: merges would land elsewhere)."""
        if not self._has_dot_git():
            return False  # what locate_git would refuse, without building its AirException
        try:
            self._main_location()
        except AirException:
            return False
        head = await self._git(None, "rev-parse", "--verify", "HEAD", check=False)
        return head.returncode == 0

    # -- API ----------------------------------------------------------------------------------
    async def create_workspace(
        self,
        plan: WorkspacePlan,
        *,
        agent_id: str | None = None,
        workspace_id: str | None = None,
        shared: bool = False,
    ) -> WorkspaceRef:
        """Materialise the workspace the Scheduler planned and record ``workspace.created``.

        Args:
            plan: the Scheduler's decision for one task.
            agent_id: the agent that will work there.
            workspace_id: a fixed id (default: a new ``ws_`` id).
            shared: a ``main`` workspace shared by many tasks (recorded without a task id).

        Raises:
            AirException: ``workspace_error`` when git or the copy fails.
        """
        wid = workspace_id or new_id("ws")
        strategy = WorkspaceStrategy(plan.strategy)
        rec = WorkspaceRecord(
            workspace_id=wid,
            strategy=strategy.value,
            path=self.project_root,
            task_id=None if shared else plan.task_id,
            agent_id=agent_id,
            created_at=self.now(),
        )
        if strategy == WorkspaceStrategy.WORKTREE:
            base = plan.base_ref or "HEAD"
            rec.base_commit = await self._out(None, "rev-parse", "--verify", f"{base}^{{commit}}")
            rec.branch = f"air/ws/{wid}"
            rec.path = os.path.join(self.root, wid)
            os.makedirs(self.root, exist_ok=True)
            await self._git(
                None,
                "worktree",
                "add",
                "-q",
                "-b",
                rec.branch,
                rec.path,
                rec.base_commit,
            )
            created = locate_git(rec.path, project_root=self.project_root)
            rec.git_dir, rec.git_fingerprint = created.git_dir, created.fingerprint
        elif strategy == WorkspaceStrategy.ISOLATED_COPY:
            rec.path = os.path.join(self.root, wid)
            os.makedirs(self.root, exist_ok=True)
            await trio.to_thread.run_sync(
                lambda: shutil.copytree(
                    self.project_root,
                    rec.path,
                    symlinks=True,
                    ignore=lambda d, names: [
                        n
                        for n in names
                        if (d == self.project_root and n in _COPY_IGNORE) or n in _JUNK_DIRS
                    ],
                )
            )
            rec.manifest = await trio.to_thread.run_sync(_tree_manifest, rec.path)
        self._save(rec)
        await self.record(
            "workspace.created",
            {
                "workspace_id": wid,
                "task_id": rec.task_id,
                "agent_id": agent_id,
                "strategy": strategy.value,
                "path": rec.path,
                "branch": rec.branch,
                "base_commit": rec.base_commit,
            },
        )
        return rec.ref()

    async def changed_files(self, workspace_id: str) -> list[str]:
        """Files the workspace changed relative to its base (uncommitted and committed)."""
        rec = self.get(workspace_id)
        if rec.strategy == WorkspaceStrategy.WORKTREE.value:
            status = await self._git(
                rec,
                "status",
                "--porcelain",
                "-z",
                "--untracked-files=all",
                "--ignore-submodules=all",
            )
            committed = await self._git(
                rec,
                "diff",
                "--no-ext-diff",
                "--no-textconv",
                "--name-only",
                "-z",
                f"{rec.base_commit}..HEAD",
            )
            names = _porcelain_paths(status.stdout)
            names.update(n for n in os.fsdecode(committed.stdout).split("\0") if n)
            return sorted(n for n in names if not _JUNK_DIRS.intersection(n.split("/")))
        if rec.strategy == WorkspaceStrategy.ISOLATED_COPY.value:
            now = await trio.to_thread.run_sync(_tree_manifest, rec.path)
            keys = set(now) | set(rec.manifest)
            return sorted(k for k in keys if now.get(k) != rec.manifest.get(k))
        return []

    async def _commit_worktree(self, rec: WorkspaceRecord, message: str) -> str:
        """Commit everything the task left in its worktree to its branch; returns that commit
        (what the merge check reads and what is merged, nothing later)."""
        # build/cache directories the task's commands left behind are never merged back
        junk = [f":(exclude,glob)**/{name}/**" for name in sorted(_JUNK_DIRS)]
        await self._git(rec, "add", "-A", "--", ".", *junk)
        staged = await self._git(
            rec,
            "diff",
            "--no-ext-diff",
            "--cached",
            "--quiet",
            "--ignore-submodules=none",  # a nested repository is committed, then refused
            check=False,
        )
        if staged.returncode != 0:
            # --allow-empty: git's own "nothing to commit" check ignores gitlinks here
            await self._git(rec, "commit", "-q", "--no-verify", "--allow-empty", "-m", message)
        return await self._out(rec, "rev-parse", "--verify", "HEAD^{commit}")

    async def _worktree_changes(self, rec: WorkspaceRecord, head: str) -> list[PathChange]:
        """Every path ``head`` changed relative to the base: added, deleted, modified, mode
        and type changes, a rename as its deletion and its addition, gitlinks included."""
        raw = await self._git(
            rec,
            "diff",
            "--raw",
            "-z",
            "--no-renames",
            "--no-abbrev",
            "--no-ext-diff",
            "--no-textconv",
            "--ignore-submodules=none",
            str(rec.base_commit),
            head,
        )
        changes = []
        for change in parse_raw_diff(raw.stdout):
            if change.new_mode == SYMLINK:
                blob = await self._git(rec, "cat-file", "blob", f"{head}:{change.path}")
                change = change._replace(link_target=os.fsdecode(blob.stdout))
            changes.append(change)
        return changes

    async def _copy_changes(self, rec: WorkspaceRecord) -> list[PathChange]:
        """An isolated copy's changed paths (its manifest against now; a symlink in the copy
        is reported as one, with its target)."""

        def mode(digest: str | None) -> str:
            if digest is None:
                return "000000"
            return SYMLINK if digest.startswith("link:") else "100644"

        def scan() -> list[PathChange]:
            now = _tree_manifest(rec.path)
            changes = []
            for rel in sorted(set(now) | set(rec.manifest)):
                old, new = rec.manifest.get(rel), now.get(rel)
                if old == new:
                    continue
                status = "A" if old is None else "D" if new is None else "M"
                target = new[len("link:") :] if new and new.startswith("link:") else None
                changes.append(PathChange(rel, status, mode(old), mode(new), link_target=target))
            return changes

        return await trio.to_thread.run_sync(scan)

    def _check(
        self, rec: WorkspaceRecord, changes: list[PathChange], guard: MergeGuard | None
    ) -> None:
        """Raise ``write_area_violation`` when one changed path may not be merged."""
        found: dict[str, WriteAreaViolation] = {}
        for change in changes:
            if change.link_target is not None:
                why = link_escapes(change.path, change.link_target)
                if why is not None:
                    found[change.path] = WriteAreaViolation(change.path, why)
        for violation in guard(changes) if guard is not None else []:
            found.setdefault(violation.path, violation)
        if found:
            raise violation_error(
                [found[p] for p in sorted(found)],
                task_id=rec.task_id,
                workspace_path=rec.path,
                branch=rec.branch,
                base_commit=rec.base_commit,
            )

    async def snapshot_before_task(self, task_id: str, workspace_id: str) -> None:
        """Snapshot the project (git-ignored files included, bounded) before a task that
        writes in the project itself starts, so ``air restore`` can undo it (IMPL-MERGE-1).
        Nothing without a ``BackupRepository``."""
        if self.backups is not None:
            await self.backups.snapshot(
                "before task", task_id=task_id, workspace_id=workspace_id, include_ignored=True
            )

    async def merge_workspace(
        self, workspace_id: str, *, guard: MergeGuard | None = None
    ) -> MergeResult:
        """Merge the workspace back into the project root.

        Every changed path is checked first (symlinks out of the project, then ``guard``);
        then records ``workspace.merge.started`` and ``workspace.merge.completed`` or
        ``workspace.merge.conflicted``. On a conflict the project root is left as it was and
        the workspace (with its branch) is kept for the Scheduler to decide.

        Args:
            workspace_id: the workspace to merge.
            guard: the caller's judgement of every changed path (the task's write area).

        Raises:
            AirException: ``write_area_violation`` (nothing merged, nothing recorded, the
                workspace kept as it is); ``workspace_error`` when git fails or the worktree
                was tampered with.
        """
        from air.contracts.task_results import MergeResult

        rec = self.get(workspace_id)
        if rec.status != WorkspaceStatus.ACTIVE.value:
            raise _fail(f"workspace {workspace_id} is {rec.status}, not active")
        head: str | None = None
        if rec.strategy == WorkspaceStrategy.WORKTREE.value:
            self._location(rec)  # a tampered workspace is refused before anything is recorded
            head = await self._commit_worktree(rec, f"air: task {rec.task_id} ({rec.workspace_id})")
            self._check(rec, await self._worktree_changes(rec, head), guard)
        elif rec.strategy == WorkspaceStrategy.ISOLATED_COPY.value:
            self._check(rec, await self._copy_changes(rec), guard)
        await self.record(
            "workspace.merge.started",
            {"workspace_id": workspace_id, "target_ref": None},
        )
        if self.backups is not None and rec.strategy != WorkspaceStrategy.MAIN.value:
            # the project as it is before this merge, for `air restore` (IMPL-REL-4)
            await self.backups.snapshot(
                "before merge", task_id=rec.task_id, workspace_id=workspace_id
            )
        result: MergeResult
        if rec.strategy == WorkspaceStrategy.MAIN.value:
            result = MergeResult(workspace_id=workspace_id, status="nothing_to_merge")
        elif rec.strategy == WorkspaceStrategy.WORKTREE.value:
            assert head is not None
            result = await self._merge_worktree(rec, head)
        else:
            result = await self._merge_copy(rec)
        if result.status == "conflicted":
            rec.status = WorkspaceStatus.CONFLICTED.value
            self._save(rec)
            await self.record(
                "workspace.merge.conflicted",
                {
                    "workspace_id": workspace_id,
                    "conflicted_paths": result.conflicted_paths,
                    "kept_branch": result.kept_branch,
                },
            )
        else:
            rec.status = WorkspaceStatus.MERGED.value
            rec.merged_at = self.now()
            self._save(rec)
            await self.record(
                "workspace.merge.completed",
                {"workspace_id": workspace_id, "merge_commit": result.merge_commit},
            )
        return result

    async def _merge_worktree(self, rec: WorkspaceRecord, head: str) -> MergeResult:
        from air.contracts.task_results import MergeResult

        assert rec.branch is not None
        ahead = await self._out(rec, "rev-list", "--count", f"{rec.base_commit}..{head}")
        if ahead == "0":
            return MergeResult(
                workspace_id=rec.workspace_id, status="nothing_to_merge", kept_branch=rec.branch
            )
        merged = await self._git(
            None,
            "merge",
            "--no-ff",
            "--no-edit",
            "--no-stat",
            "--no-verify",
            "-m",
            f"air: merge task {rec.task_id}",
            head,  # the commit that was checked, not whatever the branch holds by now
            check=False,
        )
        if merged.returncode != 0:
            unmerged = await self._out(
                None, "diff", "--no-ext-diff", "--no-textconv", "--name-only", "--diff-filter=U"
            )
            paths = [p for p in unmerged.splitlines() if p]
            if not paths:
                paths = await self.changed_files(rec.workspace_id)
            await self._git(None, "merge", "--abort", check=False)
            return MergeResult(
                workspace_id=rec.workspace_id,
                status="conflicted",
                kept_branch=rec.branch,
                conflicted_paths=sorted(paths),
            )
        head = await self._out(None, "rev-parse", "HEAD")
        return MergeResult(
            workspace_id=rec.workspace_id,
            status="merged",
            merge_commit=head,
            kept_branch=rec.branch,
        )

    async def _merge_copy(self, rec: WorkspaceRecord) -> MergeResult:
        from air.contracts.task_results import MergeResult

        changed = await self.changed_files(rec.workspace_id)
        if not changed:
            return MergeResult(workspace_id=rec.workspace_id, status="nothing_to_merge")

        def plan_and_apply() -> list[str]:
            conflicts = []
            for rel in changed:
                target = os.path.join(self.project_root, rel)
                current = _entry_hash(target)
                base = rec.manifest.get(rel)
                mine = _entry_hash(os.path.join(rec.path, rel))
                if current != base and current != mine:
                    conflicts.append(rel)
            if conflicts:
                return conflicts
            for rel in changed:
                target = os.path.join(self.project_root, rel)
                source = os.path.join(rec.path, rel)
                if os.path.islink(source):  # checked: it stays inside the project
                    os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
                    tmp = target + ".air-merge.tmp"
                    os.symlink(os.readlink(source), tmp)
                    os.replace(tmp, target)
                elif os.path.isfile(source):
                    os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
                    tmp = target + ".air-merge.tmp"
                    shutil.copy2(source, tmp)
                    os.replace(tmp, target)
                elif os.path.lexists(target) and not os.path.isdir(target):
                    os.unlink(target)
            return []

        conflicts = await trio.to_thread.run_sync(plan_and_apply)
        if conflicts:
            return MergeResult(
                workspace_id=rec.workspace_id, status="conflicted", conflicted_paths=conflicts
            )
        return MergeResult(workspace_id=rec.workspace_id, status="merged")

    async def abandon_workspace(self, workspace_id: str, reason: str) -> None:
        """Mark the workspace abandoned (kept on disk until GC); records ``workspace.abandoned``."""
        rec = self.get(workspace_id)
        if rec.status in (WorkspaceStatus.ABANDONED.value, WorkspaceStatus.CLEANED.value):
            return
        if rec.strategy == WorkspaceStrategy.WORKTREE.value and _is_dir(rec.path):
            await self._commit_worktree(rec, f"air: abandoned task {rec.task_id} ({reason})")
        rec.status = WorkspaceStatus.ABANDONED.value
        rec.abandoned_at = self.now()
        self._save(rec)
        await self.record(
            "workspace.abandoned",
            {"workspace_id": workspace_id, "reason": reason, "kept_branch": rec.branch},
        )

    async def cleanup_workspace(self, workspace_id: str) -> None:
        """Delete the workspace's files (never the DB row) and record ``workspace.cleaned``.

        A worktree's changes are committed to its branch first and the branch is kept. An
        isolated copy holding unmerged changes is refused.

        Raises:
            AirException: ``workspace_error`` when deleting would lose changes.
        """
        rec = self.get(workspace_id)
        if rec.status == WorkspaceStatus.CLEANED.value:
            return
        if rec.strategy == WorkspaceStrategy.WORKTREE.value:
            if _is_dir(rec.path):
                await self._commit_worktree(rec, f"air: keep work of task {rec.task_id}")
                await self._git(None, "worktree", "remove", "--force", rec.path)
            await self._git(None, "worktree", "prune", check=False)
        elif rec.strategy == WorkspaceStrategy.ISOLATED_COPY.value:
            if _is_dir(rec.path):
                if rec.status != WorkspaceStatus.MERGED.value and await self.changed_files(
                    workspace_id
                ):
                    raise _fail(
                        f"workspace {workspace_id} has unmerged changes and no branch to keep them",
                        detail=rec.path,
                    )
                await trio.to_thread.run_sync(shutil.rmtree, rec.path)
        rec.status = WorkspaceStatus.CLEANED.value
        self._save(rec)
        await self.record(
            "workspace.cleaned",
            {"workspace_id": workspace_id},
        )

    async def gc(self, *, live_task_ids: Sequence[str] = ()) -> list[str]:
        """Apply retention: merged workspaces older than 7 days and abandoned ones older than
        3 days are cleaned. Active workspaces and those of live tasks are never touched.

        Returns:
            The ids cleaned now.
        """
        now = _parse_iso(self.now())
        cleaned: list[str] = []
        for rec in self.list_records():
            if rec.task_id in live_task_ids or (
                rec.strategy == WorkspaceStrategy.MAIN.value
                and (rec.status == WorkspaceStatus.ACTIVE.value)
            ):
                continue
            due = False
            if rec.status == WorkspaceStatus.MERGED.value and rec.merged_at:
                due = now - _parse_iso(rec.merged_at) >= MERGED_RETENTION
            elif rec.status == WorkspaceStatus.ABANDONED.value and rec.abandoned_at:
                due = now - _parse_iso(rec.abandoned_at) >= ABANDONED_RETENTION
            if not due:
                continue
            try:
                await self.cleanup_workspace(rec.workspace_id)
            except AirException:
                continue  # kept: it holds changes that have no branch
            cleaned.append(rec.workspace_id)
        return cleaned
