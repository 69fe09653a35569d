"""Compaction's trigger on the worker path (IMPL-COMPACT-1): the ContextAssembler asks for
compaction of a task's context, ``CompactingContext`` (what ``open_runtime`` gives the
WorkerManager) compacts the session once and builds that task's context again on the summary;
the next task's context uses the summary without compacting again. Real session DB, the real
WorkerContextBuilder, a cassette compactor model; and through ``open_runtime`` with a real
worker and a model server over HTTP."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trio

from air.cli.factory import RuntimeFactory
from air.cli.options import HeadlessOptions
from air.context import readers_from_store
from air.context.worker_pack import WorkerContextBuilder
from air.contracts.error import AirException
from air.contracts.event import EventSource, new_event
from air.contracts.task import TaskSpec
from air.llm.manager import ProviderManager
from air.nursery.runtime import open_runtime
from air.nursery.worker_context import CompactingContext
from air.testing.recording import RecordingProvider
from tests.llm.servers import LocalServer, Reply, Turn, anthropic_sse
from tests.nursery.test_compaction import DECISIONS, Env, cassette
from tests.trusted import trust_project


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


def _builder(env: Env, tmp_path: Path, budget: int) -> WorkerContextBuilder:
    """The worker ContextPack builder of ``env``'s session with a token budget of ``budget``."""
    return WorkerContextBuilder(
        project=env.project,
        readers=readers_from_store(env.session.store),
        token_budget=budget,
        user_air_dir=tmp_path / "home",
    )


async def test_a_tasks_context_over_the_threshold_compacts_once(env: Env, tmp_path: Path) -> None:
    await env.fill(80)
    builder = _builder(env, tmp_path, 4_000)
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
    builder = _builder(env, tmp_path, 100_000)
    models = RecordingProvider(ProviderManager.for_cassette(cassette(tmp_path / "c.jsonl", 5)))
    await CompactingContext(builder, env.compactor(models))(attempt(env, "t_one"))
    assert models.requests == []
    assert env.session.store.summaries.list_all() == []


async def test_the_compactor_is_built_at_the_first_compaction_and_once(
    env: Env, tmp_path: Path
) -> None:
    """What ``open_runtime`` hands the workers builds its compactor only when a task's
    context first asks for compaction (IMPL-BOOT-8), then keeps it."""
    models = RecordingProvider(ProviderManager.for_cassette(cassette(tmp_path / "c.jsonl", 60)))
    built: list[object] = []

    def build() -> Any:
        built.append(env.compactor(models))
        return built[-1]

    def context(budget: int) -> CompactingContext:
        builder = _builder(env, tmp_path, budget)
        return CompactingContext(builder, build_compactor=build)

    await env.fill(80)
    await context(100_000)(attempt(env, "t_small"))
    assert built == []  # no compaction asked: no compactor
    lazy = context(4_000)
    await lazy(attempt(env, "t_one"))
    await lazy(attempt(env, "t_two"))
    assert len(built) == 1
    assert lazy.compactor is built[0]
    assert len(env.session.store.summaries.list_all()) == 1


