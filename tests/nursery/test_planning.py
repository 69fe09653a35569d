"""WavePlanner and RetryPlanner decisions, and write-area overlap."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
from air.nursery.write_areas import find_cycle


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
        (["src/main.c"], ["src/*.h"], False),
        # a directory may have a dot in its name: a glob of its own reaching below it overlaps
        ([".github"], [".github/workflows/*.yml"], True),
        (["conf.d"], ["conf.d/*.conf"], True),
        (["lib/v1.2"], ["lib/*/x.c"], True),
        (["docs/v2.0"], ["docs/**/*.md"], True),
        (["a.py"], ["[ab].py/x"], True),
        (["a.py"], ["[!a].py/x"], False),
        (["conf.d"], ["conf[.]d/x"], True),
        (["conf.d"], ["conf[!.]d/x"], False),
        (["x.y"], ["x[!]a]y/z"], True),  # a set's first ] is one of its characters
        (["x]y.c"], ["x[]]y.c/z"], True),
        (["x.y"], ["x[.y/z"], False),  # a [ without its ] is itself
        (["x.y"], ["x.y/["], True),
        (["x.y"], ["x.y/[!"], True),
        (["a.b"], ["a[.]b/[c]"], True),
        (["a.b"], ["a[.]b[c]/x"], False),
        (["a.b.c"], ["a*c/x"], True),
        (["a.b"], ["a?b/x"], True),
        # entries as the PermissionEngine folds them; an absolute one against a relative one
        # may name the same file
        (["src/../lib"], ["lib/x.c"], True),
        (["src//x.c"], ["src/x.c"], True),
        (["./src/./x.c"], ["src/x.c"], True),
        (["/p/src"], ["src/x.c"], True),
        (["/p/src"], ["/p/src/../src/x.c"], True),
        (["/p/src"], ["/p/lib"], False),
        (["."], ["src/x.c"], True),
    ],
)
def test_write_area_overlap(a: list[str] | None, b: list[str] | None, overlap: bool) -> None:
    assert write_areas_overlap(a, b) is overlap
    assert write_areas_overlap(b, a) is overlap


@pytest.mark.parametrize(
    ("a", "b", "overlap"),
    [
        (["/p/docs"], ["src"], False),
        (["/p/src"], ["src/x.c"], True),
        (["/p/src/../docs/*.md"], ["docs/a.md"], True),
        (["/p"], ["src/x.c"], True),
        (["/elsewhere/src"], ["src/x.c"], True),  # outside the project: uncertain
    ],
)
def test_an_absolute_entry_inside_the_project_is_its_relative_one(
    a: list[str], b: list[str], overlap: bool
) -> None:
    """With the project's root known (the Scheduler's, ``air run --plan``'s), an absolute entry
    naming a path of the project is compared as the relative one: ``/p/docs`` and ``src`` run
    side by side (without the root such a pair is uncertain, so serialised)."""
    assert write_areas_overlap(a, b, root="/p") is overlap
    assert write_areas_overlap(b, a, root="/p") is overlap
    graph = TaskGraph("s", project_root="/p")
    first, second = graph.add_task(spec("a", area=a)), graph.add_task(spec("b", area=b))
    assert graph.conflicts_with(first, second) is overlap


def test_a_cycle_is_found_and_a_shared_dependency_is_none() -> None:
    """A task two others depend on (a diamond) is no cycle; a cycle behind a task that leads
    into it is found, as is one through a node's later edge, one in a part of the graph apart
    from the first and one that does not pass through where the search began."""
    assert find_cycle([("d", "b"), ("d", "c"), ("b", "a"), ("c", "a")]) == []
    assert find_cycle([("x", "a"), ("a", "b"), ("b", "c"), ("c", "a")]) == ["a", "b", "c", "a"]
    assert find_cycle([("a", "b"), ("b", "e"), ("a", "c"), ("c", "a")]) == ["a", "c", "a"]
    assert find_cycle([("a", "b"), ("c", "d"), ("d", "c")]) == ["c", "d", "c"]  # a later part
    assert find_cycle([("a", "b"), ("b", "c"), ("c", "b")]) == ["b", "c", "b"]  # not the root


def test_entries_are_read_as_written_by_a_person(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``~`` is the user's home (and inside the project, the relative path); a home that cannot
    be known, a backslash (a path written on Windows) and a name with a dot in an inner segment
    (``fnmatch``'s ``*`` crosses a ``/``: ``a/*.h`` writes ``a/b.c/d/x.h``) are read so that a
    pair that may write one file overlaps; ``""`` is the whole project."""
    monkeypatch.setenv("HOME", str(tmp_path))
    root = str(tmp_path / "proj")
    assert write_areas_overlap(["~/proj/src"], ["lib"], root=root) is False
    assert write_areas_overlap(["~/proj/src"], ["src/x.c"], root=root) is True
    assert write_areas_overlap(["~nosuchuser/x"], ["y"], root=root) is True
    assert write_areas_overlap(["y"], ["~nosuchuser/x"], root=root) is True
    assert write_areas_overlap(["src\\a.c"], ["src/**"]) is True
    assert write_areas_overlap(["a/b.c/d"], ["a/*.h"]) is True
    assert write_areas_overlap([""], ["src"]) is True


