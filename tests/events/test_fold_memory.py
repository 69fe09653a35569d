"""The fold keeps an agent's evidence events only until its task's attempt ends (issue 28
item 7): the outcome pipeline reads them before the task's end event, nothing after, so a long
session does not hold every agent's events."""

from __future__ import annotations

from air.events.fold import FoldCursor
from air.events.transitions import TASK_ENDS
from air.testing.sequences import random_sequence, realistic_sequence


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
