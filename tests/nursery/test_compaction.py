"""Compaction as a task (SDD §10.3, §19.3) on a real session DB with a scripted model: a
500-message session is summarised chunk by chunk, every request inside the compactor's
budget, every pinned fact verbatim, the summaries row written by ``summary.created`` only,
the originals kept, and the next task's context built on the summary; ``air compact`` runs
it from the command line."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from air.context import ContextAssembler, readers_from_store
from air.context.compaction import CompactionRules
from air.context.compactor import SessionCompactor, record_worker_summary
from air.context.tokens import estimate_tokens
from air.contracts.error import AirException
from air.contracts.event import EventSource, new_event
from air.contracts.provider import ProviderCompletionInput, TextBlock
from air.contracts.runtime import ContextAssembleInput
from air.contracts.task import TaskSpec
from air.llm.cassette import CassetteTurn
from air.llm.manager import ProviderManager
from air.nursery.ledger import SessionLedger
from air.session.manager import OpenSession, SessionManager
from air.session.project import ProjectStore
from air.testing.recording import RecordingProvider
from tests.forked_air import air_cli
from tests.gitrepo import git
from tests.trusted import trust_project

BUDGET = 2_000
DECISIONS = [f"Decision: use the repository layer for table {i}" for i in range(0, 500, 50)]
EDITED = [f"src/module_{i}.py" for i in range(3, 500, 100)]
CRITERIA = ["GET /users returns 200 with a JSON list", "the migration is reversible"]


def request_tokens(request: ProviderCompletionInput) -> int:
    text = request.system if isinstance(request.system, str) else ""
    body = "".join(getattr(b, "text", "") for m in request.messages for b in m.content)
    return estimate_tokens(text) + estimate_tokens(body) + request.max_tokens


def cassette(path: Path, count: int, text: str = "Chunk summary {i}.") -> str:
    turns = [
        CassetteTurn(content=[TextBlock(text=text.format(i=i))], stop_reason="end_turn")
        for i in range(count)
    ]
    path.write_text("".join(t.model_dump_json(exclude_none=True) + "\n" for t in turns))
    return str(path)


class Env:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.root = tmp / "proj"
        self.root.mkdir()
        git(self.root, "init", "-q")
        self.project = ProjectStore().initialize(self.root)
        self.session: OpenSession = SessionManager().open_session(self.project)
        self.ledger = SessionLedger(
            self.session.events,
            session_id=self.session.session_id,
            project_id=self.project.project_id,
        )

    async def message(self, index: int) -> None:
        role = "user" if index % 2 == 0 else "assistant"
        text = f"message {index}: " + "talk about the users endpoint and its tests. " * 6
        if index in range(0, 500, 50):
            text += "\n" + DECISIONS[index // 50]
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        if role == "assistant" and f"src/module_{index}.py" in EDITED:
            content.append(
                {
                    "type": "tool_use",
                    "id": f"tu_{index}",
                    "name": "fs.edit",
                    "input": {"path": f"src/module_{index}.py", "old_string": "a"},
                }
            )
        await self.session.ingestor.ingest(
            new_event(
                f"{role}.message.created",
                {"message_id": f"msg_{index:04d}", "content": content},
                session_id=self.session.session_id,
                source=EventSource(kind="main", id="main"),
                project_id=self.project.project_id,
            )
        )

    async def fill(self, count: int = 500) -> None:
        spec = TaskSpec(
            id="t_users",
            type="execute",
            title="Users endpoint",
            description="Add GET /users.",
            acceptance_criteria=CRITERIA,
            scope={"write_area": ["src/users"]},
        )
        await self.ledger.record("task.created", {"task_spec": spec.model_dump(mode="json")})
        for i in range(count):
            await self.message(i)

    def compactor(self, models: Any, **kw: Any) -> SessionCompactor:
        return SessionCompactor(
            ledger=self.ledger,
            store=self.session.store,
            models=models,
            session_id=self.session.session_id,
            rules=CompactionRules(),
            request_budget=BUDGET,
            chunk_output_tokens=200,
            **kw,
        )

    def context(self) -> Any:
        assembler = ContextAssembler(
            project=self.project,
            readers=readers_from_store(self.session.store),
            user_air_dir=self.tmp / "home",
        )
        spec = TaskSpec(id="t_next", type="execute", title="Next", description="Next task.")
        return assembler.assemble_now(
            ContextAssembleInput(
                session_id=self.session.session_id,
                project_id=self.project.project_id,
                task_spec=spec,
                token_budget=20_000,
            )
        )

    def types(self) -> list[str]:
        return [e.type for e in self.session.events.query()]


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    e = Env(tmp_path)
    yield e
    e.session.close()


async def test_a_500_message_session_is_compacted_as_a_task(env: Env, tmp_path: Path) -> None:
    await env.fill()
    before = env.context()
    assert before.compaction_requested  # asked for early: the history passed 70 % of the budget
    models = RecordingProvider(ProviderManager.for_cassette(cassette(tmp_path / "c.jsonl", 400)))
    outcome = await env.compactor(models).compact("context budget")
    assert outcome is not None
    # chunks, each request inside the compactor's own budget
    assert outcome.chunks == len(models.requests) > 10
    assert max(request_tokens(r) for r in models.requests) <= BUDGET
    assert all(r.tools == [] for r in models.requests)
    # every pinned fact verbatim
    for fact in [*DECISIONS, *(f"Acceptance criterion: {c}" for c in CRITERIA)]:
        assert fact in outcome.summary_text
    for path in [*EDITED, "src/users"]:
        assert f"File under edit: {path}" in outcome.summary_text
    # the immutable range: everything but the newest 6 messages
    assert outcome.covers_until_message_id == "msg_0493"
    assert len(outcome.replaced_message_ids) == 494
    # the events in §19.3 order; the one summaries row is summary.created's
    types = [t for t in env.types() if t.startswith(("context.compaction", "summary."))]
    assert types == [
        "context.compaction.requested",
        "context.compaction.started",
        "summary.created",
        "context.compaction.completed",
    ]
    [row] = env.session.store.summaries.list_all()
    assert row["summary_id"] == outcome.summary_id
    assert row["content"] == outcome.summary_text
    assert row["covers_until_message_id"] == "msg_0493"
    task = env.session.store.tasks.get(outcome.task_id)
    assert task is not None
    assert task["status"] == "completed"
    assert json.loads(task["worker_result_json"]) == {"summary_id": outcome.summary_id}
    # the originals stay readable
    assert len(env.session.store.messages.list_by_session(env.session.session_id)) == 500
    assert env.types().count("user.message.created") == 250
    # the next task's context uses the summary, then only the messages after it
    after = env.context()
    assert not after.compaction_requested
    refs = [layer.source_ref for layer in after.layers if layer.level.value == "conversation"]
    assert refs[0] == f"summary:{outcome.summary_id}"
    assert refs[1:] == [f"message:msg_{i:04d}" for i in range(494, 500)]
    assert "Decision: use the repository layer for table 450" in after.system + json.dumps(
        after.messages
    )


async def test_a_second_compaction_extends_the_first(env: Env, tmp_path: Path) -> None:
    await env.fill(40)
    first = await env.compactor(
        ProviderManager.for_cassette(cassette(tmp_path / "a.jsonl", 20, "First {i}."))
    ).compact("one")
    assert first is not None
    for i in range(40, 60):
        await env.message(i)
    models = RecordingProvider(
        ProviderManager.for_cassette(cassette(tmp_path / "b.jsonl", 20, "Second {i}."))
    )
    second = await env.compactor(models).compact("two")
    assert second is not None
    # the new range starts after the first summary's cut and carries that summary along
    assert second.replaced_message_ids[0] == "msg_0034"
    assert "First 0." in "".join(
        getattr(b, "text", "") for m in models.requests[0].messages for b in m.content
    )
    assert "Decision: use the repository layer for table 0" in second.summary_text
    assert len(env.session.store.summaries.list_all()) == 2


async def test_nothing_old_enough_is_recorded_as_not_accepted(env: Env, tmp_path: Path) -> None:
    await env.fill(4)
    models = ProviderManager.for_cassette(cassette(tmp_path / "c.jsonl", 1))
    assert await env.compactor(models).compact("manual") is None
    [requested] = [e for e in env.session.events.query() if e.type.startswith("context.")]
    assert requested.payload["accepted"] is False
    assert env.session.store.summaries.list_all() == []


async def test_a_failed_model_call_fails_the_task_and_writes_no_summary(
    env: Env, tmp_path: Path
) -> None:
    await env.fill(60)
    models = ProviderManager.for_cassette(cassette(tmp_path / "c.jsonl", 1))  # runs out
    with pytest.raises(AirException):
        await env.compactor(models).compact("budget")
    types = [t for t in env.types() if t.startswith(("context.compaction", "summary."))]
    assert types[-1] == "context.compaction.failed"
    assert "summary.created" not in types
    assert env.session.store.summaries.list_all() == []


async def test_a_compactor_workers_summary_gets_a_runtime_id(env: Env) -> None:
    result = {"result": {"summary_id": "sum_made_up", "summary_text": "The talk so far."}}
    out = await record_worker_summary(env.ledger, "t_c", result)
    [row] = env.session.store.summaries.list_all()
    assert out["result"]["summary_id"] == row["summary_id"] != "sum_made_up"
    assert row["content"] == "The talk so far."


def test_air_compact_runs_on_the_latest_session(env: Env, tmp_path: Path) -> None:
    import trio

    trio.run(env.fill, 30)
    env.session.close()
    shared = Path(env.project.shared_root)
    cassette(shared / "compact.jsonl", 20)
    (shared / "models.yaml").write_text(
        "default: s/m\nproviders:\n  s:\n    kind: scripted\n    cassette: compact.jsonl\n"
        "    models:\n      m: {}\n"
    )
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    trust_project(env.root, home)
    run_env = {**os.environ, "HOME": str(home)}
    done = air_cli(["compact", "--project", str(env.root)], cwd=env.root, env=run_env)
    assert done.returncode == 0, done.stderr
    assert "24 messages summarised" in done.stdout
    bad = air_cli(
        ["compact", "--project", str(env.root), "--session", "nope"], cwd=env.root, env=run_env
    )
    assert bad.returncode == 2
    assert "Traceback" not in bad.stderr
    assert "air session list" in bad.stderr + bad.stdout
