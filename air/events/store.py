"""EventStore: durable append with projection in one transaction, query, and replay (SDD §5.3).

Owns ``EventStore`` (``append`` / ``append_many`` / ``query`` / ``replay``), ``to_row`` (the
``events`` row of an envelope, ``route_text = "/".join(route)``), ``record_to_event`` and
``replay_events``. One call = one ``BEGIN IMMEDIATE`` transaction: insert the events rows,
project each (and count it into the session's summary row, ``air.store.read_model``),
commit, then publish to the bus. Any failure rolls everything back, publishes
nothing and surfaces as an ``AirException``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pydantic_core
from pydantic import BaseModel

from air.contracts.error import AirException
from air.contracts.event import EventFilter, EventSource, PersistedEventRecord, RuntimeEvent
from air.contracts.runtime import AgentType
from air.events.projection import project
from air.events.registry import EventSchemaRegistry, default_registry
from air.store.db import DatabaseManager
from air.store.read_model import note_event, note_events
from air.store.repositories import SessionStore
from air.store.stored_payloads import damaged_row

if TYPE_CHECKING:
    from air.events.bus import EventBus

__all__ = ["ROW_COLUMNS", "EventStore", "record_to_event", "replay_events", "to_row", "too_large"]

_AGENT_TYPES: dict[AgentType | None, str | None] = {t: t.value for t in AgentType}
_AGENT_TYPES[None] = None


_ROUTES: dict[tuple[str, ...], tuple[str, str]] = {}
"""``route_json`` and ``route_text`` by route: a session's events pass a handful of routes, so
each is encoded once (IMPL-BATCH-1); bounded by ``_ROUTES_MAX``."""
_ROUTES_MAX = 256


def _route(route: list[str]) -> tuple[str, str]:
    key = tuple(route)
    found = _ROUTES.get(key)
    if found is None:
        found = (pydantic_core.to_json(route).decode(), "/".join(route))
        if len(_ROUTES) < _ROUTES_MAX:
            _ROUTES[key] = found
    return found


ROW_COLUMNS = (
    "seq",
    "id",
    "type",
    "version",
    "timestamp",
    "session_id",
    "project_id",
    "source_kind",
    "source_id",
    "source_agent_type",
    "route_json",
    "route_text",
    "payload_json",
    "task_id",
    "agent_id",
    "tool_run_id",
    "command_run_id",
)
"""The ``events`` columns of ``to_row``, in its order."""


def to_row(event: RuntimeEvent, payload: BaseModel, seq: int) -> tuple[Any, ...]:
    """The ``events`` row of an envelope and its validated payload, in ``ROW_COLUMNS`` order
    (a tuple: the batch insert binds it as it is)."""
    fields = payload.__dict__
    source = event.source
    route_json, route_text = _route(event.route)
    task_id = fields.get("task_id")
    if task_id is None:
        spec = fields.get("task_spec")
        if spec is not None:
            task_id = spec.id
    agent_id = fields.get("agent_id")
    tool_run_id = fields.get("tool_run_id")
    command_run_id = fields.get("command_run_id")
    return (
        seq,
        event.id,
        event.type,
        event.version,
        event.timestamp,
        event.session_id,
        event.project_id,
        source.kind,
        source.id,
        _AGENT_TYPES[source.agent_type],
        route_json,
        route_text,
        # model_dump_json's own serializer, called without the wrapper's per-call keywords
        payload.__pydantic_serializer__.to_json(payload).decode(),
        None if task_id is None else str(task_id),
        None if agent_id is None else str(agent_id),
        None if tool_run_id is None else str(tool_run_id),
        None if command_run_id is None else str(command_run_id),
    )


def record_to_event(record: Mapping[str, Any] | PersistedEventRecord) -> RuntimeEvent:
    """Rebuild the RuntimeEvent stored in an ``events`` row.

    Raises:
        AirException: ``validation_error`` naming the row (``damaged_row``) when it holds no
            valid envelope (a damaged row: its JSON, its fields).
    """
    r = record.model_dump() if isinstance(record, PersistedEventRecord) else dict(record)
    try:
        return RuntimeEvent(
            id=r["id"],
            type=r["type"],
            version=r["version"],
            timestamp=r["timestamp"],
            session_id=r["session_id"],
            project_id=r["project_id"],
            source=EventSource(
                kind=r["source_kind"], id=r["source_id"], agent_type=r["source_agent_type"]
            ),
            route=json.loads(r["route_json"]),
            payload=json.loads(r["payload_json"]),
        )
    except (ValueError, TypeError) as exc:  # JSON or the envelope's validation
        raise damaged_row(r.get("seq"), type(exc).__name__, str(exc)[:500]) from exc


def _wrap(event: RuntimeEvent, exc: Exception) -> AirException:
    if isinstance(exc, AirException):
        return exc
    if isinstance(exc, OverflowError):
        return too_large(event)
    return AirException.of(
        kind="system_error",
        message=f"storing event {event.type} failed: {exc}",
        detail=type(exc).__name__,
        user_action="Nothing was recorded; run `air doctor` and report the bug with its bundle.",
        metadata={"event_id": event.id, "event_type": event.type},
    )


def too_large(event: RuntimeEvent) -> AirException:
    """An event holding a number SQLite's 64-bit INTEGER cannot store (its projection's
    ``OverflowError``): the event is invalid, whoever sent it (a worker's heartbeat, a host's
    command record); nothing of it is recorded."""
    return AirException.of(
        kind="validation_error",
        message=f"event {event.type} holds a number past SQLite's 64-bit integers",
        user_action="Nothing was recorded; the event's source sent a number no count reaches.",
        metadata={"event_id": event.id, "event_type": event.type},
    )


class EventStore:
    """The durable event log of one session DB, with its projection and post-commit publish.

    Synchronous by design: call it inline from Trio code (one append is well under a
    millisecond) or from one worker thread; ``publish`` then must reach the bus on the Trio
    thread, which ``EventBus.publish`` handles.
    """

    def __init__(
        self,
        db: DatabaseManager,
        *,
        registry: EventSchemaRegistry | None = None,
        bus: EventBus | None = None,
        store: SessionStore | None = None,
    ) -> None:
        self.db = db
        self.registry = registry or default_registry()
        self.bus = bus
        self.store = store or SessionStore(db)

    def _validate(self, event: RuntimeEvent) -> BaseModel:
        payload = self.registry.parse(event)
        if not self.registry.is_durable(event.type):
            raise AirException.of(
                kind="system_error",
                message=f"event {event.type} is ephemeral and cannot be stored",
                user_action="Send ephemeral events through EventIngestor / EventBus.publish.",
                metadata={"event_type": event.type},
            )
        return payload

    def _insert_and_project(self, event: RuntimeEvent, payload: BaseModel, seq: int) -> None:
        try:
            self.store.events.insert_rows(ROW_COLUMNS, [to_row(event, payload, seq)])
        except sqlite3.IntegrityError as exc:
            raise _already_stored(event) from exc
        project(self.store, event, payload, seq)
        note_event(self.db.conn, event.session_id, seq, event.timestamp, event.type)

    def append(self, event: RuntimeEvent) -> int:
        """Store one durable event and its projection in one transaction, then publish it.

        Returns:
            The event's ``seq``.

        Raises:
            AirException: ``system_error`` (unknown or ephemeral type, projection failure),
                ``validation_error`` (bad payload), ``storage_error``. Nothing is stored or
                published then.
        """
        return self.append_many([event])[0]

    def append_many(self, events: Sequence[RuntimeEvent]) -> list[int]:
        """Store several durable events in ONE transaction (all or nothing), then publish."""
        if not events:
            return []
        return self._store(events, [self._validate(e) for e in events])

    def append_parsed(self, event: RuntimeEvent, payload: BaseModel) -> int:
        """``append`` of an event whose payload was just validated into ``payload`` (the
        ingestor's path: one validation per event, IMPL-PERF-3).

        ``payload`` is trusted only when it is an instance of exactly the model this store's
        registry holds for the event's type and version; anything else is validated again.
        The durable check stays.
        """
        model = self.registry.get_model(event.type, event.version)
        if model is None or type(payload) is not model or not self.registry.is_durable(event.type):
            return self.append(event)  # validated (and refused there if it must be)
        return self._store([event], [payload])[0]

    def _store(self, events: Sequence[RuntimeEvent], payloads: list[BaseModel]) -> list[int]:
        """One transaction (IMPL-BATCH-1): the events rows with one ``executemany`` and the seqs
        AUTOINCREMENT would give them, each event's projection in order (projections never read
        ``events``), one summary-row update per session; then publish."""
        try:
            with self.db.transaction():
                seqs = self._insert_batch(events, payloads)
                store = self.store
                for event, payload, seq in zip(events, payloads, seqs, strict=True):
                    try:
                        project(store, event, payload, seq)
                    except AirException:
                        raise
                    except Exception as exc:
                        raise _wrap(event, exc) from exc
                self._note(events, seqs)
        except AirException:
            raise
        except Exception as exc:
            raise _wrap(events[0], exc) from exc
        if self.bus is not None:
            for event in events:
                self.bus.publish(event)
        return seqs

    def _insert_batch(self, events: Sequence[RuntimeEvent], payloads: list[BaseModel]) -> list[int]:
        first = self.store.events.next_seq()
        seqs = list(range(first, first + len(events)))
        rows = [to_row(e, p, seq) for e, p, seq in zip(events, payloads, seqs, strict=True)]
        try:
            self.store.events.insert_rows(ROW_COLUMNS, rows)
        except sqlite3.IntegrityError as exc:
            # the rows before the failing one are in the (rolled back) transaction: only rows
            # older than the batch count as stored before
            stored = self._stored_ids([e.id for e in events], before=first)
            seen: set[str] = set()
            dup = events[0]
            for event in events:
                if event.id in stored or event.id in seen:
                    dup = event
                    break
                seen.add(event.id)
            raise _already_stored(dup) from exc
        return seqs

    def _stored_ids(self, ids: list[str], *, before: int) -> set[str]:
        marks = ", ".join("?" for _ in ids)
        rows = self.db.conn.execute(
            f"SELECT id FROM events WHERE seq < ? AND id IN ({marks})", [before, *ids]
        )
        return {str(r[0]) for r in rows}

    def _note(self, events: Sequence[RuntimeEvent], seqs: list[int]) -> None:
        """The summary rows of the batch's sessions, one statement per session."""
        conn = self.db.conn
        if len(events) == 1:
            e = events[0]
            note_event(conn, e.session_id, seqs[0], e.timestamp, e.type)
            return
        spans: dict[str, list[int]] = {}  # session -> [first index, last index, count]
        for i, event in enumerate(events):
            span = spans.get(event.session_id)
            if span is None:
                spans[event.session_id] = [i, i, 1]
            else:
                span[1] = i
                span[2] += 1
        for session_id, (a, b, count) in spans.items():
            first, last = events[a], events[b]
            note_events(
                conn,
                session_id,
                (seqs[a], first.timestamp),
                (seqs[b], last.timestamp, last.type),
                count,
            )

    def replay(self, records: Iterable[Mapping[str, Any] | PersistedEventRecord]) -> int:
        """Re-apply stored ``events`` rows (keeping their ``seq``) into this, empty, DB.

        Used to prove that the domain tables are a pure function of the log. Publishes nothing.

        Returns:
            The number of events replayed.
        """
        count = 0
        with self.db.transaction():
            for record in records:
                r = record.model_dump() if isinstance(record, PersistedEventRecord) else record
                event = record_to_event(r)
                payload = self._validate(event)
                try:
                    self._insert_and_project(event, payload, int(r["seq"]))
                except AirException:
                    raise
                except Exception as exc:
                    raise _wrap(event, exc) from exc
                count += 1
        return count

    def salvage(self, records: Iterable[Mapping[str, Any]]) -> tuple[int, list[int]]:
        """``replay`` of a damaged log: a row that cannot be read, validated or projected is
        left out (each event in a savepoint of the one transaction), the rest is kept.

        Returns:
            How many events were replayed, and the ``seq`` of each one left out.
        """
        count, skipped = 0, []
        with self.db.transaction() as conn:
            for r in records:
                conn.execute("SAVEPOINT salvage")
                try:
                    event = record_to_event(r)
                    self._insert_and_project(event, self._validate(event), int(r["seq"]))
                except (AirException, ValueError, TypeError, KeyError, sqlite3.Error):
                    conn.execute("ROLLBACK TO salvage")
                    skipped.append(int(r["seq"]))
                else:
                    count += 1
                conn.execute("RELEASE salvage")
        return count, skipped

    def query_records(self, flt: EventFilter | None = None) -> list[dict[str, Any]]:
        """The ``events`` rows matching ``flt`` in ``seq`` order."""
        flt = flt or EventFilter()
        where: list[str] = []
        params: list[Any] = []
        if flt.session_id is not None:
            where.append("session_id = ?")
            params.append(flt.session_id)
        if flt.types:
            where.append(f"type IN ({', '.join('?' for _ in flt.types)})")
            params.extend(flt.types)
        if flt.type_prefix:
            escaped = flt.type_prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            where.append("type LIKE ? ESCAPE '\\'")
            params.append(escaped + "%")
        if flt.task_id is not None:
            where.append("task_id = ?")
            params.append(flt.task_id)
        if flt.agent_id is not None:
            where.append("agent_id = ?")
            params.append(flt.agent_id)
        if flt.since_seq is not None:
            where.append("seq > ?")
            params.append(flt.since_seq)
        sql = "SELECT * FROM events"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY seq"
        if flt.limit is not None:
            sql += " LIMIT ?"
            params.append(flt.limit)
        return [dict(r) for r in self.db.query(sql, params)]

    def query(self, flt: EventFilter | None = None) -> list[RuntimeEvent]:
        """The stored events matching ``flt`` (all fields ANDed), oldest first."""
        return [record_to_event(r) for r in self.query_records(flt)]


def replay_events(
    records: Iterable[Mapping[str, Any] | PersistedEventRecord],
    target_db: DatabaseManager,
    *,
    registry: EventSchemaRegistry | None = None,
) -> int:
    """Rebuild the domain tables of ``target_db`` (migrated, empty) from stored events rows."""
    return EventStore(target_db, registry=registry).replay(records)


def _already_stored(event: RuntimeEvent) -> AirException:
    """The refusal of an event whose id the log already holds."""
    return AirException.of(
        kind="system_error",
        message=f"event {event.id} ({event.type}) is already stored",
        user_action="Give every event a fresh id (air.contracts.new_event).",
        metadata={"event_id": event.id},
    )
