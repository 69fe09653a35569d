"""ArtifactStore and EvidenceStore of one session (SDD §11.1, §11.2; baselines §A.13).

Owns the artifact write protocol (temp file in the artifact directory → sha256 + size → fsync
→ atomic rename to ``<ts>-<art_id>-<slug><ext>`` → durable ``artifact.created``; whole, or in
pieces through an ``ArtifactWriter``), artifact
reads, the orphan-file recovery scan (register a well-named file the DB does not know,
quarantine anything else, delete stale temp files) and the evidence records
(``evidence.created``). URIs are ``artifact://project/<pid>/session/<sid>/<art_id>``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from pydantic import Field

from air.artifacts.names import NAME, artifact_file, artifact_filename, slug
from air.contracts.artifact import ArtifactType
from air.contracts.error import AirException
from air.contracts.event import EntityType, EventSource, new_event
from air.contracts.ids import (
    Clock,
    Contract,
    IdGenerator,
    SystemClock,
    UlidGenerator,
    empty_list,
    new_id,
)
from air.events.store import EventStore
from air.store.repository import Row

if TYPE_CHECKING:  # built at the first artifact or evidence (IMPL-BOOT-12)
    from air.contracts.artifact_records import (
        ArtifactContext,
        ArtifactCreateInput,
        ArtifactReadResult,
        ArtifactRef,
    )
    from air.contracts.evidence_records import EvidenceCreateInput, EvidenceRef

__all__ = [
    "TEMP_PREFIX",
    "ArtifactStore",
    "ArtifactWriter",
    "EvidenceStore",
    "RecoveryReport",
    "artifact_uri",
    "recover_orphan_artifacts",
]

TEMP_PREFIX = ".tmp-"
_EXT_OK = re.compile(r"^(\.[A-Za-z0-9]{1,12}){0,2}$")


def artifact_uri(project_id: str, session_id: str, artifact_id: str) -> str:
    return f"artifact://project/{project_id}/session/{session_id}/{artifact_id}"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _ref(row: Row, root: Path) -> ArtifactRef:
    from air.contracts.artifact_records import ArtifactRef

    return ArtifactRef(
        artifact_id=row["artifact_id"],
        uri=row["uri"],
        path=str(artifact_file(row["path"], root)),  # where it is now (a moved project)
        type=row["type"],
        sha256=row["sha256"],
        size_bytes=row["size_bytes"],
    )


def _storage_error(artifact_id: str, exc: OSError) -> AirException:
    return AirException.of(
        kind="storage_error",
        message=f"cannot write artifact {artifact_id}",
        detail=str(exc),
        retryability="transient",
        user_action="Check free disk space and permissions under .air/local/sessions.",
    )


class ArtifactWriter:
    """One artifact being written (``ArtifactStore.open_writer``): ``write`` and ``close`` from
    any one thread at a time (a worker thread: they block on the disk), then ``commit`` on the
    thread that records events (rename into place, ``artifact.created``) or ``discard``."""

    def __init__(
        self,
        store: ArtifactStore,
        data: ArtifactCreateInput,
        ctx: ArtifactContext,
        artifact_id: str,
        temp: Path,
        fh: BinaryIO,
    ) -> None:
        self.store = store
        self.data = data
        self.ctx = ctx
        self.artifact_id = artifact_id
        self.temp = temp
        self._fh: BinaryIO | None = fh
        self.sha256 = hashlib.sha256()
        self.size = 0

    def write(self, content: bytes) -> None:
        """Append ``content`` (already redacted: the store writes what it is given).

        Raises:
            AirException: ``storage_error`` (the temp file is removed).
        """
        if not content:
            return
        if self._fh is None:
            raise AirException.of(
                kind="system_error",
                message=f"artifact {self.artifact_id} was written after it was closed",
                user_action="Report this as a bug in air.",
            )
        try:
            self._fh.write(content)
        except OSError as exc:
            self.discard()
            raise _storage_error(self.artifact_id, exc) from exc
        self.sha256.update(content)
        self.size += len(content)

    def close(self) -> None:
        """Flush and fsync the temp file (idempotent).

        Raises:
            AirException: ``storage_error`` (the temp file is removed).
        """
        fh, self._fh = self._fh, None
        if fh is None:
            return
        try:
            with fh:
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            self.temp.unlink(missing_ok=True)
            raise _storage_error(self.artifact_id, exc) from exc

    def commit(self) -> ArtifactRef:
        """``close``, rename into place, record ``artifact.created``; the artifact's ref.

        Raises:
            AirException: as ``ArtifactStore.create``.
        """
        self.close()
        return self.store._commit(self)

    def discard(self) -> None:
        """Drop the artifact: close and remove the temp file (idempotent)."""
        fh, self._fh = self._fh, None
        if fh is not None:
            fh.close()
        self.temp.unlink(missing_ok=True)


class ArtifactStore:
    """Artifacts of one session; see the module docstring."""

    def __init__(
        self,
        events: EventStore,
        *,
        project_id: str,
        session_id: str,
        artifact_root: str | os.PathLike[str],
        clock: Clock | None = None,
        ids: IdGenerator | None = None,
    ) -> None:
        self.events = events
        self.project_id = project_id
        self.session_id = session_id
        self.root = Path(artifact_root)
        self.clock = clock or SystemClock()
        self.ids = ids or UlidGenerator()

    def create(self, data: ArtifactCreateInput, ctx: ArtifactContext) -> ArtifactRef:
        """Write the bytes durably, then record ``artifact.created``.

        Raises:
            AirException: ``validation_error`` for a bad extension or a context of another
                session; ``storage_error`` when the file cannot be written; the EventStore's
                errors when recording fails (the file is removed again then).
        """
        writer = self.open_writer(data, ctx)
        try:
            writer.close()
        except BaseException:
            writer.discard()
            raise
        return writer.commit()

    def open_writer(self, data: ArtifactCreateInput, ctx: ArtifactContext) -> ArtifactWriter:
        """An artifact written in pieces (``data.content`` first): the same protocol as
        ``create``, for content too large to hold (a command's log, IMPL-REDACT-2).

        Raises:
            AirException: as ``create``.
        """
        if ctx.session_id != self.session_id:
            raise AirException.of(
                kind="validation_error",
                message=f"artifact context names session {ctx.session_id}, not {self.session_id}",
                user_action="Create the artifact through the store of its own session.",
            )
        if not _EXT_OK.match(data.extension):
            raise AirException.of(
                kind="validation_error",
                message=f"invalid artifact extension {data.extension!r}",
                user_action="Use an extension like '.txt', '.log' or '.tar.gz'.",
            )
        artifact_id = self.ids.artifact_id()
        temp = self.root / f"{TEMP_PREFIX}{artifact_id}"
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fh = open(temp, "wb")
        except OSError as exc:
            raise _storage_error(artifact_id, exc) from exc
        writer = ArtifactWriter(self, data, ctx, artifact_id, temp, fh)
        writer.write(data.content)
        return writer

    def _commit(self, writer: ArtifactWriter) -> ArtifactRef:
        from air.contracts.artifact_records import ArtifactRef

        data, ctx, artifact_id = writer.data, writer.ctx, writer.artifact_id
        created_at = self.clock.now_iso()
        final = self.root / artifact_filename(created_at, artifact_id, data.slug, data.extension)
        try:
            os.replace(writer.temp, final)
            _fsync_dir(self.root)
        except OSError as exc:
            writer.temp.unlink(missing_ok=True)
            raise _storage_error(artifact_id, exc) from exc
        ref = ArtifactRef(
            artifact_id=artifact_id,
            uri=artifact_uri(self.project_id, self.session_id, artifact_id),
            path=str(final),
            type=data.type,
            sha256=writer.sha256.hexdigest(),
            size_bytes=writer.size,
        )
        payload = {
            **ref.model_dump(mode="json"),
            "mime_type": data.mime_type,
            "slug": slug(data.slug),
            "task_id": ctx.task_id,
            "agent_id": ctx.agent_id,
            "tool_run_id": ctx.tool_run_id,
            "command_run_id": ctx.command_run_id,
            "created_at": created_at,
        }
        try:
            self.events.append(
                new_event(
                    "artifact.created",
                    payload,
                    session_id=self.session_id,
                    project_id=self.project_id,
                    source=EventSource(kind="system", id="artifact_store"),
                    timestamp=created_at,
                )
            )
        except AirException:
            final.unlink(missing_ok=True)
            raise
        return ref

    def get(self, artifact_id: str) -> ArtifactRef | None:
        row = self.events.store.artifacts.get(artifact_id)
        return None if row is None else _ref(row, self.root)

    def get_by_uri(self, uri: str) -> ArtifactRef | None:
        row = self.events.store.artifacts.get_by_uri(uri)
        return None if row is None else _ref(row, self.root)

    def list_by_entity(self, entity_type: EntityType | str, entity_id: str) -> list[ArtifactRef]:
        rows = self.events.store.artifacts.list_by_entity(entity_type, entity_id)
        return [_ref(r, self.root) for r in rows]

    def _open(self, path: str) -> int:
        """A read descriptor of the artifact file ``path``: a regular file directly in this
        session's artifact directory, never through a link (a row or a file the session did not
        write, e.g. in a cloned repository's ``.air/local``, cannot point it elsewhere)."""
        if os.path.dirname(path) != str(self.root):
            raise OSError(f"{path} is not in the session's artifact directory {self.root}")
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise OSError(f"{path} is not a regular file")
        return fd

    def read(self, artifact_id: str, *, max_bytes: int | None = None) -> ArtifactReadResult:
        """Read an artifact's bytes (up to ``max_bytes``): its file in this session's artifact
        directory only (``_open``).

        Raises:
            AirException: ``not_found`` for an unknown id or a missing file (or one that is no
                regular file of the artifact directory).
        """
        from air.contracts.artifact_records import ArtifactReadResult

        ref = self.get(artifact_id)
        if ref is None:
            raise AirException.of(
                kind="not_found",
                message=f"no artifact {artifact_id} in session {self.session_id}",
                user_action="List the session's artifacts with `air history` and use one of them.",
            )
        try:
            with os.fdopen(self._open(ref.path), "rb") as fh:
                content = fh.read() if max_bytes is None else fh.read(max_bytes + 1)
        except OSError as exc:
            raise AirException.of(
                kind="not_found",
                message=f"the file of artifact {artifact_id} is missing",
                detail=str(exc),
                user_action="Run `air doctor` to check the session's artifact directory.",
            ) from exc
        truncated = max_bytes is not None and len(content) > max_bytes
        return ArtifactReadResult(
            ref=ref, content=content[:max_bytes] if truncated else content, truncated=truncated
        )


class RecoveryReport(Contract):
    registered: list[str] = Field(default_factory=empty_list)
    """Artifact ids recorded now for files that had been renamed into place but not logged."""
    quarantined: list[str] = Field(default_factory=empty_list)
    """Paths moved to ``<session>/quarantine/``."""
    removed_temp: list[str] = Field(default_factory=empty_list)


def recover_orphan_artifacts(store: ArtifactStore, *, register: bool = True) -> RecoveryReport:
    """Reconcile the artifact directory with the ``artifacts`` table (SDD §16.3 step 5).

    Stale temp files are deleted (their write never completed). A file named like an artifact
    but unknown to the DB is registered with ``artifact.created`` (type ``other``) when
    ``register``; any other unknown file, and any link, is moved to ``<session>/quarantine/``.
    """
    report = RecoveryReport()
    if not store.root.is_dir():
        return report
    # by name: the recorded paths are where the files were written (a project moved since)
    known = {artifact_file(r["path"], store.root) for r in store.events.store.artifacts.list_all()}
    quarantine = store.root.parent / "quarantine"
    for path in sorted(store.root.iterdir()):
        if path.is_symlink():  # never a file air wrote: not registered, not followed
            quarantine.mkdir(parents=True, exist_ok=True)
            shutil.move(str(path), quarantine / path.name)
            report.quarantined.append(str(quarantine / path.name))
            continue
        if not path.is_file() or path in known:
            continue
        if path.name.startswith(TEMP_PREFIX):
            path.unlink(missing_ok=True)
            report.removed_temp.append(str(path))
            continue
        match = NAME.match(path.name)
        if register and match is not None and store.get(match.group(2)) is None:
            content = path.read_bytes()
            stem, _ext = os.path.splitext(match.group(3))
            artifact_id = match.group(2)
            store.events.append(
                new_event(
                    "artifact.created",
                    {
                        "artifact_id": artifact_id,
                        "uri": artifact_uri(store.project_id, store.session_id, artifact_id),
                        "path": str(path),
                        "type": ArtifactType.OTHER.value,
                        "sha256": hashlib.sha256(content).hexdigest(),
                        "size_bytes": len(content),
                        "slug": slug(stem),
                        "created_at": store.clock.now_iso(),
                    },
                    session_id=store.session_id,
                    project_id=store.project_id,
                    source=EventSource(kind="system", id="artifact_recovery"),
                    timestamp=store.clock.now_iso(),
                )
            )
            report.registered.append(artifact_id)
            continue
        quarantine.mkdir(parents=True, exist_ok=True)
        target = quarantine / path.name
        shutil.move(str(path), target)
        report.quarantined.append(str(target))
    return report


class EvidenceStore:
    """Evidence records of one session (``evidence.created`` → ``evidence_refs``)."""

    def __init__(
        self,
        events: EventStore,
        *,
        session_id: str,
        project_id: str | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.events = events
        self.session_id = session_id
        self.project_id = project_id
        self.clock = clock or SystemClock()

    def create(self, data: EvidenceCreateInput) -> EvidenceRef:
        """Record one piece of evidence and return its reference."""
        from air.contracts.evidence_records import EvidenceRef

        ref = EvidenceRef(
            evidence_ref_id=new_id("evd"),
            kind=data.kind,
            ref=data.ref,
            claim=data.claim,
            location_json=data.location_json,
        )
        self.events.append(
            new_event(
                "evidence.created",
                {
                    **ref.model_dump(mode="json"),
                    "entity_type": data.entity_type.value,
                    "entity_id": data.entity_id,
                },
                session_id=self.session_id,
                project_id=self.project_id,
                source=EventSource(kind="system", id="evidence_store"),
                timestamp=self.clock.now_iso(),
            )
        )
        return ref

    def list_for_entity(self, entity_type: EntityType | str, entity_id: str) -> list[EvidenceRef]:
        from air.contracts.evidence_records import EvidenceRef

        rows = self.events.store.evidence.list_for_entity(str(entity_type), entity_id)
        return [
            EvidenceRef(
                evidence_ref_id=r["evidence_ref_id"],
                kind=r["kind"],
                ref=r["ref"],
                claim=r["claim"],
                location_json=(
                    json.loads(r["location_json"]) if r["location_json"] is not None else None
                ),
            )
            for r in rows
        ]
