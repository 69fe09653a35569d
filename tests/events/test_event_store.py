"""EventStore, EventIngestor and the registry against a real session database."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio
import trio.lowlevel

from air.contracts.error import AirException, ErrorKind
from air.contracts.event import EventFilter, EventPersistence, EventSource, RuntimeEvent, new_event
from air.events.bus import EventBus
from air.events.ingestor import EventIngestor
from air.events.payloads import DURABLE_TYPES, EPHEMERAL_TYPES, PAYLOADS, PERSISTENCE
from air.events.projection import APPEND_ONLY_TYPES, PROJECTED_TYPES
from air.events.registry import EventSchemaRegistry
from air.events.store import EventStore
from air.store.repositories import SessionStore
from air.store.session_db import open_session_database
from air.testing.sequences import random_sequence

SRC = EventSource(kind="scheduler", id="sched")


def ev(type_: str, **payload: object) -> RuntimeEvent:
    return new_event(type_, dict(payload), session_id="ses_E", source=SRC, route=["scheduler"])


def _session(tmp: Path) -> tuple[EventStore, EventBus]:
    bus = EventBus()
    store = EventStore(open_session_database(tmp / "s.db"), bus=bus)
    store.append(ev("session.created", session_id="ses_E", project_id="prj"))
    return store, bus


def test_registry_holds_every_baseline_event_type() -> None:
    assert len(EPHEMERAL_TYPES) == 7
    assert {"agent.heartbeat", "hud.frame.rendered", "command.stderr.delta"} <= EPHEMERAL_TYPES
    assert {"workspace.abandoned", "memory.promoted", "debug.record.created"} <= DURABLE_TYPES
    assert PROJECTED_TYPES | APPEND_ONLY_TYPES == DURABLE_TYPES
    registry = EventSchemaRegistry.seeded()
    assert registry.list() == sorted(PAYLOADS)
    assert registry.persistence("task.progress") is EventPersistence.EPHEMERAL
    assert registry.validate(
        "task.started",
        1,
        {"task_id": "t", "agent_id": "a", "agent_type": "executor", "attempt_index": 1},
    )
    assert not registry.validate("task.started", 1, {"task_id": "t"})
    assert not registry.validate("task.started", 2, {})
    schema = registry.get_schema("memory.promoted")
    assert schema is not None
    assert set(schema["properties"]) == {"candidate_id", "target_ref", "promoted_by", "summary"}
    assert all(PERSISTENCE[t] is EventPersistence.DURABLE for t in DURABLE_TYPES)
    with pytest.raises(AirException) as info:
        registry.register("task.created", 1, PAYLOADS[("task.created", 1)])
    assert info.value.kind is ErrorKind.SYSTEM_ERROR


def test_append_stores_the_envelope_and_projects_in_one_transaction(tmp_path: Path) -> None:
    store, bus = _session(tmp_path)
    sub = bus.subscribe(None, lambda e: None)
    spec = {
        "id": "task_1",
        "type": "execute",
        "title": "T",
        "description": "D",
        "dependencies": [{"depends_on_task_id": "task_0", "dependency_type": "soft"}],
    }
    seq = store.append(ev("task.created", task_spec=spec))
    record = store.query_records(EventFilter(types=["task.created"]))[0]
    assert record["seq"] == seq
    assert record["task_id"] == "task_1"
    assert record["route_text"] == "scheduler"
    assert json.loads(record["route_json"]) == ["scheduler"]
    assert record["source_kind"] == "scheduler"
    assert record["source_id"] == "sched"
    repos = SessionStore(store.db)
    task = repos.tasks.get("task_1")
    assert task is not None
    assert task["status"] == "pending"
    assert json.loads(task["spec_json"])["title"] == "T"
    deps = repos.task_dependencies.list_for_task("task_1")
    assert [(d["depends_on_task_id"], d["dependency_type"], d["source"]) for d in deps] == [
        ("task_0", "soft", "scheduler")
    ]
    assert repos.task_dependencies.list_dependents("task_0")[0]["task_id"] == "task_1"
    assert [e.type for e in sub.queue] == ["task.created"]  # published after commit


def test_query_filters_and_round_trips_events(tmp_path: Path) -> None:
    store, _ = _session(tmp_path)
    events = random_sequence("ses_E", "prj", 80, seed=11)[1:]
    store.append_many(events)
    everything = store.query()
    assert [e.id for e in everything[1:]] == [e.id for e in events]
    # the envelope round-trips exactly; the payload is stored normalised (defaults filled in)
    assert everything[5].model_copy(update={"payload": {}}) == events[4].model_copy(
        update={"payload": {}}
    )
    assert store.registry.parse(everything[5]) == store.registry.parse(events[4])
    tasks = store.query(EventFilter(type_prefix="task."))
    assert tasks
    assert all(e.type.startswith("task.") for e in tasks)
    some_task = tasks[0].payload.get("task_id") or tasks[0].payload["task_spec"]["id"]
    by_task = store.query(EventFilter(task_id=some_task))
    assert by_task
    assert all(
        e.payload.get("task_id", e.payload.get("task_spec", {}).get("id")) == some_task
        for e in by_task
    )
    recs = store.query_records()
    later = store.query(EventFilter(since_seq=recs[10]["seq"], limit=5))
    assert [e.id for e in later] == [r["id"] for r in recs[11:16]]
    assert store.query(EventFilter(type_prefix="task_")) == []  # LIKE wildcards are escaped


def test_task_lifecycle_with_retry_attempts(tmp_path: Path) -> None:
    store, _ = _session(tmp_path)
    repos = SessionStore(store.db)
    spec = {"id": "t", "type": "execute", "title": "T", "description": "D"}
    store.append(ev("task.created", task_spec=spec))
    assert [r["id"] for r in repos.tasks.list_runnable_candidates()] == ["t"]
    assert repos.task_attempts.next_attempt_index("t") == 1
    store.append(
        ev("task.started", task_id="t", agent_id="a1", agent_type="executor", attempt_index=1)
    )
    err = {
        "error_id": "e",
        "kind": "verification_failed",
        "message": "tests failed",
        "semantic_signature": "verification_failed:abc",
    }
    store.append(ev("task.failed", task_id="t", agent_id="a1", error=err))
    assert repos.task_attempts.next_attempt_index("t") == 2
    with pytest.raises(AirException) as info:  # wrong attempt index
        store.append(
            ev("task.started", task_id="t", agent_id="a2", agent_type="executor", attempt_index=1)
        )
    assert info.value.kind is ErrorKind.SYSTEM_ERROR
    store.append(
        ev("task.started", task_id="t", agent_id="a2", agent_type="executor", attempt_index=2)
    )
    store.append(ev("task.completed", task_id="t", agent_id="a2"))
    attempts = repos.task_attempts.list_by_task("t")
    assert [(a["attempt_index"], a["status"], a["failure_kind"]) for a in attempts] == [
        (1, "failed", "verification_failed"),
        (2, "completed", None),
    ]
    assert attempts[0]["failure_signature"] == "verification_failed:abc"
    task = repos.tasks.get("t")
    assert task is not None
    assert task["status"] == "completed"
    assert task["attempt_count"] == 2
    assert repos.tasks.list_by_status("completed")[0]["id"] == "t"
    with pytest.raises(AirException):  # completed is terminal
        store.append(
            ev("task.started", task_id="t", agent_id="a3", agent_type="executor", attempt_index=3)
        )


def test_an_end_without_attempt_index_ends_only_a_running_latest_attempt(tmp_path: Path) -> None:
    """``task.cancelled`` of an interrupted task (no attempt index) leaves the interrupted
    attempt as it ended; an end names the latest attempt, never an earlier one."""
    store, _ = _session(tmp_path)
    repos = SessionStore(store.db)
    spec = {"id": "t", "type": "execute", "title": "T", "description": "D"}
    store.append(ev("task.created", task_spec=spec))
    started = {"task_id": "t", "agent_type": "executor"}
    store.append(ev("task.started", agent_id="a1", attempt_index=1, **started))
    store.append(ev("task.interrupted", task_id="t", reason="parent killed"))
    store.append(ev("task.cancelled", task_id="t", reason="user cancelled"))
    attempts = repos.task_attempts.list_by_task("t")
    assert [(a["attempt_index"], a["status"]) for a in attempts] == [(1, "interrupted")]
    task = repos.tasks.get("t")
    assert task is not None
    assert task["status"] == "cancelled"


def test_agent_started_twice_moves_starting_to_running_only(tmp_path: Path) -> None:
    store, _ = _session(tmp_path)
    repos = SessionStore(store.db)
    base = {"agent_id": "a", "agent_type": "reviewer"}
    store.append(ev("agent.started", **base, status="starting"))
    assert [a["id"] for a in repos.agents.list_active()] == ["a"]
    store.append(ev("agent.started", **base, status="running", pid=77))
    row = repos.agents.get("a")
    assert row is not None
    assert (row["status"], row["pid"]) == ("running", 77)
    with pytest.raises(AirException):
        store.append(ev("agent.started", **base, status="running"))
    assert repos.agents.update_heartbeat("a", at="2026-01-01T00:00:00Z", state="x", turn=3) == 1
    store.append(
        ev(
            "agent.lost",
            agent_id="a",
            error={
                "error_id": "e",
                "kind": "worker_stalled",
                "message": "no heartbeat",
                "semantic_signature": "worker_stalled:1",
            },
        )
    )
    assert repos.agents.list_active() == []


def test_command_status_is_derived(tmp_path: Path) -> None:
    store, _ = _session(tmp_path)
    repos = SessionStore(store.db)
    for n in range(4):
        store.append(
            ev("command.started", command_run_id=f"c{n}", command="make", cwd="/", task_id="t")
        )
    err = {"error_id": "e", "kind": "cancelled", "message": "stop", "semantic_signature": "c:1"}
    store.append(ev("command.completed", command_run_id="c1", exit_code=0))
    store.append(ev("command.completed", command_run_id="c2", exit_code=1))
    store.append(ev("command.failed", command_run_id="c3", error=err, cancelled=True))
    statuses = [r["status"] for r in repos.command_runs.list_by_task("t")]
    assert statuses == ["running", "ok", "error", "cancelled"]
    store.append(ev("command.started", command_run_id="c9", command="x", cwd="/"))
    store.append(ev("command.failed", command_run_id="c9", error=err))
    assert repos.command_runs.status("c9") == "unknown"


async def test_heartbeats_fold_into_the_agent_row_without_being_stored(tmp_path: Path) -> None:
    store, bus = _session(tmp_path)
    ingestor = EventIngestor(store, bus)
    await ingestor.ingest(
        ev("agent.started", agent_id="a", agent_type="executor", status="running", task_id="t")
    )
    beat = ev("agent.heartbeat", agent_id="a", task_id="t", state="tool", turn=4, tokens=900)
    await ingestor.ingest(beat)
    row = SessionStore(store.db).agents.get("a")
    assert row is not None
    assert (row["last_heartbeat_at"], row["heartbeat_turn"], row["heartbeat_tokens"]) == (
        beat.timestamp,
        4,
        900,
    )
    assert "agent.heartbeat" not in [e.type for e in store.query()]


async def test_ingestor_routes_by_policy(tmp_path: Path) -> None:
    store, bus = _session(tmp_path)
    ingestor = EventIngestor(store, bus)
    got: list[str] = []
    async with bus.serving():
        bus.subscribe(None, lambda e: got.append(e.type))
        seq = await ingestor.ingest(ev("user.message.created", message_id="m", content=[]))
        assert seq is not None
        assert await ingestor.ingest(ev("task.progress", task_id="t", message="50%")) is None
        await ingestor.ingest_ephemeral(ev("hud.frame.rendered", frame=1))
        with pytest.raises(AirException) as info:
            await ingestor.ingest_ephemeral(ev("user.message.created", message_id="m2", content=[]))
        assert info.value.kind is ErrorKind.SYSTEM_ERROR
        with pytest.raises(AirException) as info:
            await ingestor.ingest(ev("task.teleported"))
        assert info.value.kind is ErrorKind.SYSTEM_ERROR
        await bus.drain()
        await trio.lowlevel.checkpoint()
    assert got == ["user.message.created", "task.progress", "hud.frame.rendered"]
    stored = [e.type for e in store.query()]
    assert stored == ["session.created", "user.message.created"]


def test_dependency_added_after_creation_projects_one_edge(tmp_path: Path) -> None:
    store, _bus = _session(tmp_path)
    for task_id in ("t_a", "t_b"):
        store.append(
            ev(
                "task.created",
                task_spec={"id": task_id, "type": "execute", "title": task_id, "description": "d"},
            )
        )
    store.append(
        ev(
            "task.dependency.added",
            task_id="t_b",
            depends_on_task_id="t_a",
            dependency_type="conflict",
            reason="overlapping write areas",
            source="scheduler",
        )
    )
    rows = SessionStore(store.db).task_dependencies.list_for_task("t_b")
    assert [(r["depends_on_task_id"], r["dependency_type"]) for r in rows] == [("t_a", "conflict")]
    before = len(store.query())
    with pytest.raises(AirException) as info:
        store.append(ev("task.dependency.added", task_id="t_b", depends_on_task_id="t_nope"))
    assert info.value.kind is ErrorKind.SYSTEM_ERROR
    assert len(store.query()) == before
