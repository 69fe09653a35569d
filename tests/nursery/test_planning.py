"""WavePlanner and RetryPlanner decisions, and write-area overlap."""

from __future__ import annotations

import pytest

from air.contracts.error import ErrorKind, Retryability, make_air_error
from air.contracts.task import (
    DependencyType,
    RetryAction,
    TaskConstraints,
    TaskDependencySpec,
    TaskScope,
    TaskSpec,
    TaskStatus,
    VerificationPolicy,
    WorkspaceStrategy,
)
from air.nursery.graph import TaskGraph, write_areas_overlap
from air.nursery.planner import ResourceSnapshot, WavePlanner, default_max_workers
from air.nursery.retry import AttemptSummary, RetryPlanner


def spec(
    tid: str,
    *,
    deps: tuple[tuple[str, DependencyType], ...] = (),
    area: list[str] | None = None,
    kind: str = "execute",
    budget: int = 1,
    fallback: bool = False,
) -> TaskSpec:
    return TaskSpec(
        id=tid,
        type=kind,
        title=tid,
        description=tid,
        scope=TaskScope(write_area=area),
        dependencies=[TaskDependencySpec(depends_on_task_id=d, dependency_type=t) for d, t in deps],
        constraints=TaskConstraints(retry_budget=budget),
        verification=VerificationPolicy(fallback_allowed=fallback),
    )


@pytest.mark.parametrize(
    ("a", "b", "overlap"),
    [
        (["src/a/**"], ["src/b/**"], False),
        (["src/a/**"], ["src/a/x.py"], True),
        (["src/x.c"], ["src/*.py"], False),
        (["src"], ["src/*.py"], True),
        (["a.py"], ["b.py"], False),
        (["a.py"], ["./a.py"], True),
        (None, ["anything"], True),
        ([], None, False),
        (["docs/**"], ["*.md"], True),
    ],
)
def test_write_area_overlap(a: list[str] | None, b: list[str] | None, overlap: bool) -> None:
    assert write_areas_overlap(a, b) is overlap
    assert write_areas_overlap(b, a) is overlap


def test_plan_gates_orders_serializes_and_caps() -> None:
    graph = TaskGraph("s")
    graph.add_task(spec("base", area=["src/**"]))
    graph.add_task(spec("dep", deps=(("base", DependencyType.HARD),), area=["lib/**"]))
    graph.add_task(spec("later", deps=(("base", DependencyType.SOFT),), area=["docs/x.md"]))
    graph.add_task(spec("same", area=["src/a.py"]))
    graph.add_task(spec("rev", kind="review"))
    graph.add_task(spec("free1", area=["f1"]))
    graph.add_task(spec("free2", area=["f2"]))
    planner = WavePlanner(git_repo=True)
    decision = planner.plan(graph, ResourceSnapshot(max_workers=4), wave_index=0, planned_at="t")
    ids = [e.task_id for e in decision.plan.entries]
    # hard dep gates "dep"; soft dep puts "later" after the others; "same" overlaps "base"
    assert ids == ["base", "rev", "free1", "free2"]
    assert decision.plan.serialized_task_ids == ["same"]
    [edge] = decision.inferred_edges
    assert (edge.task_id, edge.depends_on_task_id, edge.dependency_type) == (
        "same",
        "base",
        DependencyType.CONFLICT,
    )
    strategies = {e.task_id: e.workspace.strategy for e in decision.plan.entries}
    assert strategies["rev"] == WorkspaceStrategy.MAIN
    assert strategies["base"] == WorkspaceStrategy.WORKTREE  # concurrent writers are isolated
    # running tasks occupy their areas; completed hard deps release dependents
    graph.mark_terminal("base", TaskStatus.COMPLETED)
    graph.tasks["base"].final = True
    graph.tasks["free1"].status = TaskStatus.RUNNING
    decision = planner.plan(
        graph, ResourceSnapshot(max_workers=8, running=1), wave_index=1, planned_at="t"
    )
    assert [e.task_id for e in decision.plan.entries] == ["dep", "later", "same", "rev", "free2"]
    assert default_max_workers() >= 1


