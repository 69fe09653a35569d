"""``air.events.packed`` (IMPL-PACK-1): a spec or worker result packed as compact JSON and
validated again is equal to the model, also with every defaulted field set otherwise; a result
kept beside its task without the task's ids (IMPL-RSS-1) reads back as its event gave it."""

from __future__ import annotations

from air.contracts.error import make_air_error
from air.contracts.event import RuntimeEvent
from air.contracts.task import (
    TaskConstraints,
    TaskDependencySpec,
    TaskScope,
    TaskSpec,
    VerificationPolicy,
)
from air.contracts.worker_result import WorkerResult
from air.events.fold import FoldCursor
from air.events.packed import pack, pack_result, unpack_result, unpack_spec
from air.nursery.ledger import ledger_view
from air.testing.sequences import SessionSimulator


def test_a_packed_spec_is_small_and_validates_back_equal() -> None:
    bare = TaskSpec(id="t1", type="review", title="t1", description="d")
    full = TaskSpec(
        id="t2",
        type="execute",
        title="t2",
        description="d",
        acceptance_criteria=["works"],
        scope=TaskScope(write_area=["src/**"]),
        dependencies=[TaskDependencySpec(depends_on_task_id="t1")],
        verification=VerificationPolicy(commands=["make test"], fallback_allowed=True),
        constraints=TaskConstraints(retry_budget=3, soft_timeout_ms=1000, hard_timeout_ms=2000),
    )
    for spec in (bare, full):
        assert unpack_spec(pack(spec)) == spec
    assert len(pack(bare)) < 100


def test_a_packed_worker_result_validates_back_equal() -> None:
    result = WorkerResult(
        task_id="t1",
        agent_id="agt_1",
        agent_type="reviewer",
        status="completed",
        summary="ok",
        changed_files=["a.py"],
        result={"verdict": "approved"},
    )
    assert unpack_result(pack(result)) == result
    assert unpack_result(None) is None


def test_a_result_packed_beside_its_task_leaves_out_the_tasks_ids() -> None:
    """IMPL-RSS-1: the ids the task holds are left out, put back when read; others are kept."""
    result = WorkerResult(
        task_id="t1",
        agent_id="agt_01M8W1YWCEK48MG5NVAYQK0KMW",
        agent_type="reviewer",
        status="completed",
        summary="ok",
        result={"verdict": "approved", "task_id": "nested, kept"},
    )
    text = pack_result(result, "t1", result.agent_id)
    assert "agt_01M8W1YWCEK48MG5NVAYQK0KMW" not in text
    assert '"task_id":"t1"' not in text
    assert len(text) < len(pack(result)) - 40
    assert unpack_result(text, "t1", result.agent_id) == result
    other = pack_result(result, "t2", "agt_other")  # not the task's: kept as they are
    assert other == pack(result)
    assert unpack_result(other, "t2", "agt_other") == result


def _retried_with_a_result() -> list[RuntimeEvent]:
    """A task that fails with agent A's result, is started again by agent B, then cancelled."""
    sim = SessionSimulator("ses_R", "prj_R")
    err = make_air_error(kind="task_failed", message="tests failed").model_dump(mode="json")
    spec = {"id": "t1", "type": "execute", "title": "t1", "description": "d"}
    result = {"task_id": "t1", "agent_id": "agt_A", "agent_type": "executor"}
    result |= {"status": "failed", "summary": "red"}
    events = [sim.start(), sim.event("task.created", {"task_spec": spec})]
    for index, agent_id in enumerate(("agt_A", "agt_B"), start=1):
        started = {"agent_id": agent_id, "task_id": "t1", "agent_type": "executor"}
        events.append(sim.event("agent.started", started | {"status": "running"}))
        events.append(sim.event("task.started", started | {"attempt_index": index}))
    events.insert(
        4,
        sim.event(
            "task.failed",
            {"task_id": "t1", "error": err} | {"agent_id": "agt_A", "worker_result": result},
        ),
    )
    events.append(sim.event("task.cancelled", {"task_id": "t1", "reason": "user"}))
    return events


def test_the_folds_result_reads_back_as_its_event_gave_it_after_a_retry() -> None:
    """A result kept without its agent's id takes it back when another agent becomes the
    task's: read after the retry's start and the cancel, it is still agent A's."""
    events = _retried_with_a_result()
    want = WorkerResult.model_validate(events[4].payload["worker_result"])
    cursor = FoldCursor()
    for event in events[:5]:
        cursor.feed(event)
    fact = cursor.state.tasks["t1"]
    assert fact.worker_result == want
    assert "agt_A" not in (fact.result_text or "")  # left out: the task's agent of record
    for event in events[5:]:
        cursor.feed(event)
        fact = cursor.state.tasks["t1"]
        assert fact.worker_result == want  # agent A's, though B is the task's agent now
    assert fact.agent_id == "agt_B"
    assert fact.status == "cancelled"
    assert ledger_view(cursor.state).tasks["t1"].worker_result == want.model_dump(mode="json")
