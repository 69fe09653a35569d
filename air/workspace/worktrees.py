"""The ``worktree`` strategy's git: the project's repository and its task worktrees.

Owns: ``ProjectGit`` — every git command the workspace manager runs, each through
``air.workspace.gitsafe`` and, for a worktree, only after its git directory was verified to be
the one recorded at creation (IMPL-GIT-2); worktree commands one at a time; and the worktree
operations built on it: add a worktree on ``air/ws/<id>``, list its changed files, commit what
the task left (build caches excluded), name the files its tools wrote that git ignores
(never committed: its merge says so), find what it changed that air never merges (a
submodule's files, an LFS file stored whole), list that commit's changes as git's raw diff
(renames as deletion and addition, gitlinks, symlink targets), merge exactly that commit with
``--no-ff`` (a conflict is aborted and reported, never resolved) and remove the worktree.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from typing import TYPE_CHECKING

import trio

from air.contracts.error import AirException, ErrorKind
from air.tree_walk import remove_tree
from air.workspace.changes import (
    SYMLINK,
    PathChange,
    WriteAreaViolation,
    parse_raw_diff,
    porcelain_paths,
)
from air.workspace.gitsafe import GitLocation, locate_git, run_git, verify_location
from air.workspace.records import WorkspaceRecord, workspace_error
from air.workspace.regenerable import untracked_regenerable
from air.workspace.worktree_records import forget_worktree

if TYPE_CHECKING:  # built when a workspace is merged (IMPL-BOOT-12)
    from air.contracts.task_results import MergeResult
    from air.workspace.authorship import Authorship

__all__ = ["ProjectGit"]


def _is_dir(path: str) -> bool:
    return os.path.isdir(path)


def _sparse(git_dir: str) -> bool:
    """Whether the worktree of ``git_dir`` is a sparse checkout (the patterns ``git worktree
    add`` copied from the project's)."""
    return os.path.isfile(os.path.join(git_dir, "info", "sparse-checkout"))


_UNDER_WAY = (
    ("MERGE_HEAD", "a merge"),
    ("CHERRY_PICK_HEAD", "a cherry-pick"),
    ("REVERT_HEAD", "a revert"),
    ("rebase-merge", "a rebase"),
    ("rebase-apply", "a rebase or `git am`"),
    ("BISECT_LOG", "a bisect"),
)
"""What a git directory holds while the user's git is in the middle of something (git's own
state files), and what to call it."""
INDEX_LOCK_PATIENCE_S = 10.0
"""How long a merge waits for another git command's ``index.lock`` in the project (an editor's
``git status`` holds it for milliseconds at a time) before it gives up."""


def _has_dot_git(root: str) -> bool:
    """Whether ``root`` has a ``.git`` entry at all (one ``lstat``)."""
    return os.path.lexists(os.path.join(root, ".git"))


def _gist(said: str) -> str:
    """Git's refusal in one line: its first line and the paths it lists below it."""
    lines = said.splitlines()
    if not lines:
        return "it gave no reason"
    paths = [line.strip() for line in lines[1:] if line[:1] in ("\t", " ") and line.strip()]
    gist = lines[0].rstrip().rstrip(".")
    if paths:
        more = f" and {len(paths) - 5} more" if len(paths) > 5 else ""
        gist += " " + ", ".join(paths[:5]) + more
    return gist


def _not_merged(
    rec: WorkspaceRecord, why: str, make_way: str, detail: str | None = None
) -> AirException:
    """The ``workspace_error`` of a task not merged because of the project's git state."""
    return AirException.of(
        kind=ErrorKind.WORKSPACE_ERROR,
        message=(
            f"task {rec.task_id} was not merged into the project: {why}; its work is kept on "
            f"branch {rec.branch}"
        ),
        detail=detail,
        user_action=f"{make_way}, then merge it: git merge {rec.branch}",
    )


def _locked_out(rec: WorkspaceRecord) -> AirException:
    return _not_merged(
        rec,
        "another git command held the project's index (.git/index.lock) for "
        f"{INDEX_LOCK_PATIENCE_S:g} s",
        "When no git command runs in the project, remove .git/index.lock if it is still there",
    )


class ProjectGit:
    """Verified git for one project root (realpath) and the worktrees made from it."""

    def __init__(self, project_root: str) -> None:
        self.project_root = project_root
        self._authorship: Authorship | None = None
        self._worktree_lock = trio.Lock()
        """One ``git worktree`` command at a time: ``worktree add`` reads every worktree's
        metadata and fails on one another ``worktree add`` is still writing."""

    def _main_location(self) -> GitLocation:
        return locate_git(self.project_root, project_root=self.project_root)

    def verify(self, rec: WorkspaceRecord) -> GitLocation:
        """The worktree's git directory, verified against the record (IMPL-GIT-2)."""
        return verify_location(
            rec.path,
            project_root=self.project_root,
            git_dir=rec.git_dir,
            fingerprint=rec.git_fingerprint,
        )

    async def authorship(self) -> Authorship:
        """Who the project's commits name (the user's identity and signing), read once."""
        from air.workspace.authorship import read_authorship  # IMPL-BOOT-16: at a first commit

        if self._authorship is None:
            self._authorship = await read_authorship(self._main_location())
        return self._authorship

    async def message(self, rec: WorkspaceRecord, subject: str, body: str | None = None) -> str:
        """A commit message for ``rec``'s task: subject, body, ``Air-*`` trailers."""
        from air.workspace.authorship import commit_message

        trailers = {"Air-Task": str(rec.task_id), "Air-Workspace": rec.workspace_id}
        return commit_message(subject, body, trailers, await self.authorship())

    async def run(
        self,
        where: WorkspaceRecord | None,
        *args: str,
        check: bool = True,
        config: Sequence[str] = (),
        stdin: bytes = b"",
        ok: Sequence[int] = (0,),
    ) -> subprocess.CompletedProcess[bytes]:
        """Run one hardened git command in ``where`` (None: the project root), verifying its
        git directory right before (IMPL-GIT-2); ``config``: ``-c`` options before it,
        ``stdin`` its input, ``ok`` the exit statuses that are no failure."""
        location = self._main_location() if where is None else self.verify(where)
        if args[0] == "worktree":
            async with self._worktree_lock:
                result = await run_git(location, *config, *args, stdin=stdin)
        else:
            result = await run_git(location, *config, *args, stdin=stdin)
        if check and result.returncode not in ok:
            raise workspace_error(
                f"git {args[0]} failed in {location.work_tree}",
                detail=result.stderr.decode("utf-8", "replace").strip()[:2000],
            )
        return result

    async def out(self, where: WorkspaceRecord | None, *args: str) -> str:
        return (await self.run(where, *args)).stdout.decode().strip()

    async def is_repo(self) -> bool:
        """True when the project root holds its own repository (a ``.git`` directory, or the
        ``.git`` file of a linked worktree) with at least one commit (a project nested inside
        another repository is not: merges would land elsewhere)."""
        if not _has_dot_git(self.project_root):
            return False  # what locate_git would refuse, without building its AirException
        try:
            self._main_location()
        except AirException:
            return False
        head = await self.run(None, "rev-parse", "--verify", "HEAD", check=False)
        return head.returncode == 0

    async def use_branch(self, name: str) -> None:
        """Check out ``name`` in the project: nothing when it is checked out, ``git switch``
        when it exists, ``git switch -c`` from HEAD when it does not."""
        current = await self.run(None, "symbolic-ref", "--quiet", "--short", "HEAD", check=False)
        if current.stdout.decode().strip() == name:
            return
        known = await self.run(
            None, "rev-parse", "--verify", "--quiet", f"refs/heads/{name}", check=False
        )
        create = [] if known.returncode == 0 else ["-c"]
        await self.run(None, "switch", "--quiet", *create, name)

    async def holds(self, commit: str, head: str = "HEAD") -> bool:
        """Whether ``head`` (the project's HEAD) holds ``commit`` in its history."""
        done = await self.run(None, "merge-base", "--is-ancestor", commit, head, check=False)
        if done.returncode not in (0, 1):
            raise workspace_error(
                f"git merge-base failed in {self.project_root}",
                detail=done.stderr.decode("utf-8", "replace").strip()[:2000],
            )
        return done.returncode == 0

    async def landed(self, head: str, base: str) -> bool:
        """Whether ``head``, a worktree's commit on ``base``, is in the project: it is ``base``
        itself (nothing to merge), or it descends from ``base`` and the project's HEAD holds it
        (a merge of it finished)."""
        return head == base or (await self.holds(base, head) and await self.holds(head))

    async def head_branch(self) -> str | None:
        """The branch the project has checked out (``refs/heads/...``); None when its HEAD is
        detached."""
        head = await self.run(None, "symbolic-ref", "--quiet", "HEAD", check=False)
        return head.stdout.decode().strip() or None if head.returncode == 0 else None

    async def add(self, rec: WorkspaceRecord, base: str) -> None:
        """Make ``rec``'s worktree at ``rec.path`` on ``rec.branch`` from ``base``, and record
        its base commit and verified git directory."""
        assert rec.branch is not None
        rec.base_commit = await self.out(None, "rev-parse", "--verify", f"{base}^{{commit}}")
        await self.run(None, "worktree", "add", "-q", "-b", rec.branch, rec.path, rec.base_commit)
        created = locate_git(rec.path, project_root=self.project_root)
        rec.git_dir, rec.git_fingerprint = created.git_dir, created.fingerprint
        links = await self._checked_out_links(rec.base_commit)
        if links:
            from air.workspace import submodules

            await submodules.populate(self.project_root, rec, links, self._worktree_lock)

    async def changed_files(self, rec: WorkspaceRecord) -> list[str]:
        """Files the worktree changed relative to its base (uncommitted and committed)."""
        status = await self.run(
            rec, "status", "--porcelain", "-z", "--untracked-files=all", "--ignore-submodules=all"
        )
        committed = await self.run(
            rec,
            "diff",
            "--no-ext-diff",
            "--no-textconv",
            "--name-only",
            "-z",
            f"{rec.base_commit}..HEAD",
        )
        from air.workspace.copies import JUNK_DIRS  # IMPL-BOOT-16

        names = porcelain_paths(status.stdout)
        names.update(n for n in os.fsdecode(committed.stdout).split("\0") if n)
        return sorted(n for n in names if not JUNK_DIRS.intersection(n.split("/")))

    async def commit(self, rec: WorkspaceRecord, message: str) -> str:
        """Commit everything the task left in its worktree to its branch; returns that commit
        (what the merge check reads and what is merged, nothing later)."""
        from air.workspace.copies import JUNK_DIRS  # IMPL-BOOT-16

        # build/cache directories the task's commands left behind are never merged back: by
        # name, and a build tree, virtualenv or tagged cache it made where nothing ignores it
        junk = [f":(exclude,glob)**/{name}/**" for name in sorted(JUNK_DIRS)]
        untracked = await self.run(
            rec, "ls-files", "-z", "--others", "--directory", "--exclude-standard"
        )
        dirs = [os.fsdecode(e) for e in untracked.stdout.split(b"\0") if e]
        made = await trio.to_thread.run_sync(
            untracked_regenerable, rec.path, [d for d in dirs if d.endswith("/")]
        )
        junk += [f":(exclude,literal){rel}" for rel in made]
        # a sparse checkout's worktree has its patterns: what the task wrote outside them is
        # its work too (git add refuses it without --sparse, git before 2.34 has no --sparse)
        sparse = ("--sparse",) if _sparse(str(rec.git_dir)) else ()
        await self.run(rec, "add", "-A", *sparse, "--", ".", *junk)
        staged = await self.run(
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
            who = await self.authorship()
            await self.run(
                rec,
                "commit",
                "-q",
                "--no-verify",
                "--allow-empty",
                *who.commit_args(),
                "-m",
                message,
                config=who.config(),
            )
        return await self.out(rec, "rev-parse", "--verify", "HEAD^{commit}")

    async def ignored(self, rec: WorkspaceRecord, wrote: Sequence[str]) -> list[str]:
        """Which of ``wrote`` (the files the task's file tools wrote, as it named them) git
        ignores and its worktree still holds, so its commit did not take them (a ``.env``, a
        local settings file): relative, in ``wrote``'s order; never air's own ``.air/`` or a
        cache directory (``JUNK_DIRS``). What its commands left that git ignores (a build's
        output, a test's log, ``node_modules/``) is not named: made again, not the task's
        writing, and in nearly every worktree that ran a test."""
        from air.workspace.copies import JUNK_DIRS  # IMPL-BOOT-16

        def still_here() -> list[str]:
            names: list[str] = []
            for path in wrote:
                rel = os.path.relpath(path, rec.path) if os.path.isabs(path) else path
                parts = os.path.normpath(rel).split(os.sep)
                if parts[0] in ("..", ".", ".air", ".git") or JUNK_DIRS.intersection(parts):
                    continue
                rel = "/".join(parts)
                if rel not in names and os.path.lexists(os.path.join(rec.path, rel)):
                    names.append(rel)
            return names

        names = await trio.to_thread.run_sync(still_here)
        if not names:
            return []
        # a tracked file is never "ignored" here: its change is committed like any other
        paths = b"".join(os.fsencode(n) + b"\0" for n in names)
        # exit 1: none of them is ignored
        listed = await self.run(rec, "check-ignore", "-z", "--stdin", stdin=paths, ok=(0, 1))
        found = {os.fsdecode(e) for e in listed.stdout.split(b"\0") if e}
        return [n for n in names if n in found]

    async def unmergeable(self, rec: WorkspaceRecord, head: str) -> list[WriteAreaViolation]:
        """What ``head`` changed that air never merges, whatever the write area: a write inside
        a submodule (``air.workspace.submodules.writes`` over the ones its base records) and
        a file git LFS tracks stored whole (``air.workspace.lfs``)."""
        from air.workspace import lfs, submodules  # IMPL-BOOT-16: at a merge

        links = await submodules.gitlinks(self._main_location(), str(rec.base_commit))
        writes = await submodules.writes(self.project_root, rec, links) if links else []
        found = [
            WriteAreaViolation(path, f"inside submodule {link} (never merged by air)")
            for path, link in writes
        ]

        async def git(*args: str, stdin: bytes = b"") -> bytes:
            return (await self.run(rec, *args, stdin=stdin)).stdout

        base = str(rec.base_commit)
        listed = await git(
            "diff", "--name-only", "-z", "--no-renames", "--diff-filter=AMT", base, head
        )
        changed = [os.fsdecode(p) for p in listed.split(b"\0") if p]
        whole = (
            "tracked by git LFS, changed without git-lfs (air runs none): merged, its whole "
            "content would enter the history where every clone expects a pointer"
        )
        stored = await lfs.stored_whole(git, head, changed)
        return found + [WriteAreaViolation(path, whole) for path in stored]

    async def changes(self, rec: WorkspaceRecord, head: str) -> list[PathChange]:
        """Every path ``head`` changed relative to the base: added, deleted, modified, mode
        and type changes, a rename as its deletion and its addition, gitlinks included."""
        raw = await self.run(
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
                blob = await self.run(rec, "cat-file", "blob", f"{head}:{change.path}")
                change = change._replace(link_target=os.fsdecode(blob.stdout))
            changes.append(change)
        return changes

    def under_way(self) -> str | None:
        """What the user's git is in the middle of in the project (a merge, a rebase, ...:
        ``_UNDER_WAY``), None when nothing. A merge then would end theirs or mix with it."""
        git_dir = self._main_location().git_dir
        for name, what in _UNDER_WAY:
            if os.path.lexists(os.path.join(git_dir, name)):
                return what
        return None

    def merging(self, head: str) -> bool:
        """Whether the project's git is in the middle of merging ``head`` (air's own merge
        stopped), read from its ``MERGE_HEAD``."""
        try:
            with open(os.path.join(self._main_location().git_dir, "MERGE_HEAD"), "rb") as fh:
                return fh.read(200).split(b"\n", 1)[0].decode("ascii", "replace") == head
        except OSError:
            return False

    def _locked(self) -> bool:
        """Whether another git command holds the project's index (its ``index.lock``)."""
        return os.path.lexists(os.path.join(self._main_location().git_dir, "index.lock"))

    async def _wait_unlocked(self, deadline: float) -> bool:
        """Wait until no other git command holds the project's ``index.lock``; False when one
        still does at ``deadline``."""
        delay = 0.02
        while self._locked():
            if trio.current_time() + delay > deadline:
                return False
            await trio.sleep(delay)
            delay = min(delay * 2, 0.5)
        return True

    async def end_own_merge(self, head: str) -> None:
        """End air's merge of ``head`` that a crash stopped (never one of the user's)."""
        await self._end_own_merge(head, trio.current_time() + INDEX_LOCK_PATIENCE_S)

    async def _end_own_merge(self, head: str, deadline: float) -> None:
        """End air's stopped merge of ``head``: ``--abort`` (which puts back what it changed)
        once no other git command holds the index; ``--quit`` (which forgets the merge and
        changes nothing) when one held it throughout, so that the merge could write nothing."""
        while self.merging(head):
            if not await self._wait_unlocked(deadline):
                await self.run(None, "merge", "--quit", check=False)
                return
            await self.run(None, "merge", "--abort", check=False)
            if not self.merging(head):
                return
            if trio.current_time() >= deadline:
                await self.run(None, "merge", "--quit", check=False)
                return
            await trio.sleep(0.05)  # the lock was taken again before the abort took it

    async def merge(self, rec: WorkspaceRecord, head: str, message: str) -> MergeResult:
        """Merge exactly ``head`` (the commit that was checked) into the project with
        ``--no-ff`` and ``message``; a conflict is aborted and reported with its paths. A
        merged task branch is deleted (its commits are in the project's history now).

        Only air's own merge of ``head`` is ever aborted (never one of the user's). While
        another git command holds the project's ``index.lock`` (an editor's ``git status``)
        the merge waits, and tries again, for up to ``INDEX_LOCK_PATIENCE_S``. When git will
        not merge for another reason (the user's uncommitted changes or unmerged files in the
        way) nothing in the project is changed and ``workspace_error`` quotes git; the task's
        work stays on its branch either way."""
        from air.contracts.task_results import MergeResult

        assert rec.branch is not None
        ahead = await self.out(rec, "rev-list", "--count", f"{rec.base_commit}..{head}")
        if ahead == "0":
            return MergeResult(
                workspace_id=rec.workspace_id, status="nothing_to_merge", kept_branch=rec.branch
            )
        who = await self.authorship()
        deadline = trio.current_time() + INDEX_LOCK_PATIENCE_S
        while True:
            if not await self._wait_unlocked(deadline):
                raise _locked_out(rec)
            merged = await self.run(
                None,
                "merge",
                "--no-ff",
                "--no-edit",
                "--no-stat",
                "--no-verify",
                *who.merge_args(),
                "-m",
                message,
                head,  # the commit that was checked, not whatever the branch holds by now
                check=False,
                config=who.config(),
            )
            if merged.returncode == 0:
                break
            locked = self._locked() or any(
                said in merged.stderr for said in (b"index.lock", b"Unable to write index")
            )
            began = self.merging(head)
            if began:
                unmerged = await self.out(
                    None, "diff", "--no-ext-diff", "--no-textconv", "--name-only", "--diff-filter=U"
                )
                await self._end_own_merge(head, deadline)
                paths = [p for p in unmerged.splitlines() if p]
                if paths:
                    return MergeResult(
                        workspace_id=rec.workspace_id,
                        status="conflicted",
                        kept_branch=rec.branch,
                        conflicted_paths=sorted(paths),
                    )
            if locked:
                if trio.current_time() < deadline:
                    continue
                raise _locked_out(rec)
            said = merged.stderr.decode("utf-8", "replace").strip()
            raise _not_merged(
                rec,
                f"git would not {'finish' if began else 'begin'} it: {_gist(said)}",
                "Make way for it where git says (commit or stash your changes, finish what git "
                "is doing)",
                detail=said[:2000],
            )
        return MergeResult(
            workspace_id=rec.workspace_id,
            status="merged",
            merge_commit=await self.out(None, "rev-parse", "HEAD"),
            kept_branch=rec.branch,
        )

    async def delete_merged_branch(self, rec: WorkspaceRecord) -> bool:
        """Delete the task branch when the project's HEAD contains it (``git branch -d``
        refuses anything else: unmerged work is never lost). True when it was deleted."""
        if rec.branch is None:
            return False
        done = await self.run(None, "branch", "-d", "-q", rec.branch, check=False)
        return done.returncode == 0

    async def remove(self, rec: WorkspaceRecord) -> None:
        """Commit what is left to the worktree's branch (kept) and what it changed in its
        submodules to theirs (``submodules.keep``), remove the worktree, prune (the
        submodules' worktree records too: only this worktree's, never by ``git worktree prune``)."""
        from air.workspace import submodules

        links = await self._checked_out_links(rec.base_commit)
        if _is_dir(rec.path):
            await self.commit(rec, await self.message(rec, f"WIP: work of task {rec.task_id}"))
            if links:
                who = await self.authorship()
                commit = [*who.config(), "commit", "-q", "--no-verify", *who.commit_args()]
                message = await self.message(rec, f"WIP: work of task {rec.task_id} in a submodule")
                await submodules.keep(self.project_root, rec, links, commit, message)
            removed = await self.run(None, "worktree", "remove", "--force", rec.path, check=False)
            if removed.returncode != 0:  # e.g. a tree deeper than PATH_MAX: committed above
                await trio.to_thread.run_sync(remove_tree, rec.path)
        await self.forget(rec)
        await submodules.prune(self.project_root, rec, links)

    async def forget(self, rec: WorkspaceRecord) -> None:
        """git's record of ``rec``'s worktree, gone with its directory; the user's worktrees'
        records are never touched (``air.workspace.worktree_records``)."""
        common = self._main_location().common_dir
        await trio.to_thread.run_sync(forget_worktree, common, rec.path, rec.git_dir)

    async def _checked_out_links(self, commit: str | None) -> list[tuple[str, str]]:
        """The submodules ``commit`` records that git checks out (listed in its
        ``.gitmodules``: the cheap sign, read first); none for no commit."""
        if commit is None:
            return []
        probe = await self.run(None, "cat-file", "-e", f"{commit}:.gitmodules", check=False)
        if probe.returncode != 0:
            return []
        from air.workspace import submodules

        return await submodules.gitlinks(self._main_location(), commit)
