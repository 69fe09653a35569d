"""Compaction's trigger on the worker path (IMPL-COMPACT-1): the ContextAssembler asks for
compaction of a task's context, ``CompactingContext`` (what ``open_runtime`` gives the
WorkerManager) compacts the session once and builds that task's context again on the summary;
the next task's context uses the summary without compacting again. Real session DB, the real
WorkerContextBuilder, a cassette compactor model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from air.context import readers_from_store
from air.context.worker_pack import WorkerContextBuilder
from air.contracts import TaskSpec
from air.llm import ProviderManager
from air.nursery.compaction import CompactingContext
from air.testing.recording import RecordingProvider
from tests.nursery.test_compaction import DECISIONS, Env, cassette


@dataclass(frozen=True)
class Attempt:
    session_id: str
    project_id: str
    task_spec: TaskSpec
    attempt_index: int = 1


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    e = Env(tmp_path)
    yield e
    e.session.close()


def attempt(env: Env, task_id: str) -> Attempt:
    spec = TaskSpec(id=task_id, type="execute", title=task_id, description=f"Do {task_id}.")
    return Attempt(env.session.session_id, env.project.project_id, spec)


async def test_a_tasks_context_over_the_threshold_compacts_once(env: Env, tmp_path: Path) -> None:
    await env.fill(80)
    builder = WorkerContextBuilder(
        project=env.project,
        readers=readers_from_store(env.session.store),
        token_budget=4_000,
        user_air_dir=tmp_path / "home",
    )
    models = RecordingProvider(ProviderManager.for_cassette(cassette(tmp_path / "c.jsonl", 60)))
    context = CompactingContext(builder, env.compactor(models))
    first = await context(attempt(env, "t_one"))
    [summary] = env.session.store.summaries.list_all()
    body = json.dumps(first.messages)
    assert "Summary of the earlier conversation" in body
    assert DECISIONS[0] in body  # a pinned fact, verbatim, in the task's context
    assert "message 3:" not in body  # covered messages left the context
    assert "message 79:" in body
    assert builder.last is not None
    assert not builder.last.compaction_requested
    calls = len(models.requests)
    second = await context(attempt(env, "t_two"))
    assert len(models.requests) == calls  # not compacted again
    assert len(env.session.store.summaries.list_all()) == 1
    assert f"summary:{summary['summary_id']}" in json.dumps(second.messages)
    assert DECISIONS[0] in json.dumps(second.messages)
    types = [t for t in env.types() if t.startswith(("context.compaction", "summary."))]
    assert types == [
        "context.compaction.requested",
        "context.compaction.started",
        "summary.created",
        "context.compaction.completed",
    ]


async def test_without_a_request_nothing_is_compacted(env: Env, tmp_path: Path) -> None:
    await env.fill(10)
    builder = WorkerContextBuilder(
        project=env.project,
        readers=readers_from_store(env.session.store),
        token_budget=100_000,
        user_air_dir=tmp_path / "home",
    )
    models = RecordingProvider(ProviderManager.for_cassette(cassette(tmp_path / "c.jsonl", 5)))
    await CompactingContext(builder, env.compactor(models))(attempt(env, "t_one"))
    assert models.requests == []
    assert env.session.store.summaries.list_all() == []
