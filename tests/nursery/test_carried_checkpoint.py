"""What a retried attempt carries (IMPL-CKPT-1), over a real session DB: the last checkpoint
of the attempt just before, only when that attempt ended without a worker result."""

from __future__ import annotations

from typing import Any

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
