"""The fold (air.events.fold): replay == the state kept live == the SQL projection's rows."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from air.contracts.error import AirException, make_air_error
from air.contracts.event import RuntimeEvent
from air.events import projection_tasks
from air.events.fold import FoldCursor, apply, replay
from air.events.fold_state import SessionState
from air.events.store import EventStore
from air.events.transitions import TASK_ENDS, TASK_FROM
from air.nursery.ledger import SessionLedger
from air.store.db import DatabaseManager
from air.store.session_db import open_session_database
from air.testing.sequences import SessionSimulator, drawn_sequence, random_sequence


def _rows(db: DatabaseManager, sql: str) -> set[tuple[Any, ...]]:
    return {tuple(r) for r in db.conn.execute(sql)}


def _sql_facts(db: DatabaseManager) -> dict[str, set[tuple[Any, ...]]]:
    """The columns of the projection tables that the fold also keeps."""
    return {
        "sessions": _rows(db, "SELECT id, status, mode FROM sessions"),
        "tasks": _rows(
            db,
            "SELECT id, status, attempt_count, agent_id, workspace_id, blocked_reason, "
            "parent_task_id, origin_message_id, type FROM tasks",
        ),
        "attempts": _rows(
            db, "SELECT task_id, attempt_index, status, agent_id, workspace_id FROM task_attempts"
        ),
        "dependencies": _rows(
            db,
            "SELECT task_id, depends_on_task_id, dependency_type, source, reason "
            "FROM task_dependencies",
        ),
        "agents": _rows(db, "SELECT id, status, task_id, pid, exit_code FROM agents"),
        "workspaces": _rows(
            db,
            "SELECT workspace_id, status, strategy, path, merge_commit, kept_branch "
            "FROM workspaces",
        ),
        "tool_runs": _rows(db, "SELECT id, status, tool_name, task_id, agent_id FROM tool_runs"),
        "command_runs": _rows(
            db,
            "SELECT id, exit_code, completed_at IS NOT NULL, task_id, agent_id, tool_run_id "
            "FROM command_runs",
        ),
    }


def _fold_facts(state: SessionState) -> dict[str, set[tuple[Any, ...]]]:
    s = state.session
    return {
        "sessions": set() if s is None else {(s.session_id, s.status, s.mode)},
        "tasks": {
            (
                t.task_id,
                t.status.value,
                t.attempt_count,
                t.agent_id,
                t.workspace_id,
                t.blocked_reason,
                t.parent_task_id,
                t.origin_message_id,
                t.spec.type.value,
            )
            for t in state.tasks.values()
        },
        "attempts": {
            (t.task_id, a.attempt_index, a.status, a.agent_id, a.workspace_id)
            for t in state.tasks.values()
            for a in t.attempts
        },
        "dependencies": {
            (d.task_id, d.depends_on_task_id, d.dependency_type.value, d.source.value, d.reason)
            for edges in state.dependencies.values()
            for d in edges
        },
        "agents": {
            (a.agent_id, a.status, a.task_id, a.pid, a.exit_code) for a in state.agents.values()
        },
        "workspaces": {
            (w.workspace_id, w.status, w.strategy, w.path, w.merge_commit, w.kept_branch)
            for w in state.workspaces.values()
        },
        "tool_runs": {
            (r.tool_run_id, r.status, r.tool_name, r.task_id, r.agent_id)
            for r in state.tool_runs.values()
        },
        "command_runs": {
            (r.command_run_id, r.exit_code, int(r.ended), r.task_id, r.agent_id, r.tool_run_id)
            for r in state.command_runs.values()
        },
    }


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data(), length=st.integers(min_value=1, max_value=80))
def test_live_fold_equals_replay_equals_the_sql_projection(
    data: st.DataObject, length: int
) -> None:
    events = drawn_sequence(data, "ses_F", "prj_F", length)

    with tempfile.TemporaryDirectory() as tmp:
        db = open_session_database(Path(tmp) / "s.db")
        try:
            store = EventStore(db)
            ledger = SessionLedger(store, session_id="ses_F", project_id="prj_F")
            live: list[SessionState] = []
            for event in events:
                store.append(event)
                if data.draw(st.integers(0, 3)) == 0:
                    live.append(ledger.state())  # the live fold catches up incrementally
            final_live = ledger.state()
            replayed = replay(store.query())
            assert final_live == replayed
            assert _fold_facts(replayed) == _sql_facts(db)
            assert replayed.applied == len(events)
            # every state seen on the way is still the state it was (persistent maps)
            for seen in live:
                assert seen == replay(store.query()[: seen.applied])
        finally:
            db.close()


def test_a_long_session_folds_to_the_projection(tmp_path: Path) -> None:
    events = random_sequence("ses_L", "prj_L", 800, seed=11)
    db = open_session_database(tmp_path / "s.db")
    try:
        EventStore(db).append_many(events)
        state = replay(events)
        facts = _fold_facts(state)
        assert facts == _sql_facts(db)
        assert len(facts["tasks"]) > 20  # not vacuous
        assert len(facts["attempts"]) > 10
        # the status counts are kept per event and agree with the tasks
        for status in ("pending", "running", "completed", "failed", "blocked", "cancelled"):
            expected = sum(
                1 for t in state.tasks.values() if not t.compaction and t.status.value == status
            )
            assert state.count(status) == expected
    finally:
        db.close()


_ERROR = make_air_error(kind="task_failed", message="x").model_dump(mode="json")


def _session_with_task() -> tuple[SessionSimulator, list[RuntimeEvent]]:
    sim = SessionSimulator("ses_X", "prj_X")
    created = sim.event(
        "task.created",
        {"task_spec": {"id": "t1", "type": "execute", "title": "t", "description": "d"}},
    )
    return sim, [sim.start(), created]


@pytest.mark.parametrize(
    ("event_type", "payload"),
    [
        ("task.completed", {"task_id": "t1"}),
        ("task.interrupted", {"task_id": "t1"}),
        (
            "task.started",
            {"task_id": "t1", "agent_id": "a", "agent_type": "executor", "attempt_index": 2},
        ),
        ("task.failed", {"task_id": "nope", "error": _ERROR}),
        ("agent.completed", {"agent_id": "ghost"}),
        ("workspace.cleaned", {"workspace_id": "ghost"}),
    ],
)
def test_an_event_that_does_not_fit_is_refused_by_fold_and_projection_alike(
    tmp_path: Path, event_type: str, payload: dict[str, Any]
) -> None:
    sim, events = _session_with_task()
    state = replay(events)
    bad = sim.event(event_type, payload)
    with pytest.raises(AirException) as folded:
        apply(state, bad)
    assert folded.value.kind.value == "system_error"
    db = open_session_database(tmp_path / "s.db")
    try:
        store = EventStore(db)
        store.append_many(events)
        with pytest.raises(AirException) as projected:
            store.append(bad)
        assert projected.value.kind.value == "system_error"
    finally:
        db.close()


def test_the_projection_enforces_the_folds_transition_table() -> None:
    # the projection reads its allowed statuses from the fold's table, so there is one rule
    assert vars(projection_tasks)["TASK_FROM"] is TASK_FROM
    assert TASK_FROM["task.completed"] == ("running",)


def test_apply_is_pure_and_shares_what_it_did_not_touch() -> None:
    sim, events = _session_with_task()
    before = replay(events)
    start = sim.event(
        "task.started",
        {"task_id": "t1", "agent_id": "agt_1", "agent_type": "executor", "attempt_index": 1},
    )
    after = apply(before, start)
    assert before.tasks["t1"].status.value == "pending"
    assert after.tasks["t1"].status.value == "running"
    assert after.tasks["t1"].attempts[0].agent_id == "agt_1"
    assert before.count("pending") == 1
    assert after.count("pending") == 0
    assert after.count("running") == 1
    assert after.dependencies is before.dependencies  # untouched maps are shared, not copied


def test_a_fold_cursor_fed_event_by_event_equals_replay() -> None:
    events = random_sequence("ses_C", "prj_C", 300, seed=3)
    cursor = FoldCursor()
    for event in events:
        cursor.feed(event)
    assert cursor.state == replay(events)


def test_an_agents_evidence_events_are_indexed_by_agent() -> None:
    events = random_sequence("ses_E", "prj_E", 600, seed=5)
    state = replay(events)
    running: dict[str, str] = {}  # per task: the agent of its current attempt
    ends_of: dict[str, list[int]] = {}
    for i, e in enumerate(events):
        if e.type == "task.started":
            running[e.payload["task_id"]] = e.payload["agent_id"]
        if e.type in TASK_ENDS:
            for a in {e.payload.get("agent_id"), running.get(e.payload["task_id"])} - {None}:
                ends_of.setdefault(str(a), []).append(i)
    for agent_id, mine in state.agent_events.items():
        # kept from the last end of the agent's attempt on (the pipeline read the rest before
        # it): an end naming the agent, or its task's end naming none
        ends = ends_of.get(agent_id, [])
        since = events[ends[-1] + 1 :] if ends else events
        runs = {
            e.payload["command_run_id"]
            for e in events
            if e.type == "command.started" and e.payload.get("agent_id") == agent_id
        }
        expected = [
            e
            for e in since
            if (
                e.type in ("tool.started", "command.started", "artifact.created")
                and e.payload.get("agent_id") == agent_id
            )
            or (
                e.type in ("command.completed", "command.failed")
                and e.payload["command_run_id"] in runs
            )
            or (e.type == "diagnostic.created" and e.payload.get("command_run_id") in runs)
        ]
        assert [e.id for e in mine if e.type != "evidence.created"] == [e.id for e in expected]
    assert state.agent_events  # not vacuous
