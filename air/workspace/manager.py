"""WorkspaceManager: materialise, merge back and garbage-collect task workspaces (SDD §7.5).

Owns: ``WorkspaceManager``, the executor of the Scheduler's workspace decisions over three
strategies: ``main`` (the project root itself, nothing to merge), ``worktree`` (a git worktree
on branch ``air/ws/<id>``, merged back by commit → ``git merge``: ``air.workspace.worktrees``)
and ``isolated_copy`` (a plain copy with a hash manifest, copied back file by file; a file
changed on both sides is a conflict: ``air.workspace.copies``). It never plans and never
resolves a conflict — it reports ``workspace.merge.conflicted`` and keeps everything. A
workspace with changes is never deleted unless its commits are kept on a branch. Lifecycle
events are durable and recorded through the injected ``record`` callable; the mechanism's
record of each workspace is a sidecar (``air.workspace.records``). Retention (GC) is here.

With a ``BackupRepository`` the project's files are snapshotted before every merge into it
and before a task that writes in the project itself starts (``air restore``, IMPL-REL-4,
IMPL-MERGE-1). A merge (its snapshot included) and that snapshot hold the project's ``TREE``
lock (``air.workspace.tree_lock``): two air processes in one project merge one at a time.

Before a merge every path the workspace changed is listed from git (or the copy's manifest),
never from the worker's word, and checked (``air.workspace.merge_checks``): a symlink whose
target leaves the project is never merged, and the caller's ``MergeGuard`` (the task's write
area) judges every path. One
offending path and nothing is merged: the workspace is kept as it is (still ``active``, so GC
never takes it) and ``write_area_violation`` is raised (IMPL-MERGE-1). A worktree merges the
exact commit that was checked. A tampered worktree raises ``workspace_error`` and is left
exactly as it is (never merged, committed or cleaned: IMPL-GIT-2). Nothing is merged into a
merge, rebase or cherry-pick of the user's under way, nor onto a detached HEAD (IMPL-GIT-4).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Awaitable, Callable, Container, Mapping, Sequence
from datetime import timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

import trio

from air.contracts.error import AirException, ErrorKind
from air.contracts.ids import new_id, utc_now_iso
from air.contracts.task import WorkspacePlan, WorkspaceRef, WorkspaceStatus, WorkspaceStrategy
from air.tree_walk import remove_tree
from air.workspace import merge_checks
from air.workspace.backups import BackupRepository
from air.workspace.changes import (
    MergeGuard,
)
from air.workspace.left_out import LEFT_OUT, kept_out, prune
from air.workspace.merge_checks import check_changes, check_merge_target
from air.workspace.records import RecordStore, WorkspaceRecord, parse_iso, workspace_error
from air.workspace.tree_lock import TREE, hold
from air.workspace.worktrees import ProjectGit

if TYPE_CHECKING:  # built when a workspace is merged (IMPL-BOOT-12)
    from air.contracts.task_results import MergeResult

__all__ = [
    "ABANDONED_RETENTION",
    "MERGED_RETENTION",
    "Recorder",
    "WorkspaceManager",
]

MERGED_RETENTION = timedelta(days=7)
ABANDONED_RETENTION = timedelta(days=3)
GC_PER_START = 8
"""Workspaces a start's recovery cleans at most (``gc(limit=...)``): after days away, the
attempts that failed meanwhile fall due at once, and each costs a commit and a removal."""

Recorder = Callable[[str, dict[str, Any]], Awaitable[object]]
"""``await record(event_type, payload)``: ingest one durable event."""


def _lexists(path: str) -> bool:
    return os.path.lexists(path)


def _is_dir(path: str) -> bool:
    return os.path.isdir(path)


TREE_PATIENCE_S = 60.0
"""How long a merge (or the snapshot before a task) waits for another air process that holds
the project's files: within the merge's own grace (``MERGE_GRACE``, 120 s), so a stopped or
hung holder fails the task with what to do, not a run that ends blocked without a word."""


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
        self.records = RecordStore(self.root)
        self.git = ProjectGit(self.project_root)
        self.branch: str | None = None
        """The branch ``--branch`` named (``use_branch``): a merge lands there or nowhere."""

    def get(self, workspace_id: str) -> WorkspaceRecord:
        return self.records.get(workspace_id)

    def list_records(self) -> list[WorkspaceRecord]:
        return self.records.list()

    async def use_branch(self, name: str) -> None:
        """Check out branch ``name`` of the project (made from HEAD when new) so that the
        merges that follow land on it (``--branch``).

        Raises:
            AirException: ``workspace_error`` when git refuses (e.g. local changes in the way).
        """
        # a checkout changes the project's files
        async with hold(self.project_root, TREE, patience=TREE_PATIENCE_S):
            await self.git.use_branch(name)
        self.branch = name

    async def is_git_repo(self) -> bool:
        """True when the project root holds its own repository with at least one commit."""
        return await self.git.is_repo()

    # -- API ----------------------------------------------------------------------------------
    async def create_workspace(
        self,
        plan: WorkspacePlan,
        *,
        agent_id: str | None = None,
        workspace_id: str | None = None,
        shared: bool = False,
        leave_out: Callable[[str], bool] | None = None,
    ) -> WorkspaceRef:
        """Materialise the workspace the Scheduler planned and record ``workspace.created``.

        Args:
            plan: the Scheduler's decision for one task.
            agent_id: the agent that will work there.
            workspace_id: a fixed id (default: a new ``ws_`` id).
            shared: a ``main`` workspace shared by many tasks (recorded without a task id).
            leave_out: what an isolated copy does not copy (a project-relative path: the task's
                denied paths, ``copy_project``).

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
        if strategy != WorkspaceStrategy.MAIN:
            rec.path = os.path.join(self.root, wid)
            os.makedirs(self.root, exist_ok=True)
            if _lexists(rec.path):
                raise workspace_error(f"workspace {wid} exists already", detail=rec.path)
        try:
            if strategy == WorkspaceStrategy.WORKTREE:
                rec.branch = f"air/ws/{wid}"
                await self.git.add(rec, plan.base_ref or "HEAD")
            elif strategy == WorkspaceStrategy.ISOLATED_COPY:
                from air.workspace.copies import copy_project  # IMPL-BOOT-16

                rec.manifest = await trio.to_thread.run_sync(
                    partial(copy_project, self.project_root, rec.path, leave_out=leave_out)
                )
            self.records.save(rec)
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
        except Exception:
            await self._unmake(rec)
            raise
        return rec.ref()

    async def _unmake(self, rec: WorkspaceRecord) -> None:
        """Take back a workspace whose making or recording failed (a full disk, git refusing):
        it is new (its path did not exist), holds no work yet and nothing durable names it, so
        nothing is left that ``air doctor`` would find unowned: its files, its git worktree, its
        branch (only while it is still at the base commit: no work is ever deleted), its
        sidecar. Best effort: the error to report is the one that got here."""
        with contextlib.suppress(Exception):
            if rec.strategy == WorkspaceStrategy.WORKTREE.value:
                await self.git.run(None, "worktree", "remove", "--force", rec.path, check=False)
            if rec.strategy != WorkspaceStrategy.MAIN.value:
                await trio.to_thread.run_sync(partial(remove_tree, rec.path, ignore_errors=True))
            if rec.strategy == WorkspaceStrategy.WORKTREE.value:
                await self.git.forget(rec)
                ref = f"refs/heads/{rec.branch}"
                at = await self.git.run(None, "rev-parse", "--verify", "-q", ref, check=False)
                if rec.base_commit and at.stdout.decode().strip() == rec.base_commit:
                    await self.git.run(None, "branch", "-D", "-q", str(rec.branch), check=False)
            self.records.forget(rec.workspace_id)

    async def changed_files(self, workspace_id: str) -> list[str]:
        """Files the workspace changed relative to its base (uncommitted and committed)."""
        rec = self.get(workspace_id)
        if rec.strategy == WorkspaceStrategy.WORKTREE.value:
            return await self.git.changed_files(rec)
        if rec.strategy == WorkspaceStrategy.ISOLATED_COPY.value:
            from air.workspace.copies import manifest_changes  # IMPL-BOOT-16

            changes = await trio.to_thread.run_sync(manifest_changes, rec.manifest, rec.path)
            return [change.path for change in changes]
        return []

    async def snapshot_before_task(self, task_id: str, workspace_id: str) -> None:
        """Snapshot the project (git-ignored files included, bounded) before a task that
        writes in the project itself starts, so ``air restore`` can undo it (IMPL-MERGE-1).
        Nothing without a ``BackupRepository``."""
        if self.backups is not None:
            # never a tree another air merges into
            async with hold(self.project_root, TREE, patience=TREE_PATIENCE_S):
                await self.backups.snapshot(
                    "before task", task_id=task_id, workspace_id=workspace_id, include_ignored=True
                )

    async def merge_workspace(
        self,
        workspace_id: str,
        *,
        guard: MergeGuard | None = None,
        title: str | None = None,
        summary: str | None = None,
        wrote: Sequence[str] = (),
    ) -> MergeResult:
        """Merge the workspace back into the project root.

        Every changed path is checked first (symlinks out of the project, then ``guard``);
        then records ``workspace.merge.started`` and ``workspace.merge.completed`` (naming
        the files of ``wrote`` git ignores, never merged: ``left_out``) or
        ``workspace.merge.conflicted``. On a conflict the project root is left as it was and
        the workspace (with its branch) is kept for the Scheduler to decide.

        Args:
            workspace_id: the workspace to merge.
            guard: the caller's judgement of every changed path (the task's write area).
            title: the task's title: the subject of its commit and of the merge.
            summary: the worker's summary: the body of the task's commit.
            wrote: the files the task's file tools wrote (its result's ``changed_files``):
                those git ignores are named in ``left_out``.

        Raises:
            AirException: ``write_area_violation`` (nothing merged, nothing recorded, the
                workspace kept as it is); ``workspace_error`` when git fails or the worktree
                was tampered with.
        """
        from air.contracts.task_results import MergeResult

        rec = self.get(workspace_id)
        if rec.status != WorkspaceStatus.ACTIVE.value:
            raise workspace_error(f"workspace {workspace_id} is {rec.status}, not active")
        head: str | None = None
        left_out: list[str] = []
        if rec.strategy == WorkspaceStrategy.WORKTREE.value:
            self.git.verify(rec)  # a tampered workspace is refused before anything is recorded
            subject = title or f"task {rec.task_id}"
            message = await self.git.message(rec, subject, summary)
            head = await self.git.commit(rec, message)
            inside = await self.git.unmergeable(rec, head)
            check_changes(rec, await self.git.changes(rec, head), guard, inside)
            left_out = await self.git.ignored(rec, wrote)
        elif rec.strategy == WorkspaceStrategy.ISOLATED_COPY.value:
            from air.workspace.copies import manifest_changes  # IMPL-BOOT-16

            changes = await trio.to_thread.run_sync(manifest_changes, rec.manifest, rec.path)
            check_changes(rec, changes, guard)
        started = {"workspace_id": workspace_id, "target_ref": None}
        result: MergeResult
        if rec.strategy == WorkspaceStrategy.MAIN.value:
            await self.record("workspace.merge.started", started)
            result = MergeResult(workspace_id=workspace_id, status="nothing_to_merge")
        else:
            # one air process at a time changes the project's files (IMPL-REL-4)
            async with hold(self.project_root, TREE, patience=TREE_PATIENCE_S):
                if rec.strategy == WorkspaceStrategy.WORKTREE.value:
                    await check_merge_target(self.git, rec, self.branch)
                await self.record("workspace.merge.started", started)
                if self.backups is not None:
                    # the project as it is before this merge, for `air restore`
                    await self.backups.snapshot(
                        "before merge", task_id=rec.task_id, workspace_id=workspace_id
                    )
                if rec.strategy == WorkspaceStrategy.WORKTREE.value:
                    assert head is not None
                    subject_line = f"Merge task {rec.task_id}: {subject}"
                    merge_message = await self.git.message(rec, subject_line)
                    result = await self.git.merge(rec, head, merge_message)
                else:
                    result = await self._merge_copy(rec)
        if result.status == "conflicted":
            rec.status = WorkspaceStatus.CONFLICTED.value
            self.records.save(rec)
            await self.record(
                "workspace.merge.conflicted",
                {
                    "workspace_id": workspace_id,
                    "conflicted_paths": result.conflicted_paths,
                    "kept_branch": result.kept_branch,
                },
            )
        else:
            result = await self._merged(rec, result, left_out)
        return result

    async def _merged(
        self, rec: WorkspaceRecord, result: MergeResult, left_out: Sequence[str]
    ) -> MergeResult:
        """The sidecar says merged, what git ignores of ``left_out`` is kept aside, then
        ``workspace.merge.completed``; ``result`` with what was left out."""
        rec.status = WorkspaceStatus.MERGED.value
        rec.merged_at = rec.merged_at or self.now()
        self.records.save(rec)
        completed = {"workspace_id": rec.workspace_id, "merge_commit": result.merge_commit}
        if left_out:  # never merged, said, and a copy kept (air.workspace.left_out)
            into = os.path.join(os.path.dirname(self.root), LEFT_OUT, rec.workspace_id)
            named = await trio.to_thread.run_sync(
                kept_out, rec.path, left_out, into, merge_checks.MERGE_FILE_MAX_MB << 20
            )
            result = result.model_copy(update=named)
            completed.update(named)
        await self.record("workspace.merge.completed", completed)
        return result

    async def settle_merge(self, workspace_id: str, *, wrote: Sequence[str] = ()) -> bool | None:
        """After a crash in the middle of the merge of ``workspace_id`` (its last event
        ``workspace.merge.started``): whether its change is in the project.

        True: the sidecar says merged, or (a worktree) git finished the merge: the project's
        HEAD holds the worktree's commit; ``workspace.merge.completed`` is recorded now as the
        merge would have (``wrote``: as for ``merge_workspace``). False: it can be merged
        again: git did not finish it and air's own stopped merge of that commit is ended
        (``git merge --abort``, never one of the user's; with backups, the project is
        snapshotted first: what a person resolved meanwhile is kept); an isolated copy's copy
        back, which goes on where it stopped, has its temporary files dropped. None: not known
        (a tampered worktree: IMPL-GIT-2).

        Raises:
            AirException: ``workspace_error`` when another air process holds the project's
                files past ``TREE_PATIENCE_S`` or git cannot tell (never taken for "not landed":
                the task would run again on a change that may have landed).
        """
        from air.contracts.task_results import MergeResult

        rec = self.get(workspace_id)
        worktree = rec.strategy == WorkspaceStrategy.WORKTREE.value
        if rec.status == WorkspaceStatus.ACTIVE.value and not worktree:
            if rec.strategy != WorkspaceStrategy.ISOLATED_COPY.value:
                return None
            from air.workspace.copies import drop_copy_back_temps  # IMPL-BOOT-16

            changed = await self.changed_files(workspace_id)
            async with hold(self.project_root, TREE, patience=TREE_PATIENCE_S):
                await trio.to_thread.run_sync(drop_copy_back_temps, self.project_root, changed)
            return False
        if rec.status == WorkspaceStatus.ACTIVE.value:
            try:
                self.git.verify(rec)
            except AirException as exc:
                if exc.kind != ErrorKind.WORKSPACE_ERROR:
                    raise
                return None
            head = await self.git.out(rec, "rev-parse", "--verify", "HEAD^{commit}")
            async with hold(self.project_root, TREE, patience=TREE_PATIENCE_S):
                if not await self.git.landed(head, rec.base_commit or ""):
                    if self.backups is not None and self.git.merging(head):
                        # the person may have begun resolving it by hand since: kept first
                        await self.backups.snapshot(
                            "before ending a stopped merge",
                            task_id=rec.task_id,
                            workspace_id=workspace_id,
                        )
                    await self.git.end_own_merge(head)
                    return False
        elif rec.status != WorkspaceStatus.MERGED.value:
            return None  # the sidecar says merged once git merged: then only the event is missing
        left_out: list[str] = []
        if worktree:
            with contextlib.suppress(AirException):  # none when its files cannot be read
                left_out = await self.git.ignored(rec, wrote)
        await self._merged(rec, MergeResult(workspace_id=workspace_id, status="merged"), left_out)
        return True

    async def _merge_copy(self, rec: WorkspaceRecord) -> MergeResult:
        from air.contracts.task_results import MergeResult
        from air.workspace.copies import copy_back  # IMPL-BOOT-16

        changed = await self.changed_files(rec.workspace_id)
        if not changed:
            return MergeResult(workspace_id=rec.workspace_id, status="nothing_to_merge")
        conflicts = await trio.to_thread.run_sync(
            copy_back, self.project_root, rec.path, rec.manifest, changed
        )
        if conflicts:
            return MergeResult(
                workspace_id=rec.workspace_id, status="conflicted", conflicted_paths=conflicts
            )
        return MergeResult(workspace_id=rec.workspace_id, status="merged")

    async def abandon_workspace(
        self, workspace_id: str, reason: str, *, commit: bool = True
    ) -> None:
        """Mark the workspace abandoned (kept on disk until GC); records ``workspace.abandoned``.
        A worktree's work is committed to its branch now, or with ``commit=False`` when the
        retention takes its files (``cleanup_workspace``): no git work where time is short."""
        rec = self.get(workspace_id)
        if rec.status in (WorkspaceStatus.ABANDONED.value, WorkspaceStatus.CLEANED.value):
            return
        if commit and rec.strategy == WorkspaceStrategy.WORKTREE.value and _is_dir(rec.path):
            wip = f"WIP: task {rec.task_id}, abandoned ({reason})"
            await self.git.commit(rec, await self.git.message(rec, wip))
        rec.status = WorkspaceStatus.ABANDONED.value
        rec.abandoned_at = self.now()
        self.records.save(rec)
        await self.record(
            "workspace.abandoned",
            {"workspace_id": workspace_id, "reason": reason, "kept_branch": rec.branch},
        )

    async def set_aside(self, workspace_id: str, reason: str) -> None:
        """Abandon an attempt's workspace that will never be merged (a retry gets a new one),
        without git work now: the retention commits its work to its branch when it takes the
        files (SDD §20.5: active until merge or cancel). One git refuses to touch (tampered
        with, IMPL-GIT-2) or without its sidecar is left exactly as it is."""
        try:
            await self.abandon_workspace(workspace_id, reason, commit=False)
        except AirException as exc:
            if exc.kind not in (ErrorKind.WORKSPACE_ERROR, ErrorKind.NOT_FOUND):
                raise

    async def cleanup_workspace(self, workspace_id: str, *, record: bool = True) -> None:
        """Delete the workspace's files (never the DB row) and record ``workspace.cleaned``.

        A worktree's changes are committed to its branch first and the branch is kept, unless
        the workspace was merged and the project's HEAD holds all of it (``git branch -d``):
        then the branch goes too. An isolated copy holding unmerged changes is refused.
        ``record=False``: another session's workspace (its log is that session's): only the
        sidecar says cleaned, and that session records it when it is next opened
        (``record_cleaned_elsewhere``).

        Raises:
            AirException: ``workspace_error`` when deleting would lose changes.
        """
        rec = self.get(workspace_id)
        if rec.status == WorkspaceStatus.CLEANED.value:
            return
        if rec.strategy == WorkspaceStrategy.WORKTREE.value:
            await self.git.remove(rec)
            if rec.status == WorkspaceStatus.MERGED.value:
                await self.git.delete_merged_branch(rec)
        elif rec.strategy == WorkspaceStrategy.ISOLATED_COPY.value:
            if _is_dir(rec.path):
                if rec.status != WorkspaceStatus.MERGED.value and await self.changed_files(
                    workspace_id
                ):
                    raise workspace_error(
                        f"workspace {workspace_id} has unmerged changes and no branch to keep them",
                        detail=rec.path,
                    )
                await trio.to_thread.run_sync(remove_tree, rec.path)
        rec.status = WorkspaceStatus.CLEANED.value
        self.records.save(rec)
        if record:
            await self.record("workspace.cleaned", {"workspace_id": workspace_id})

    async def record_cleaned_elsewhere(self, statuses: Mapping[str, str]) -> list[str]:
        """Record ``workspace.cleaned`` for this session's workspaces (``statuses``: id ->
        status in this session's log) that another session's GC cleaned meanwhile.

        Returns:
            The ids recorded now.
        """
        recorded: list[str] = []
        for workspace_id, status in statuses.items():
            if status not in (WorkspaceStatus.MERGED.value, WorkspaceStatus.ABANDONED.value):
                continue
            try:
                rec = self.get(workspace_id)
            except AirException:
                continue  # no sidecar: nothing says it was cleaned
            if rec.status == WorkspaceStatus.CLEANED.value:
                await self.record("workspace.cleaned", {"workspace_id": workspace_id})
                recorded.append(workspace_id)
        return recorded

    async def gc(
        self,
        *,
        live_task_ids: Sequence[str] = (),
        own: Container[str] | None = None,
        limit: int | None = None,
    ) -> list[str]:
        """Apply retention: merged workspaces (and left-out copies) older than 7 days and
        abandoned ones older than 3 days are cleaned, the oldest first. Active workspaces and
        those of live tasks are never touched. ``own``: the ids this session's log knows
        (None: all); another session's workspace is cleaned without an event here
        (``cleanup_workspace(record=False)``). ``limit``: at most that many now (a start's
        share; the rest wait for later starts: each is a commit and a worktree removal, ~50 ms
        in a small project).

        Returns:
            The ids cleaned now.
        """
        left_out = os.path.join(os.path.dirname(self.root), LEFT_OUT)
        await trio.to_thread.run_sync(prune, left_out, MERGED_RETENTION.total_seconds())
        now = parse_iso(self.now())
        cleaned: list[str] = []
        for rec in self.list_records():
            if limit is not None and len(cleaned) >= limit:
                break
            if rec.task_id in live_task_ids or (
                rec.strategy == WorkspaceStrategy.MAIN.value
                and (rec.status == WorkspaceStatus.ACTIVE.value)
            ):
                continue
            due = False
            if rec.status == WorkspaceStatus.MERGED.value and rec.merged_at:
                due = now - parse_iso(rec.merged_at) >= MERGED_RETENTION
            elif rec.status == WorkspaceStatus.ABANDONED.value and rec.abandoned_at:
                due = now - parse_iso(rec.abandoned_at) >= ABANDONED_RETENTION
            if not due:
                continue
            mine = own is None or rec.workspace_id in own
            try:
                await self.cleanup_workspace(rec.workspace_id, record=mine)
            except AirException:
                continue  # kept: it holds changes that have no branch
            cleaned.append(rec.workspace_id)
        return cleaned