async def test_open_runtime_compacts_for_a_real_workers_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wiring: ``open_runtime`` gives the WorkerManager the compacting context, so a real
    worker's first request, in a session whose conversation passed the threshold of the
    worker's budget, carries the summary (pinned decision verbatim) instead of the originals."""
    root, home = tmp_path / "proj", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("AIR_TEST_PROVIDER_KEY", "k-test")
    worker_bodies: list[str] = []
    compactor_calls: list[str] = []

    def model(wire: str, body: dict[str, Any]) -> Reply:
        text = json.dumps(body)
        if "Role: compactor" in json.dumps(body.get("system")):
            compactor_calls.append(text)
            return Reply(chunks=anthropic_sse(Turn(text=["They talked about paging."])))
        worker_bodies.append(text)
        block = json.dumps(
            {"status": "completed", "summary": "ok", "result": {"changes_made": False}}
        )
        return Reply(chunks=anthropic_sse(Turn(text=[f"Done.\n```json:result\n{block}\n```\n"])))

    with LocalServer(model=model) as server:
        (root / ".air" / "shared").mkdir(parents=True)
        (root / ".air" / "shared" / "models.yaml").write_text(
            "default: local/claude-test\nproviders:\n  local:\n    kind: anthropic\n"
            f"    base_url: {server.url}\n    auth_ref: AIR_TEST_PROVIDER_KEY\n    models:\n"
            "      claude-test: {context_window: 16000, max_output_tokens: 1000}\n"
        )
        trust_project(root)  # HOME is the test's
        options = HeadlessOptions(project=str(root), stderr=io.StringIO(), max_workers=1)
        with trio.fail_after(120):
            async with open_runtime(RuntimeFactory(options).create(resume=False)) as rt:
                assert isinstance(rt.runner.context, CompactingContext)  # type: ignore[attr-defined]
                spec = TaskSpec(id="t_read", type="execute", title="Read", description="Look.")
                await rt.submit([spec])
                for i in range(60):
                    role = "user" if i % 2 == 0 else "assistant"
                    text = f"message {i}: " + "how should the users endpoint page? " * 10
                    if i == 2:
                        text += "\n" + DECISIONS[0]
                    await rt.session.ingestor.ingest(
                        new_event(
                            f"{role}.message.created",
                            {
                                "message_id": f"msg_{i:04d}",
                                "content": [{"type": "text", "text": text}],
                            },
                            session_id=rt.session_id,
                            source=EventSource(kind="main", id="main"),
                            project_id=rt.session.project.project_id,
                        )
                    )
                result = await rt.run_until_idle()
                summaries = rt.session.store.summaries.list_all()
                ends = [e.payload for e in rt.ledger.history() if e.type.startswith("task.")]
                started = [e.payload for e in rt.ledger.history() if e.type == "agent.started"]
    assert str(result.status) == "completed", ends
    assert len(compactor_calls) == 1
    assert len(summaries) == 1
    [first] = worker_bodies
    assert "Summary of the earlier conversation" in first
    assert DECISIONS[0] in first
    assert "message 3:" not in first  # covered: not sent again
    assert "message 59:" in first
    assert started[0]["pid"] > 0  # a real worker process


async def test_concurrent_askers_compact_once(env: Env, tmp_path: Path) -> None:
    """Two tasks' contexts (or the Main Agent and a task) ask at the same moment: the session's
    compaction lock and the check inside it make one compaction, not two over one range."""
    await env.fill(80)
    models = RecordingProvider(ProviderManager.for_cassette(cassette(tmp_path / "c.jsonl", 60)))
    compactor = env.compactor(models)
    other = env.compactor(models, lock=compactor.lock)
    outcomes: list[Any] = []

    async def ask(which: Any) -> None:
        outcomes.append(await which.compact_if_due(4_000, "a task's context"))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask, compactor)
        nursery.start_soon(ask, other)
    assert sorted(o is None for o in outcomes) == [False, True]
    assert len(env.session.store.summaries.list_all()) == 1
    assert len([t for t in env.types() if t == "context.compaction.requested"]) == 1


async def test_a_bad_rules_file_still_stops_the_runtime_before_any_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """IMPL-BOOT-8 builds the compactor at the first compaction, not at start-up; the project's
    compaction rules are still read (and a bad file refused) while the runtime opens."""
    root, home = tmp_path / "proj", tmp_path / "home"
    (root / ".air" / "shared").mkdir(parents=True)
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("AIR_TEST_PROVIDER_KEY", "k-test")
    (root / ".air" / "shared" / "models.yaml").write_text(
        "default: local/claude-test\nproviders:\n  local:\n    kind: anthropic\n"
        "    base_url: http://127.0.0.1:9\n    auth_ref: AIR_TEST_PROVIDER_KEY\n    models:\n"
        "      claude-test: {context_window: 16000, max_output_tokens: 1000}\n"
    )
    (root / ".air" / "shared" / "compaction-rules.md").write_text("---\ntrigger_ratio: [1\n---\n")
    trust_project(root)  # HOME is the test's
    options = HeadlessOptions(project=str(root), stderr=io.StringIO(), max_workers=1)
    refused: list[AirException] = []
    with trio.fail_after(60):
        try:
            async with open_runtime(RuntimeFactory(options).create(resume=False)):
                raise AssertionError("the runtime opened over a bad compaction-rules.md")
        except* AirException as group:
            refused += _leaves(group)
    assert [e.error.kind for e in refused] == ["config_error"]
    assert "compaction-rules.md" in refused[0].error.message


def _leaves(group: BaseExceptionGroup[AirException]) -> list[AirException]:
    found: list[AirException] = []
    for exc in group.exceptions:
        found += _leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc]
    return found
