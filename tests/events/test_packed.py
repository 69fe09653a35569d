"""``air.events.packed`` (IMPL-PACK-1): a spec or worker result packed as compact JSON and
validated again is equal to the model, also with every defaulted field set otherwise."""

from __future__ import annotations

from air.contracts.task import (
    TaskConstraints,
    TaskDependencySpec,
    TaskScope,
    TaskSpec,
    VerificationPolicy,
)
from air.contracts.worker_result import WorkerResult
from air.events.packed import pack, unpack_result, unpack_spec


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
