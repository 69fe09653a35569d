"""The fold keeps an agent's evidence events only until its task's attempt ends (issue 28
item 7): the outcome pipeline reads them before the task's end event, nothing after, so a long
session does not hold every agent's events. The scheduler's fold also drops the tool and command
runs of an ended attempt (IMPL-MEM-1) and shows its readers all else the whole fold does."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from air.contracts.event import RuntimeEvent
from air.contracts.task import TaskStatus
from air.events.fold import FoldCursor, replay
from air.events.fold_snapshot import SCHEDULER_FOLD
from air.events.fold_state import SessionState
from air.events.transitions import TASK_ENDS
from air.nursery.ledger import ledger_view
from air.testing.sequences import drawn_sequence, random_sequence, realistic_sequence


def test_an_agents_evidence_is_dropped_when_its_task_ends() -> None:
    cursor = FoldCursor()
    dropped = 0
    for event in random_sequence("ses_M", "prj_M", 600, seed=5):
        agent_id = event.payload.get("agent_id")
        held = bool(agent_id and cursor.state.events_of_agent(agent_id))
        cursor.feed(event)
        if event.type in TASK_ENDS and agent_id is not None:
            assert cursor.state.events_of_agent(agent_id) == ()
            dropped += held
    assert dropped  # not vacuous: some ended task's agent had evidence up to its end


def test_an_end_that_names_no_agent_drops_the_evidence_of_the_tasks_agent() -> None:
    """IMPL-READ-4: a cancel names no agent; the task's agent of record is dropped too."""
    cursor = FoldCursor()
    dropped = 0
    for event in realistic_sequence("ses_M", "prj_M", 3000, seed=6):
        task = cursor.state.tasks.get(str(event.payload.get("task_id")))
        agent_id = task.agent_id if task is not None else None
        held = bool(agent_id and cursor.state.events_of_agent(agent_id))
        cursor.feed(event)
        if event.type in TASK_ENDS and agent_id is not None:
            assert cursor.state.events_of_agent(agent_id) == ()  # its attempt is over
            dropped += held and event.payload.get("agent_id") != agent_id
    assert dropped  # not vacuous: some ends (a cancel, a retry's) named another agent or none


def _ended_attempt_runs(state: SessionState) -> list[str]:
    """The runs ``state`` holds that ended in an attempt that ended too (IMPL-MEM-1)."""
    tools = [
        r.tool_run_id
        for r in state.tool_runs.values()
        if r.status != "running" and _attempt_ended(state, r.task_id, r.agent_id)
    ]
    commands = [
        r.command_run_id
        for r in state.command_runs.values()
        if r.ended and _attempt_ended(state, r.task_id, r.agent_id)
    ]
    return tools + commands


def _attempt_ended(state: SessionState, task_id: str | None, agent_id: str | None) -> bool:
    task = state.tasks.get(task_id) if task_id is not None else None
    if task is None:
        return False
    return task.status is not TaskStatus.RUNNING or agent_id not in (None, task.agent_id)


def test_the_scheduler_fold_keeps_no_run_of_an_ended_attempt() -> None:
    """IMPL-MEM-1: a run is dropped when its attempt ends (task end, or the run's own end when
    it comes later: after its task's end or during a later attempt); the main agent's are kept."""
    events = realistic_sequence("ses_M", "prj_M", 6000, seed=8)
    cursor = FoldCursor(SCHEDULER_FOLD)
    for i, event in enumerate(events):
        cursor.feed(event)
        if i % 500 == 0:
            assert _ended_attempt_runs(cursor.state) == []
    assert _ended_attempt_runs(cursor.state) == []
    full = replay(events)
    # not vacuous: the whole fold holds many, some ended after their attempt did
    assert len(_ended_attempt_runs(full)) > 100
    assert any(
        r.task_id is None for r in cursor.state.tool_runs.values()
    )  # the main agent's runs stay


def _seen_by_the_scheduler(state: SessionState) -> tuple[object, ...]:
    return (
        state.session,
        state.tasks,
        state.dependencies,
        state.agents,
        state.workspaces,
        state.counts,
        state.applied,
        ledger_view(state),
    )


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data(), length=st.integers(min_value=1, max_value=120))
def test_the_scheduler_fold_shows_its_readers_what_the_whole_fold_does(
    data: st.DataObject, length: int
) -> None:
    """The scheduler, recovery and reports read tasks, agents, workspaces, dependencies and
    counts, and a live attempt's evidence (the outcome pipeline): all equal to the whole fold's
    at every step; its runs are the whole fold's less those of ended attempts."""
    whole, scheduler = FoldCursor(), FoldCursor(SCHEDULER_FOLD)
    for event in drawn_sequence(data, "ses_M", "prj_M", length):
        full, kept = whole.feed(event), scheduler.feed(event)
        assert _seen_by_the_scheduler(kept) == _seen_by_the_scheduler(full)
        for task in full.tasks.values():
            if task.status is TaskStatus.RUNNING and task.agent_id is not None:
                assert kept.events_of_agent(task.agent_id) == full.events_of_agent(task.agent_id)
        dropped = set(_ended_attempt_runs(full))
        assert dict(kept.tool_runs) == {k: v for k, v in full.tool_runs.items() if k not in dropped}
        assert dict(kept.command_runs) == {
            k: v for k, v in full.command_runs.items() if k not in dropped
        }


def test_an_agents_id_is_one_object_in_every_fact_that_names_it() -> None:
    """IMPL-RSS-1: the fold interns the ids it keeps from payloads, so a task's agent id in the
    task, its attempt, the agent's fact and the agents map's key is one string, not one per
    event that carried it (events decoded from stored JSON, as the ledger reads them)."""
    events = [
        RuntimeEvent.model_validate_json(e.model_dump_json())
        for e in random_sequence("ses_01INTERN00000000000000000A", "prj_i", 3000, seed=7)
    ]
    state = replay(events)  # the whole fold keeps the agents of ended tasks
    keys = {key: key for key in state.agents}
    checked = 0
    for task in state.tasks.values():
        if task.agent_id is None or task.agent_id not in state.agents:
            continue
        agent = state.agents[task.agent_id]
        assert task.agent_id is agent.agent_id is keys[task.agent_id]
        assert task.attempts[-1].agent_id is agent.agent_id
        assert agent.task_id is None or agent.task_id == task.task_id
        checked += 1
    assert checked >= 5
