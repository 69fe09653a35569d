"""Informed retries (issue #14 item 2, IMPL-REVIEW-2): a retry carries its predecessor's failure
in L8 and changes the dimension the RetryPlanner chose; an identical failure signature escalates
faster; environment impossibility blocks at once. The end-to-end run (real workers, a model
server) reads the retry's request: it holds the previous failure, and the third attempt names
the escalation model."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from air.cli.factory import RuntimeFactory
from air.cli.options import HeadlessOptions
from air.contracts.error import ErrorKind, make_air_error
from air.contracts.task import RetryAction, TaskConstraints, TaskScope, TaskSpec
from air.nursery.graph import TaskNode
from air.nursery.ledger import fold_history
from air.nursery.retry import AttemptSummary, RetryPlanner, retry_spec
from air.nursery.runtime import open_runtime
from air.nursery.scheduler import Scheduler, SchedulerOptions
from air.supervision.seams import SuperviseRequest
from air.testing.fake_runner import FakeStep, FakeTaskRunner
from tests.llm.servers import LocalServer, Reply, Turn, anthropic_sse
from tests.nursery.conftest import SessionDB
from tests.trusted import trust_project

MODELS = ("local/claude-test", "local/claude-big")


def _node(budget: int = 2, model: str | None = None) -> TaskNode:
    return TaskNode(
        spec=TaskSpec(
            id="t",
            type="execute",
            title="t",
            description="do t",
            scope=TaskScope(write_area=["x"]),
            constraints=TaskConstraints(retry_budget=budget, model_id=model),
        )
    )


def _failure(message: str) -> tuple[AttemptSummary, Any]:
    error = make_air_error(kind=ErrorKind.TASK_FAILED, message=message)
    return AttemptSummary(len(message), error.semantic_signature, error.kind.value), error


def test_a_second_quality_failure_changes_the_model() -> None:
    planner = RetryPlanner(escalation_models=MODELS)
    first, _ = _failure("wrong answer A")
    second, error = _failure("wrong answer B")
    node = _node(model=MODELS[0])
    decision = planner.decide(node, [first], _failure("wrong answer A")[1])
    assert decision.changed_dimension == "context"
    assert retry_spec(planner, node, decision) == node.spec
    decision = planner.decide(node, [first, second], error)
    assert (decision.action, decision.changed_dimension) == (RetryAction.RETRY, "model")
    assert retry_spec(planner, node, decision).constraints.model_id == MODELS[1]
    # no model left after the last one: the context dimension again
    top = _node(model=MODELS[1])
    assert planner.decide(top, [first, second], error).changed_dimension == "context"
    # none configured: never the model dimension
    assert RetryPlanner().decide(node, [first, second], error).changed_dimension == "context"


def test_an_identical_signature_escalates_faster() -> None:
    planner = RetryPlanner(escalation_models=MODELS)
    same, error = _failure("the same wrong answer")
    node = _node(budget=5)
    assert planner.decide(node, [same], error).changed_dimension == "context"
    assert planner.decide(node, [same, same], error).action == RetryAction.DEBUG
    decision = planner.decide(node, [same, same, same], error)
    assert decision.action == RetryAction.BLOCK  # budget left, but a debugger already failed
    assert "3 times" in decision.reason


def test_environment_impossibility_blocks_at_once() -> None:
    error = make_air_error(kind=ErrorKind.ENVIRONMENT_ERROR, message="no cmake")
    decision = RetryPlanner(escalation_models=MODELS).decide(
        _node(budget=5), [AttemptSummary(1, error.semantic_signature, error.kind.value)], error
    )
    assert decision.action == RetryAction.BLOCK


async def test_the_scheduler_applies_the_chosen_dimension(
    session_db: SessionDB, autojump_clock: trio.testing.MockClock
) -> None:
    models: list[str | None] = []

    def seen(request: SuperviseRequest) -> None:
        models.append(request.task_spec.constraints.model_id)

    runner = FakeTaskRunner(
        {
            "t": [
                FakeStep(1, "partial", summary="wrong answer A"),
                FakeStep(1, "partial", summary="wrong answer B"),
                FakeStep(1),
            ]
        },
        on_start=seen,
    )
    sched = Scheduler(
        session_db.ledger,
        runner,
        project_root="/x",
        retry=RetryPlanner(escalation_models=MODELS),
        options=SchedulerOptions(2),
    )
    node = _node(model=MODELS[0])
    await sched.create_tasks([node.spec])
    assert (await sched.run_until_idle()).status == "completed"
    assert models == [MODELS[0], MODELS[0], MODELS[1]]
    folded = fold_history(session_db.ledger.history())
    assert folded.tasks["t"].status.value == "completed"


def _final(status: str, summary: str) -> str:
    block = json.dumps({"status": status, "summary": summary, "result": {"changes_made": False}})
    return f"Done.\n```json:result\n{block}\n```\n"


async def test_a_retry_request_holds_the_failure_and_the_chosen_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real workers over the real ProviderManager: attempt 2's request holds attempt 1's
    failure (the worker's own account, in L8); attempt 3's names the escalation model."""
    root, home = tmp_path / "proj", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("AIR_TEST_PROVIDER_KEY", "k-test")
    answers = [
        _final("failed", "FAIL-A-3e1: the listing lacks notes.txt"),
        _final("failed", "FAIL-B-8c0: the listing is empty"),
        _final("completed", "listed"),
    ]

    def model(wire: str, body: dict[str, Any]) -> Reply:
        return Reply(chunks=anthropic_sse(Turn(text=[answers.pop(0)])))

    with LocalServer(model=model) as server:
        (root / ".air" / "shared").mkdir(parents=True)
        (root / ".air" / "shared" / "models.yaml").write_text(
            f"default: {MODELS[0]}\nproviders:\n  local:\n    kind: anthropic\n"
            f"    base_url: {server.url}\n    auth_ref: AIR_TEST_PROVIDER_KEY\n    models:\n"
            "      claude-test: {context_window: 32768, max_output_tokens: 4096}\n"
            "      claude-big: {context_window: 32768, max_output_tokens: 4096}\n"
        )
        trust_project(root)  # HOME is the test's
        options = HeadlessOptions(project=str(root), stderr=io.StringIO(), max_workers=1)
        with trio.fail_after(180):
            async with open_runtime(RuntimeFactory(options).create(resume=False)) as rt:
                rt.scheduler.io.retry = RetryPlanner(escalation_models=MODELS)
                spec = _node(budget=2).spec.model_copy(
                    update={"id": "list", "description": "List the project files."}
                )
                await rt.submit([spec])
                result = await rt.run_until_idle()
        requests = list(server.requests)
    assert str(result.status) == "completed"
    assert [r.body["model"] for r in requests] == ["claude-test", "claude-test", "claude-big"]
    first, second, third = (json.dumps(r.body) for r in requests)
    assert "FAIL-A-3e1" not in first
    assert "FAIL-A-3e1: the listing lacks notes.txt" in second  # L8: the previous failure
    assert "FAIL-B-8c0: the listing is empty" in third
