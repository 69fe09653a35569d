"""Workspace records: the mechanism's view of one workspace and where it is kept (SDD §7.5).

Owns: ``WorkspaceRecord`` (strategy, path, status, branch, base commit, an isolated copy's
manifest, a worktree's verified git directory), ``RecordStore`` (one JSON sidecar per
workspace under the workspaces root, written atomically, so a restart knows what the mechanism
made), ``workspace_error`` (the package's ``workspace_error`` failure) and ``parse_iso`` (the
records' timestamps, read back for retention).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from air.contracts.error import AirException, ErrorKind
from air.contracts.task import WorkspaceRef, WorkspaceStatus, WorkspaceStrategy

__all__ = ["RecordStore", "WorkspaceRecord", "parse_iso", "workspace_error"]


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


def workspace_error(message: str, detail: str | None = None) -> AirException:
    """A ``workspace_error``: git, the copy or the record failed, or the request would lose work."""
    return AirException.of(
        kind=ErrorKind.WORKSPACE_ERROR,
        message=message,
        detail=detail,
        user_action="Check the project's git state (git status, git worktree list) and retry.",
    )


CLEANED_DIR = "cleaned"
"""Where a cleaned workspace's sidecar goes (below the workspaces root), out of what every
start lists: the retention reads only the workspaces it may still clean, not the project's
whole history."""


class RecordStore:
    """The sidecars under ``root``, with the records read so far cached by id. A cleaned
    workspace's sidecar is kept in ``CLEANED_DIR``, where ``get`` still finds it."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._records: dict[str, WorkspaceRecord] = {}

    def _sidecar(self, workspace_id: str, *, cleaned: bool = False) -> str:
        if cleaned:
            return os.path.join(self.root, CLEANED_DIR, f"{workspace_id}.json")
        return os.path.join(self.root, f"{workspace_id}.json")

    def save(self, rec: WorkspaceRecord) -> None:
        """Write ``rec`` atomically (temporary file, fsync, rename); a cleaned one moves to
        ``CLEANED_DIR``."""
        cleaned = rec.status == WorkspaceStatus.CLEANED.value
        target = self._sidecar(rec.workspace_id, cleaned=cleaned)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        tmp = target + ".tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as handle:
                json.dump(asdict(rec), handle)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)  # a full disk leaves no half-written sidecar behind
            raise
        if cleaned:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._sidecar(rec.workspace_id))
        self._records[rec.workspace_id] = rec

    def forget(self, workspace_id: str) -> None:
        """Delete ``workspace_id``'s sidecar: a workspace taken back before anything durable
        named it (``WorkspaceManager.create_workspace``)."""
        self._records.pop(workspace_id, None)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._sidecar(workspace_id))

    def get(self, workspace_id: str) -> WorkspaceRecord:
        """The record of ``workspace_id`` (a cleaned one too).

        Raises:
            AirException: ``not_found`` when this project has no such workspace.
        """
        rec = self._records.get(workspace_id)
        if rec is not None:
            return rec
        for cleaned in (False, True):
            try:
                with open(self._sidecar(workspace_id, cleaned=cleaned), encoding="utf-8") as f:
                    rec = WorkspaceRecord(**json.load(f))
                break
            except FileNotFoundError:
                continue
        else:
            raise AirException.of(
                kind=ErrorKind.NOT_FOUND,
                message=f"unknown workspace {workspace_id}",
                user_action="List workspaces with `air history`; the id may be another project's.",
            )
        self._records[workspace_id] = rec
        return rec

    def list(self) -> list[WorkspaceRecord]:
        """Every record under the root that is not cleaned, by id (a cleaned one found there,
        written before ``CLEANED_DIR``, is moved into it)."""
        if not os.path.isdir(self.root):
            return []
        found = []
        for name in sorted(os.listdir(self.root)):
            if not name.endswith(".json"):
                continue
            rec = self.get(name[: -len(".json")])
            if rec.status != WorkspaceStatus.CLEANED.value:
                found.append(rec)
                continue
            with contextlib.suppress(OSError):
                self.save(rec)  # moved once; where the disk refuses, read again next time
        return found


_ISO_UTC = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{1,6}Z")


def parse_iso(text: str) -> datetime:
    """``utc_now_iso``'s shape only (``2025-01-31T12:00:00.123456Z``), like the
    ``strptime("%Y-%m-%dT%H:%M:%S.%fZ")`` it replaces, without importing ``_strptime``.

    Raises:
        ValueError: any other text.
    """
    if not _ISO_UTC.fullmatch(text):
        raise ValueError(f"time data {text!r} does not match format '%Y-%m-%dT%H:%M:%S.%fZ'")
    return datetime.fromisoformat(text[:-1]).replace(tzinfo=UTC)