_SEGMENTS = ["a", "b", "c.d", ".e"]
_GLOB_SEGMENTS = [*_SEGMENTS, "*", "?", "*.d", "[ab]", "**"]


def _shell_covers(path: str, entry: str) -> bool:
    """Whether a write-area entry covers ``path`` with each wildcard kept within one segment
    (as ``in_write_area_entry`` rules, ``dir/**`` covering ``dir`` and all below it): the
    coverage ``write_areas_overlap`` answers for (a dotted literal is taken for a file only
    for wildcards crossing a ``/``)."""
    if path == entry or path.startswith(entry + "/"):
        return True
    if entry.endswith("/**") and (path == entry[:-3] or path.startswith(entry[:-2])):
        return True
    if not any(ch in entry for ch in "*?["):
        return False
    parts = [fnmatch.translate(p).replace(".*", "[^/]*") for p in entry.split("/")]
    whole = "/".join(re.sub(r"^\(\?s:(.*)\)\\Z$", r"\1", part) for part in parts)
    return re.fullmatch(whole.replace("(?s:.)", "[^/]"), path) is not None


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(_GLOB_SEGMENTS), min_size=1, max_size=3).map("/".join),
    st.lists(st.sampled_from(_GLOB_SEGMENTS), min_size=1, max_size=3).map("/".join),
)
def test_two_areas_that_can_write_one_path_overlap(a: str, b: str) -> None:
    """For every path of up to four segments both areas may write, the planner's overlap test
    says they overlap (two such tasks never share a wave)."""
    paths = ["/".join(p) for n in range(1, 5) for p in _paths(n)]
    shared = [p for p in paths if _shell_covers(p, a) and _shell_covers(p, b)]
    if shared:
        assert write_areas_overlap([a], [b]), (a, b, shared[0])
        assert write_areas_overlap([b], [a]), (a, b, shared[0])


def _paths(n: int) -> list[tuple[str, ...]]:
    if n == 0:
        return [()]
    return [(*rest, seg) for rest in _paths(n - 1) for seg in _SEGMENTS]


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
    graph.add_task(spec("a", area=None))
    graph.add_task(spec("b", area=["y"], deps=(("a", DependencyType.CONFLICT),)))
    decision = WavePlanner(git_repo=False).plan(
        graph, ResourceSnapshot(max_workers=4), wave_index=0, planned_at="t"
    )
    assert [e.task_id for e in decision.plan.entries] == ["a"]
    assert decision.plan.entries[0].workspace.strategy == WorkspaceStrategy.MAIN
    assert decision.inferred_edges == []  # an explicit edge needs no inference


@pytest.mark.parametrize(
    ("scope", "strategy"),
    [
        ({}, WorkspaceStrategy.MAIN),
        ({"write_area": ["."]}, WorkspaceStrategy.MAIN),
        ({"write_area": ["src"]}, WorkspaceStrategy.ISOLATED_COPY),
        ({"allowed_paths": ["src"]}, WorkspaceStrategy.ISOLATED_COPY),
        ({"denied_paths": ["secrets"]}, WorkspaceStrategy.ISOLATED_COPY),
    ],
)
def test_a_lone_writer_outside_git_works_in_place_only_with_the_whole_project(
    scope: dict[str, list[str]], strategy: WorkspaceStrategy
) -> None:
    """Outside git a scoped writer gets a copy even alone: only a merge checks what its
    commands wrote (in place, a build's own writes went anywhere in the project)."""
    task = TaskSpec(id="a", type="execute", title="a", description="a", scope=TaskScope(**scope))
    graph = TaskGraph("s")
    graph.add_task(task)
    decision = WavePlanner(git_repo=False).plan(
        graph, ResourceSnapshot(max_workers=4), wave_index=0, planned_at="t"
    )
    assert [e.workspace.strategy for e in decision.plan.entries] == [strategy]


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


def test_a_dotted_directory_and_a_glob_below_it_never_share_a_wave() -> None:
    """``conf.d`` is a directory: a task writing it and one writing ``conf.d/*.conf`` may write
    the same file, so the second waits for the first (a conflict edge), as two worktrees
    changing one file would otherwise end in a merge conflict and a retry."""
    graph = TaskGraph("s")
    graph.add_task(spec("all", area=["conf.d"]))
    graph.add_task(spec("confs", area=["conf.d/*.conf"]))
    decision = WavePlanner(git_repo=True).plan(
        graph, ResourceSnapshot(max_workers=4), wave_index=0, planned_at="t"
    )
    assert [e.task_id for e in decision.plan.entries] == ["all"]
    assert decision.plan.serialized_task_ids == ["confs"]
    [edge] = decision.inferred_edges
    assert (edge.task_id, edge.depends_on_task_id) == ("confs", "all")
