"""What a retried attempt carries (IMPL-CKPT-1), over a real session DB: the last checkpoint
of the attempt just before, only when that attempt ended without a worker result."""

from __future__ import annotations

from typing import Any, cast

from air.contracts.error import make_air_error
from air.contracts.task import TaskSpec
from air.contracts.worker_result import WorkerResult
from air.nursery.carried import carried_checkpoint
from tests.nursery.conftest import SessionDB


def _checkpoint(agent: str, attempt: int, turn: int) -> dict[str, Any]:
    usage = {"turns": turn, "tokens": 15 * turn}
    return {
        "agent_id": agent,
        "task_id": "t",
        "attempt_index": attempt,
        "turn": turn,
        "state": "running",
        "usage": usage,
    }


async def _attempt(sdb: SessionDB, agent: str, attempt: int) -> None:
    await sdb.ledger.record(
        "task.started",
        {"task_id": "t", "agent_id": agent, "agent_type": "reviewer", "attempt_index": attempt},
    )
    for turn in (1, 2):
        await sdb.ledger.record("agent.checkpointed", _checkpoint(agent, attempt, turn))


async def test_a_crashed_attempt_hands_its_last_checkpoint_to_the_next(
    session_db: SessionDB,
) -> None:
    spec = TaskSpec(id="t", type="review", title="t", description="t").model_dump(mode="json")
    await session_db.ledger.record("task.created", {"task_spec": spec})
    assert carried_checkpoint(session_db.ledger, "t", 1) is None
    await _attempt(session_db, "agt_1", 1)
    await session_db.ledger.record(
        "task.interrupted", {"task_id": "t", "agent_id": "agt_1", "attempt_index": 1}
    )
    carried = carried_checkpoint(session_db.ledger, "t", 2)
    assert carried is not None
    assert (carried["agent_id"], carried["turn"], carried["usage"]["tokens"]) == ("agt_1", 2, 30)
    assert carried_checkpoint(session_db.ledger, "t", 3) is None  # only the attempt before
    assert carried_checkpoint(session_db.ledger, "other", 2) is None


async def test_an_attempt_that_returned_a_result_carries_nothing(session_db: SessionDB) -> None:
    spec = TaskSpec(id="t", type="review", title="t", description="t").model_dump(mode="json")
    await session_db.ledger.record("task.created", {"task_spec": spec})
    await _attempt(session_db, "agt_1", 1)
    result = WorkerResult(
        task_id="t",
        agent_id="agt_1",
        agent_type="reviewer",
        status="failed",
        summary="the model call failed",
        usage={"turns": 3, "tokens": 45},
    )
    await session_db.ledger.record(
        "task.failed",
        {
            "task_id": "t",
            "agent_id": "agt_1",
            "attempt_index": 1,
            "error": make_air_error(kind="provider_error", message="x").model_dump(mode="json"),
            "worker_result": result.model_dump(mode="json"),
        },
    )
    # its usage is in its end event already: carrying it would count it twice
    assert carried_checkpoint(session_db.ledger, "t", 2) is None


class _Counted:
    """The session's ledger, keeping what ``history_of`` returned."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.read: list[Any] = []

    def history_of(self, *types: str, task_id: str | None = None) -> list[Any]:
        events: list[Any] = self.inner.history_of(*types, task_id=task_id)
        self.read += events
        return events


async def test_a_retry_reads_only_its_own_tasks_checkpoints_and_ends(session_db: SessionDB) -> None:
    """The look-up goes through the events' task index: another task's checkpoints and ends,
    however many, are not read (a long session's retry costs what its task recorded)."""
    for task in ("u", "t"):
        spec = TaskSpec(id=task, type="review", title=task, description=task)
        await session_db.ledger.record("task.created", {"task_spec": spec.model_dump(mode="json")})
    other = {"agent_id": "agt_u", "agent_type": "reviewer", "task_id": "u"}
    await session_db.ledger.record("task.started", {**other, "attempt_index": 1})
    for turn in range(1, 6):
        checkpoint = {**_checkpoint("agt_u", 1, turn), "task_id": "u"}
        await session_db.ledger.record("agent.checkpointed", checkpoint)
    await session_db.ledger.record(
        "task.interrupted", {"task_id": "u", "agent_id": "agt_u", "attempt_index": 1}
    )
    await _attempt(session_db, "agt_1", 1)
    await session_db.ledger.record(
        "task.interrupted", {"task_id": "t", "agent_id": "agt_1", "attempt_index": 1}
    )
    counted = _Counted(session_db.ledger)
    carried = carried_checkpoint(cast(Any, counted), "t", 2)
    assert carried is not None
    assert carried["agent_id"] == "agt_1"
    assert counted.read
    assert {e.payload["task_id"] for e in counted.read} == {"t"}
