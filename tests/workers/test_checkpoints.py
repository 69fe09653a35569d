"""A worker's ``worker.checkpoint`` becomes a small durable ``agent.checkpointed`` event, paced
by the parent (runner invariant 11, IMPL-CKPT-1): the real WorkerManager against
``tests/workers/scripted_worker.py``, a real subprocess that checkpoints as the test wrote."""

from __future__ import annotations

from typing import Any

from air.events.payloads import PAYLOADS
from air.supervision.checkpoints import (
    MAX_POINTERS,
    MAX_STATE_CHANGES,
    CheckpointPacer,
    checkpoint_event,
)
from tests.workers.conftest import Env
from tests.workers.test_parent_guards import claim, scripted, supervise


def _checkpoint(turn: int, state: str = "running", **data: Any) -> dict[str, Any]:
    return {"checkpoint": {"turn": turn, "state": state, "reason": "turn", "data": data}}


async def test_checkpoints_are_recorded_small_and_paced(env: Env) -> None:
    request = scripted(
        env.request(),
        [
            _checkpoint(1, usage={"tokens": 15, "cost_usd": 0.5}, changed_files=["a.py"]),
            _checkpoint(2, usage={"tokens": 30}),  # the same state, at once: not recorded
            _checkpoint(3, usage={"tokens": 45}),
            _checkpoint(4, "paused", usage={"tokens": "lots"}),  # a new state: recorded
            claim(changed_files=[], verification=[]),
        ],
    )
    await supervise(env, request)
    got = env.events.of_type("agent.checkpointed", request.agent_id)
    assert [(c["turn"], c["state"]) for c in got] == [(1, "running"), (4, "paused")]
    first, second = got
    assert first["usage"] == {
        "turns": 1,
        "tokens": 15,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "cost_usd": 0.5,
    }
    assert first["changed_files"] == ["a.py"]
    assert second["usage"]["tokens"] == 0
    assert second["usage"]["cost_usd"] is None
    [started] = env.events.of_type("agent.started", request.agent_id)
    assert first["pid"] == started["pid"]
    assert first["pid_start_time"] == started["pid_start_time"]
    model = PAYLOADS[("agent.checkpointed", 1)]
    for payload in got:
        model.model_validate(payload)


def test_the_pacer_records_a_state_change_at_once_and_the_same_state_once_per_period() -> None:
    pacer = CheckpointPacer(every_s=10.0)
    assert pacer.due(0.0, "running")
    assert not pacer.due(9.9, "running")
    assert pacer.due(10.0, "running")
    assert pacer.due(10.1, "paused")
    assert not pacer.due(10.2, "paused")


def test_a_worker_flipping_its_state_gets_a_few_changes_a_period_recorded() -> None:
    # a state word is the worker's to choose: alternating two of them on every message made
    # every checkpoint a durable event
    pacer = CheckpointPacer(every_s=10.0)
    flips = [pacer.due(i / 1000, "running" if i % 2 else "paused") for i in range(30_000)]
    assert sum(flips) == 3 * MAX_STATE_CHANGES  # of 30,000 over 30 s: a window's allowance each
    assert flips[:MAX_STATE_CHANGES] == [True] * MAX_STATE_CHANGES  # a change counts at once
    assert not pacer.due(29.9995, "stopping")  # past the allowance, a change waits its period
    assert pacer.due(40.0, "stopping")


def test_a_checkpoint_carries_pointers_not_the_transcript() -> None:
    files = [f"src/f{i}.py" for i in range(MAX_POINTERS + 10)] + ["x" * 600, 7]
    payload = {
        "turn": 3,
        "state": "running",
        "data": {"changed_files": files, "messages": ["a long transcript"] * 100},
    }
    event = checkpoint_event(CheckpointPacer(), 0.0, payload, attempt_index=2, identity=None)
    assert event is not None
    assert event["changed_files"] == files[:MAX_POINTERS]
    assert "messages" not in str(event)
    assert event["usage"]["turns"] == 3
    assert event["attempt_index"] == 2


def test_a_checkpoints_figures_are_counts_the_store_holds() -> None:
    """A worker's checkpoint said ``"turn": 10**30`` or ``"cost_usd": Infinity`` (Python's json
    reads it): the turn did not fit the agents table's INTEGER, the cost failed the payload's
    finite floats (IMPL-NUM-1), and the parent's read loop ended on the store's error. Figures
    that are no counts are recorded as 0 (a cost as unknown)."""
    model = PAYLOADS[("agent.checkpointed", 1)]
    for turn, tokens, cost in (
        (10**30, 10**30, float("inf")),
        (-1, -5, float("nan")),
        (True, "7", -1.0),
    ):
        data = {"usage": {"tokens": tokens, "cost_usd": cost}}
        payload = {"turn": turn, "state": "running", "data": data}
        event = checkpoint_event(CheckpointPacer(), 0.0, payload, attempt_index=1, identity=None)
        assert event is not None
        assert (event["turn"], event["usage"]["tokens"], event["usage"]["cost_usd"]) == (0, 0, None)
        model.model_validate({**event, "agent_id": "agt_x", "task_id": "t"})
    kept = {"turn": 2**53, "state": "running", "data": {"usage": {"tokens": 5, "cost_usd": 0.25}}}
    event = checkpoint_event(CheckpointPacer(), 0.0, kept, attempt_index=1, identity=None)
    assert event is not None
    assert (event["turn"], event["usage"]["tokens"], event["usage"]["cost_usd"]) == (2**53, 5, 0.25)
