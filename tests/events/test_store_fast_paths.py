"""The event store's one-statement projection paths and the ingestor's single validation
(IMPL-PERF-3) keep every check they replace: a real session database each."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from air.contracts.error import AirException, ErrorKind
from air.contracts.event import EventSource, RuntimeEvent, new_event
from air.events.bus import EventBus
from air.events.ingestor import EventIngestor
from air.events.payloads import PAYLOADS, PERSISTENCE
from air.events.registry import EventSchemaRegistry, default_registry
from air.events.store import EventStore
from air.store.repositories import SessionStore
from air.store.session_db import open_session_database

SRC = EventSource(kind="scheduler", id="sched")


def ev(type_: str, **payload: object) -> RuntimeEvent:
    return new_event(type_, dict(payload), session_id="ses_F", source=SRC, route=["scheduler"])


def _store(tmp: Path, registry: EventSchemaRegistry | None = None) -> EventStore:
    store = EventStore(open_session_database(tmp / "s.db"), bus=EventBus(), registry=registry)
    store.append(ev("session.created", session_id="ses_F", project_id="prj"))
    return store


def _fails(store: EventStore, event: RuntimeEvent, words: str) -> None:
    before = store.store.events.count()
    with pytest.raises(AirException) as info:
        store.append(event)
    assert info.value.kind is ErrorKind.SYSTEM_ERROR
    assert words in info.value.error.message
    assert store.store.events.count() == before, "a refused event left its row"


def test_a_second_running_agent_started_is_refused_and_leaves_nothing(tmp_path: Path) -> None:
    store = _store(tmp_path)
    base = {"agent_id": "a", "agent_type": "executor", "task_id": "t"}
    store.append(ev("agent.started", **base, status="running", pid=5))
    _fails(store, ev("agent.started", **base, status="running", pid=6), "already exists as running")
    _fails(store, ev("agent.started", **base, status="starting"), "already exists as running")
    row = SessionStore(store.db).agents.get("a")
    assert row is not None
    assert (row["status"], row["pid"]) == ("running", 5)


def test_a_command_ends_once_and_only_if_it_started(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.append(ev("command.started", command_run_id="c1", command="make", cwd="/", task_id="t"))
    store.append(ev("command.completed", command_run_id="c1", exit_code=0, duration_ms=3))
    _fails(store, ev("command.completed", command_run_id="c1", exit_code=1), "c1 already ended")
    err = {"error_id": "e", "kind": "cancelled", "message": "x", "semantic_signature": "c:1"}
    _fails(store, ev("command.failed", command_run_id="c1", error=err), "c1 already ended")
    _fails(store, ev("command.completed", command_run_id="c2", exit_code=0), "c2 does not exist")
    row = SessionStore(store.db).command_runs.get("c1")
    assert row is not None
    assert (row["exit_code"], row["duration_ms"]) == (0, 3)


def test_an_attempt_ends_once_and_only_if_it_exists(tmp_path: Path) -> None:
    store = _store(tmp_path)
    spec = {"id": "t", "type": "execute", "title": "t", "description": "d"}
    store.append(ev("task.created", task_spec=spec))
    started = {"task_id": "t", "agent_id": "a", "agent_type": "executor", "attempt_index": 1}
    store.append(ev("task.started", **started))
    _fails(
        store,
        ev("task.completed", task_id="t", attempt_index=2),
        "attempt 2 of task t does not exist",
    )
    store.append(ev("task.completed", task_id="t", attempt_index=1))
    rows = SessionStore(store.db).task_attempts.list_by_task("t")
    assert [(r["attempt_index"], r["status"]) for r in rows] == [(1, "completed")]
    ended = rows[0]["ended_at"]
    assert ended is not None


class _Counting(EventSchemaRegistry):
    def __init__(self) -> None:
        super().__init__()
        self.parsed: list[str] = []

    def parse(self, event: RuntimeEvent) -> BaseModel:
        self.parsed.append(event.type)
        return super().parse(event)


def _counting() -> _Counting:
    registry = _Counting()
    for (event_type, version), model in PAYLOADS.items():
        registry.register(event_type, version, model, PERSISTENCE[event_type])
    return registry


def test_the_ingestor_validates_a_durable_event_once(tmp_path: Path) -> None:
    registry = _counting()
    store = _store(tmp_path, registry)
    registry.parsed.clear()
    ingestor = EventIngestor(store, EventBus())
    seq = ingestor.ingest_sync(ev("user.message.created", message_id="m", content=[]))
    assert seq is not None
    assert registry.parsed == ["user.message.created"]
    assert SessionStore(store.db).messages.get("m") is not None


class _Anything(BaseModel):
    model_config = ConfigDict(extra="allow")


def test_a_payload_parsed_by_another_registry_is_validated_again(tmp_path: Path) -> None:
    """An ingestor whose own registry is lenient cannot get an invalid payload stored."""
    lenient = EventSchemaRegistry()
    for (event_type, version), model in PAYLOADS.items():
        loose: type[BaseModel] = _Anything if event_type == "task.started" else model
        lenient.register(event_type, version, loose, PERSISTENCE[event_type])
    store = _store(tmp_path)
    assert store.registry is default_registry()
    ingestor = EventIngestor(store, EventBus(), registry=lenient)
    bad: dict[str, Any] = {"task_id": "t"}  # no agent_id, agent_type, attempt_index
    with pytest.raises(AirException) as info:
        ingestor.ingest_sync(ev("task.started", **bad))
    assert info.value.kind is ErrorKind.VALIDATION_ERROR
    assert [e.type for e in store.query()] == ["session.created"]


def test_a_payload_of_the_wrong_model_is_validated_again(tmp_path: Path) -> None:
    """``append_parsed`` trusts a payload only when it is the registered model of the type."""
    store = _store(tmp_path)
    wrong = _Anything(task_id="t")
    with pytest.raises(AirException) as info:
        store.append_parsed(ev("task.started", task_id="t"), wrong)
    assert info.value.kind is ErrorKind.VALIDATION_ERROR
    assert [e.type for e in store.query()] == ["session.created"]


def test_append_parsed_refuses_an_ephemeral_event(tmp_path: Path) -> None:
    store = _store(tmp_path)
    event = ev("task.progress", task_id="t", message="1%")
    payload = store.registry.parse(event)
    with pytest.raises(AirException) as info:
        store.append_parsed(event, payload)
    assert "ephemeral" in info.value.error.message
    assert [e.type for e in store.query()] == ["session.created"]
