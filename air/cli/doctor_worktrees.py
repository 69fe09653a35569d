"""The doctor's word on the workspaces under ``.air/local/workspaces``.

Owns ``WorktreeCheck`` (``worktrees``): directories no workspace record owns, records whose
workspace moved, air's git worktrees whose directory is gone; ``--fix`` quarantines the first
and forgets git's record of the last (only those: never ``git worktree prune``, which also
forgets the user's own worktrees whose directories are away for now, with their staged work;
``air.workspace.worktree_records``). Built here because ``air.doctor`` may not import the
workspace manager's records or its git runner.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from air.doctor.service import Problem

__all__ = ["WorktreeCheck"]


class WorktreeCheck:
    """Directories under ``.air/local/workspaces`` no record owns; git worktrees gone."""

    name = "worktrees"
    reads_state = True

    def __init__(self, project_root: str) -> None:
        self.project_root = os.path.realpath(project_root)
        self.root = os.path.join(self.project_root, ".air", "local", "workspaces")
        self.has_git_dir = os.path.lexists(os.path.join(self.project_root, ".git"))
        self.facts: dict[str, Any] = {}

    def _owned(self) -> tuple[set[str], dict[str, tuple[str, str]]]:
        """The directories live workspace records own; and of those, the ones made before the
        project was moved (recorded elsewhere, found here by their id): here -> (recorded,
        branch)."""
        owned: set[str] = set()
        moved: dict[str, tuple[str, str]] = {}
        try:
            names = os.listdir(self.root)
        except OSError:
            return owned, moved
        for name in names:
            if not name.endswith(".json"):
                continue
            try:
                with open(os.path.join(self.root, name), encoding="utf-8") as fh:
                    rec = json.load(fh)
            except (OSError, ValueError):
                continue
            if isinstance(rec, dict) and rec.get("status") != "cleaned" and rec.get("path"):
                recorded = os.path.realpath(str(rec["path"]))
                here = os.path.realpath(os.path.join(self.root, str(rec.get("workspace_id"))))
                if recorded != here and not os.path.exists(recorded) and os.path.isdir(here):
                    moved[here] = (recorded, str(rec.get("branch") or "its branch"))
                    recorded = here
                owned.add(recorded)
        return owned, moved

    async def _git_worktrees(self) -> list[dict[str, str]] | None:
        import shutil

        from air.contracts.error import AirException
        from air.workspace.gitsafe import locate_git, run_git

        if shutil.which("git") is None or not self.has_git_dir:
            return None
        try:
            location = locate_git(self.project_root, project_root=self.project_root)
            done = await run_git(location, "worktree", "list", "--porcelain")
        except (AirException, OSError):
            return None
        entries: list[dict[str, str]] = []
        for block in done.stdout.decode("utf-8", "replace").split("\n\n"):
            entry: dict[str, str] = {}
            for line in block.splitlines():
                key, _, value = line.partition(" ")
                entry[key] = value
            if entry.get("worktree"):
                entries.append(entry)
        return entries

    async def run(self) -> list[Problem]:
        import trio

        worktrees = await self._git_worktrees()
        return await trio.to_thread.run_sync(self._scan, worktrees)

    def _scan(self, worktrees: list[dict[str, str]] | None) -> list[Problem]:
        from air.doctor.quarantine import quarantine_root
        from air.doctor.service import Fix, Problem, issue
        from air.workspace.records import CLEANED_DIR

        owned, moved = self._owned()
        problems: list[Problem] = [self._moved(here, *moved[here]) for here in sorted(moved)]
        project, qroot = self.project_root, quarantine_root(self.project_root)
        seen: set[str] = set()
        was_at = {was for was, _branch in moved.values()}
        if worktrees is not None:
            for entry in worktrees[1:]:  # the first is the project's own work tree
                path = os.path.realpath(entry["worktree"])
                seen.add(path)
                if path in was_at:
                    continue  # git's entry of a moved worktree: said with it, never pruned
                ours = os.path.dirname(path) == os.path.realpath(self.root)
                if "prunable" in entry and ours:
                    problems.append(
                        Problem(
                            issue(
                                self.name,
                                "warning",
                                f"git still lists the worktree {path}, whose directory is gone",
                                "Run `air doctor --fix` (forgets git's record of it); its "
                                "branch stays.",
                                fix="forget git's record of the worktree",
                            ),
                            Fix("forget a gone worktree", (qroot,), self._forget_fix(path)),
                        )
                    )
                elif ours and "prunable" not in entry and path not in owned:
                    problems.append(self._orphan(path, entry.get("branch"), project, qroot))
        try:
            names = sorted(os.listdir(self.root))
        except OSError:
            names = []
        for name in names:
            path = os.path.realpath(os.path.join(self.root, name))
            if name.endswith((".json", ".tmp")) or name == CLEANED_DIR:
                continue  # the records, and the records of cleaned workspaces
            if path in owned or path in seen:
                continue
            if os.path.isdir(path):
                problems.append(self._orphan(path, None, project, qroot))
        self.facts = {"owned": len(owned), "git_worktrees": len(worktrees or []) - 1}
        if worktrees is None:
            self.facts["git"] = "not checked (no git, or not a git repository)"
        return problems

    def found(self) -> str:
        git = self.facts.get("git") or f"{self.facts.get('git_worktrees', 0)} git worktree(s)"
        return f"{self.facts.get('owned', 0)} workspace(s) with a record; {git}"

    def _forget_fix(self, path: str) -> Any:
        async def forget() -> str:
            await self._forget(path)
            return f"forgot git's record of {path}"

        return forget

    async def _forget(self, path: str) -> None:
        """git's record of air's worktree ``path`` (gone), only that one."""
        import trio

        from air.workspace.gitsafe import locate_git
        from air.workspace.worktree_records import forget_worktree

        location = locate_git(self.project_root, project_root=self.project_root)
        await trio.to_thread.run_sync(forget_worktree, location.common_dir, path)

    def _moved(self, here: str, was: str, branch: str) -> Problem:
        """A kept worktree made before the project was moved: git's metadata and air's record
        name the old place. Nothing to repair for air: it will not merge a worktree whose git
        directory changed (IMPL-GIT-2); the branch keeps its commits, the files stay."""
        from air.doctor.service import Problem, issue

        return Problem(
            issue(
                self.name,
                "warning",
                f"worktree {here} was made before the project moved (it was {was}); air will "
                "not merge it: its git directory changed",
                f"Its branch {branch} keeps its commits and the files stay. To look at it or "
                f"merge it yourself: `git worktree repair {here}`. "
                "`air doctor --fix` leaves it alone.",
            ),
            None,
        )

    def _orphan(self, path: str, branch: str | None, project: str, qroot: str) -> Problem:
        from air.contracts.error import AirException
        from air.doctor.quarantine import quarantine
        from air.doctor.service import Fix, Problem, issue

        async def move() -> str:
            import trio

            kept = await trio.to_thread.run_sync(quarantine, project, path)
            if self.has_git_dir:
                try:
                    await self._forget(path)
                except (AirException, OSError):
                    pass  # no git now: its record is forgotten by the next `air doctor --fix`
            return f"moved {path} to {kept}"

        what = f"worktree on {branch.removeprefix('refs/heads/')}" if branch else "directory"
        return Problem(
            issue(
                self.name,
                "warning",
                f"orphan {what} {path}: no workspace record owns it",
                "Run `air doctor --fix`: it is moved to .air/local/quarantine (nothing is "
                "deleted; its branch stays) — or look at it and delete it yourself.",
                fix="quarantine it and prune git's worktree metadata",
            ),
            Fix(f"quarantine {path}", (path, qroot), move),
        )
