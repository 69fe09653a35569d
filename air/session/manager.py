"""SessionManager: open and close sessions, and the OpenSession bundle (SDD §6.2).

Owns ``SessionManager`` (``open_session`` creates or reopens
``.air/local/sessions/<sid>/session.db``, migrates it, checks the FK-off invariants and
ingests ``session.created`` only for a new session; ``close_session`` releases it, optionally
archiving it with a durable ``session.archived``) and ``OpenSession``: everything bound to one
session DB (db, repositories, event store, ingestor, bus, artifact and evidence stores).
Provider and model are fixed at open (stored by ``session.created``) and never change.

A new session may defer ``session.created`` to ``OpenSession.creating()``, one transaction that
also holds its first events (``air run`` puts every ``task.created`` there), so a process killed
meanwhile leaves either no recorded session or the session with all its tasks (IMPL-CLI-3).
A deferred session closed without being created leaves nothing behind.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from air.artifacts.store import ArtifactStore, EvidenceStore
from air.contracts.error import AirException
from air.contracts.event import EventSource, RuntimeEvent, new_event
from air.contracts.ids import Clock, IdGenerator, JsonObject, SystemClock, UlidGenerator
from air.contracts.project import OpenSessionOptions, ProjectContext, SessionContext
from air.events.bus import EventBus
from air.events.ingestor import EventIngestor
from air.events.registry import default_registry
from air.events.store import EventStore
from air.store.db import DatabaseManager
from air.store.integrity import OrphanReport
from air.store.repositories import SessionStore
from air.store.session_db import open_session_database

__all__ = ["OpenSession", "SessionManager", "list_session_ids", "session_paths"]

log = logging.getLogger("air.session")


def session_paths(project: ProjectContext, session_id: str) -> tuple[Path, Path, Path]:
    """``(session_dir, db_path, artifact_root)`` of a session of ``project``."""
    session_dir = Path(project.local_root) / "sessions" / session_id
    return session_dir, session_dir / "session.db", session_dir / "artifacts"


@dataclass(repr=False, eq=False)
class OpenSession:
    """Everything bound to one open session DB."""

    context: SessionContext
    project: ProjectContext
    db: DatabaseManager
    store: SessionStore
    events: EventStore
    ingestor: EventIngestor
    bus: EventBus
    artifacts: ArtifactStore
    evidence: EvidenceStore
    orphan_report: OrphanReport | None = None
    created: bool = False
    """True when this call created the session (and ingested ``session.created``)."""
    clock: Clock = field(default_factory=SystemClock)
    pending_created: JsonObject | None = None
    """The payload of a deferred ``session.created`` not yet written (see ``creating``)."""

    @property
    def session_id(self) -> str:
        return self.context.session_id

    def source(
        self, kind: str = "system", id: str | None = None, agent_type: str | None = None
    ) -> EventSource:
        """An EventSource for events emitted by this process."""
        return EventSource.model_validate({"kind": kind, "id": id, "agent_type": agent_type})

    def event(
        self,
        type: str,
        payload: JsonObject,
        *,
        source: EventSource | None = None,
        route: list[str] | None = None,
    ) -> RuntimeEvent:
        """Build an event of this session (fresh id, this session's clock for the timestamp)."""
        return new_event(
            type,
            payload,
            session_id=self.context.session_id,
            project_id=self.context.project_id,
            source=source or self.source(),
            route=route,
            timestamp=self.clock.now_iso(),
        )

    def append(self, type: str, payload: JsonObject, *, source: EventSource | None = None) -> int:
        """Build and durably append one event; returns its seq."""
        return self.events.append(self.event(type, payload, source=source))

    @contextmanager
    def creating(self) -> Iterator[None]:
        """One transaction: the deferred ``session.created`` (if any) and every event the body
        appends commit together, or none does (the body may await; events are published as
        they are appended, before the commit)."""
        with self.db.transaction():
            if self.pending_created is not None:
                self.append("session.created", self.pending_created)
            yield
        self.pending_created = None

    def close(self) -> None:
        """Release the database handle (idempotent). A deferred session never created is
        removed (its directory holds nothing recorded)."""
        self.db.close()
        if self.pending_created is not None:
            self.pending_created = None
            shutil.rmtree(Path(self.context.db_path).parent, ignore_errors=True)


class SessionManager:
    """Open and close the sessions of a project (see the module docstring)."""

    def __init__(self, *, clock: Clock | None = None, ids: IdGenerator | None = None) -> None:
        self.clock = clock or SystemClock()
        self.ids = ids or UlidGenerator()
        self._open: dict[str, OpenSession] = {}

    def open_session(
        self,
        project: ProjectContext,
        options: OpenSessionOptions | None = None,
        *,
        defer_created: bool = False,
        must_exist: bool = False,
    ) -> OpenSession:
        """Create or reopen a session and return everything bound to its DB.

        Args:
            project: the project.
            options: the session id (default: a new one), mode, provider and model.
            defer_created: a new session's ``session.created`` waits for
                ``OpenSession.creating()`` (written with the session's first events).
            must_exist: only reopen: a session with no recorded ``session.created`` (or no
                session.db) is ``not_found`` and nothing is created.

        Raises:
            AirException: ``corrupt_database`` / ``schema_error`` for an unusable session.db
                (nothing is written to it then); ``storage_error`` when it cannot be created;
                ``not_found`` (``must_exist``) for a session that was never recorded.
        """
        options = options or OpenSessionOptions()
        session_id = options.session_id or self.ids.session_id()
        if session_id in self._open:
            return self._open[session_id]
        session_dir, db_path, artifact_root = session_paths(project, session_id)
        if must_exist and not db_path.is_file():
            raise _never_recorded(session_id, project)
        try:
            artifact_root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise AirException.of(
                kind="storage_error",
                message=f"cannot create the session directory {session_dir}",
                detail=str(exc),
                user_action="Check that .air/local is writable and the disk is not full.",
            ) from exc
        db = open_session_database(db_path)
        try:
            bus = EventBus()
            store = SessionStore(db)
            events = EventStore(db, registry=default_registry(), bus=bus, store=store)
            ingestor = EventIngestor(events, bus)
            existing = store.sessions.get(session_id)
            if must_exist and existing is None:
                raise _never_recorded(session_id, project)
            context = SessionContext(
                session_id=session_id,
                project_id=project.project_id,
                project_root=project.project_root,
                db_path=str(db_path),
                artifact_root=str(artifact_root),
                model_provider_id=(
                    existing["model_provider_id"] if existing else options.model_provider_id
                ),
                model_id=existing["model_id"] if existing else options.model_id,
            )
            opened = OpenSession(
                context=context,
                project=project,
                db=db,
                store=store,
                events=events,
                ingestor=ingestor,
                bus=bus,
                artifacts=ArtifactStore(
                    events,
                    project_id=project.project_id,
                    session_id=session_id,
                    artifact_root=artifact_root,
                    clock=self.clock,
                    ids=self.ids,
                ),
                evidence=EvidenceStore(
                    events,
                    session_id=session_id,
                    project_id=project.project_id,
                    clock=self.clock,
                ),
                clock=self.clock,
            )
            if existing is None:
                created: JsonObject = {
                    "session_id": session_id,
                    "project_id": project.project_id,
                    "title": options.title,
                    "mode": options.mode,
                    "model_provider_id": options.model_provider_id,
                    "model_id": options.model_id,
                    **({"host": options.host} if options.host else {}),
                    **_run_options(options),
                }
                if defer_created:
                    opened.pending_created = created
                else:
                    opened.append("session.created", created)
                opened.created = True
            # a file this call created holds no row that could dangle (IMPL-BOOT-13); the
            # recovery of open_runtime checks again either way
            report = OrphanReport(violations=[]) if db.created else store.referential_check()
            if not report.clean:
                log.warning("session %s: %d FK-off violations", session_id, len(report.violations))
            opened.orphan_report = report
        except BaseException:
            db.close()
            raise
        self._open[session_id] = opened
        return opened

    def get(self, session_id: str) -> OpenSession | None:
        return self._open.get(session_id)

    def close_session(self, session_id: str, *, archive: bool = False) -> None:
        """Release a session; with ``archive`` first record a durable ``session.archived``."""
        opened = self._open.pop(session_id, None)
        if opened is None:
            return
        try:
            if archive:
                opened.append("session.archived", {"session_id": session_id})
        finally:
            opened.close()

    def close_all(self) -> None:
        for session_id in list(self._open):
            self.close_session(session_id)


def _never_recorded(session_id: str, project: ProjectContext) -> AirException:
    return AirException.of(
        kind="not_found",
        message=(
            f"session {session_id} in {project.project_root} was never recorded "
            "(air stopped while starting it): nothing ran, there is nothing to resume"
        ),
        user_action="Start the batch again with `air run --headless BATCH`.",
        metadata={"session_id": session_id, "field": "--session"},
    )


def list_session_ids(project: ProjectContext) -> list[str]:
    """Ids of every session directory of ``project`` (oldest first by ULID)."""
    root = Path(project.local_root) / "sessions"
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "session.db").is_file())


def _run_options(options: OpenSessionOptions) -> JsonObject:
    """The run options ``session.created`` records, those not at their default
    (IMPL-RESUME-2): what ``air resume`` keeps."""
    recorded: JsonObject = {}
    if options.isolation not in (None, "auto"):
        recorded["isolation"] = options.isolation
    if options.permission_mode not in (None, "default"):
        recorded["permission_mode"] = options.permission_mode
    if options.branch:
        recorded["branch"] = options.branch
    if options.review:
        recorded["review"] = True
    return recorded