def test_lone_writer_outside_git_runs_in_main_and_conflict_edges_serialize() -> None:
    graph = TaskGraph("s")
    graph.add_task(spec("a", area=["x"]))
    graph.add_task(spec("b", area=["y"], deps=(("a", DependencyType.CONFLICT),)))
    decision = WavePlanner(git_repo=False).plan(
        graph, ResourceSnapshot(max_workers=4), wave_index=0, planned_at="t"
    )
    assert [e.task_id for e in decision.plan.entries] == ["a"]
    assert decision.plan.entries[0].workspace.strategy == WorkspaceStrategy.MAIN
    assert decision.inferred_edges == []  # an explicit edge needs no inference


def test_cycles_and_missing_refs_are_reported() -> None:
    graph = TaskGraph("s")
    graph.add_task(spec("a", deps=(("b", DependencyType.HARD),)))
    graph.add_task(spec("b", deps=(("a", DependencyType.SERIALIZATION),)))
    graph.add_task(spec("c", deps=(("ghost", DependencyType.HARD),)))
    report = graph.validate_refs()
    assert report.cycle == ["a", "b", "a"]
    assert [e.depends_on_task_id for e in report.missing] == ["ghost"]


def err(kind: ErrorKind, msg: str = "boom", **kw: object) -> object:
    return make_air_error(kind=kind, message=msg, **kw)  # type: ignore[arg-type]


def decide(task: TaskSpec, attempts: int, kind: ErrorKind, **kw: object) -> RetryAction:
    graph = TaskGraph("s")
    node = graph.add_task(task)
    error = make_air_error(kind=kind, message=str(kw.pop("msg", "boom")), **kw)  # type: ignore[arg-type]
    history = [AttemptSummary(attempt_index=i) for i in range(attempts)]
    return RetryPlanner().decide(node, history, error).action


def test_retry_decisions() -> None:
    t = spec("t", budget=2)
    assert decide(t, 1, ErrorKind.CANCELLED) == RetryAction.CANCEL
    assert decide(t, 1, ErrorKind.ENVIRONMENT_ERROR) == RetryAction.BLOCK
    assert decide(t, 1, ErrorKind.ARCHITECTURE_MISMATCH) == RetryAction.BLOCK
    assert decide(t, 1, ErrorKind.WORKER_STALLED) == RetryAction.RETRY  # transient, same spec
    assert (
        decide(t, 1, ErrorKind.TASK_FAILED, retryability=Retryability.TRANSIENT)
        == RetryAction.RETRY
    )
    assert decide(t, 1, ErrorKind.TIMEOUT) == RetryAction.RETRY_SERIAL
    assert decide(t, 1, ErrorKind.VERIFICATION_FAILED) == RetryAction.DEBUG
    assert decide(t, 1, ErrorKind.TASK_FAILED) == RetryAction.RETRY
    assert decide(t, 3, ErrorKind.WORKER_STALLED) == RetryAction.BLOCK  # budget spent
    assert decide(spec("s", budget=0, fallback=True), 1, ErrorKind.TASK_FAILED) == RetryAction.SKIP


def test_same_failure_signature_escalates_to_debug() -> None:
    graph = TaskGraph("s")
    node = graph.add_task(spec("t", budget=3))
    error = make_air_error(kind=ErrorKind.TASK_FAILED, message="assert 1 == 2 at line 10")
    attempts = [
        AttemptSummary(attempt_index=0, failure_signature=error.semantic_signature),
        AttemptSummary(attempt_index=1, failure_signature=error.semantic_signature),
    ]
    decision = RetryPlanner().decide(node, attempts, error)
    assert decision.action == RetryAction.DEBUG
    assert decision.changed_dimension == "debugger"
    # a different first failure retries with a changed dimension instead
    first = RetryPlanner().decide(node, attempts[:1], error)
    assert (first.action, first.changed_dimension) == (RetryAction.RETRY, "context")
