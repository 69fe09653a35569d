"""The architecture gate of headless runs (issue #14 item 3, SDD §19.4, IMPL-COMPACT-3): a project
that declares ``.air/shared/architecture.yaml`` has every worker result that touches a declared
area held at the ArchitectureDesigner's gate; with nobody to ask the policy is fail closed.
Real workers (sandboxed, in worktrees) write a contract file; the designer's verdict is scripted
on a model server over HTTP: ``silent_continue`` merges, ``requires_user_confirmation`` /
``requires_replan`` / ``reject_or_escalate`` block the task (unmerged, dependents never run)
with a reason saying what to do; without the file there is no gate and no extra model call."""

from __future__ import annotations

import io
import json
import os
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import trio

from air.cli.factory import DESIGNER_CASSETTE, RuntimeFactory, _architecture_gate
from air.cli.options import HeadlessOptions
from air.contracts.error import AirException
from air.contracts.prompt import FailClosedPrompt
from air.contracts.task import TaskSpec
from air.llm.task_cassettes import TaskCassettes
from air.nursery import attempt, outcomes
from air.nursery.ledger import fold_history
from air.nursery.runtime import open_runtime
from tests.forked_air import air_cli
from tests.gitrepo import git
from tests.llm.servers import LocalServer, Reply, Turn, anthropic_sse
from tests.trusted import trust_project

CONTRACT = "src/contracts/api.py"
DECLARATION = "docs: [docs/architecture.md]\nareas:\n  contracts: ['src/contracts/**']\n"


def _final() -> str:
    block = json.dumps(
        {"status": "completed", "summary": "wrote the contract", "result": {"changes_made": True}}
    )
    return f"Done.\n```json:result\n{block}\n```\n"


class Model:
    """Workers write the contract file then finish; the designer answers ``verdict``."""

    def __init__(self, verdict: str) -> None:
        self.verdict = verdict
        self.designer_calls = 0
        self.designer_systems: list[str] = []
        self.worker_tasks: list[str] = []

    def __call__(self, wire: str, body: dict[str, Any]) -> Reply:
        system = json.dumps(body.get("system"))
        if "result_class" in system:
            self.designer_calls += 1
            self.designer_systems.append(system)
            answer = {"result_class": self.verdict, "summary": f"VERDICT-{self.verdict}"}
            return Reply(chunks=anthropic_sse(Turn(text=[json.dumps(answer)])))
        first = json.dumps(body["messages"][0])
        self.worker_tasks.append("t_after" if "t_after" in first else "t_api")
        if not any(m.get("role") == "assistant" for m in body["messages"]):
            tool = next(str(t["name"]) for t in body["tools"] if "write" in str(t["name"]))
            content = json.dumps({"path": CONTRACT, "content": "API_VERSION = 2\n"})
            return Reply(
                chunks=anthropic_sse(Turn(tool=("tu_1", tool, [content]), stop="tool_use"))
            )
        return Reply(chunks=anthropic_sse(Turn(text=[_final()])))


def _project(tmp: Path, url: str, *, declare: bool) -> Path:
    root = tmp / "proj"
    (root / "src" / "contracts").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "src" / "contracts" / "api.py").write_text("API_VERSION = 1\n")
    (root / "docs" / "architecture.md").write_text("# Architecture\nThe API is versioned.\n")
    for args in (
        ("init", "-q"),
        ("config", "user.email", "t@example.com"),
        ("config", "user.name", "T"),
        ("add", "-A"),
        ("commit", "-qm", "init"),
    ):
        git(root, *args)
    shared = root / ".air" / "shared"
    shared.mkdir(parents=True)
    (shared / "models.yaml").write_text(
        "default: local/claude-test\nproviders:\n  local:\n    kind: anthropic\n"
        f"    base_url: {url}\n    auth_ref: AIR_TEST_PROVIDER_KEY\n    models:\n"
        "      claude-test: {context_window: 32768, max_output_tokens: 4096}\n"
    )
    if declare:
        (shared / "architecture.yaml").write_text(DECLARATION)
    trust_project(root)  # the test's HOME (the env fixture)
    return root


def _specs() -> list[TaskSpec]:
    api = TaskSpec(
        id="t_api",
        type="execute",
        title="Bump the API",
        description="Set API_VERSION to 2.",
        scope={"write_area": ["src/contracts"]},
    )
    after = TaskSpec(
        id="t_after",
        type="execute",
        title="Use the API",
        description="Use the new API.",
        dependencies=[{"depends_on_task_id": "t_api"}],
    )
    return [api, after]


async def _run(root: Path, only_first: bool = False) -> tuple[Any, list[Any], Any]:
    options = HeadlessOptions(project=str(root), stderr=io.StringIO(), max_workers=1)
    with trio.fail_after(180):
        async with open_runtime(RuntimeFactory(options).create(resume=False)) as rt:
            gate = rt.scheduler.architecture_gate
            await rt.submit(_specs()[:1] if only_first else _specs())
            result = await rt.run_until_idle()
            events = rt.ledger.history()
    return result, events, gate


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("AIR_TEST_PROVIDER_KEY", "k-test")
    return tmp_path


async def test_silent_continue_merges(env: Path) -> None:
    model = Model("silent_continue")
    with LocalServer(model=model) as server:
        root = _project(env, server.url, declare=True)
        result, events, _ = await _run(root, only_first=True)
    assert str(result.status) == "completed"
    assert model.designer_calls == 1
    assert (root / CONTRACT).read_text() == "API_VERSION = 2\n"  # merged
    [impact] = [e.payload for e in events if e.type == "architecture.impact.completed"]
    assert impact["result_class"] == "silent_continue"


@pytest.mark.parametrize(
    ("verdict", "says"),
    [
        ("requires_user_confirmation", "a headless run has nobody to ask"),
        ("requires_replan", "the plan must change to fit the architecture"),
        ("reject_or_escalate", "the architecture review rejected the change"),
    ],
)
async def test_a_held_verdict_blocks_the_task_unmerged(env: Path, verdict: str, says: str) -> None:
    model = Model(verdict)
    with LocalServer(model=model) as server:
        root = _project(env, server.url, declare=True)
        result, events, _ = await _run(root)
    assert str(result.status) == "blocked"
    assert model.designer_calls == 1
    assert (root / CONTRACT).read_text() == "API_VERSION = 1\n"  # not merged
    assert "t_after" not in model.worker_tasks  # the dependent never ran
    folded = fold_history(events)
    assert folded.tasks["t_api"].status.value == "blocked"
    assert folded.tasks["t_after"].status.value != "completed"
    [blocked] = [
        e.payload
        for e in events
        if e.type == "task.blocked" and e.payload.get("task_id") == "t_api"
    ]
    assert blocked["reason"].startswith(f"architecture gate ({verdict}): VERDICT-{verdict}")
    assert says in blocked["reason"]
    # the held change stays on its branch; its worktree is set aside for the retention
    set_aside = [e.payload["reason"] for e in events if e.type == "workspace.abandoned"]
    assert set_aside == ["held at the architecture gate"]
    [impact] = [e.payload for e in events if e.type == "architecture.impact.completed"]
    assert impact["result_class"] == verdict
    changed = [e.payload for e in events if e.type == "requirement.changed"]
    if verdict == "requires_replan":
        assert [c["impacted_task_ids"] for c in changed] == [["t_api"]]
        assert changed[0]["requirement_id"] == impact["requirement_id"]
    else:
        assert changed == []


async def test_the_designer_reads_no_protected_file_through_a_declared_document(
    env: Path,
) -> None:
    """A declared documents directory holding a link to ``.env`` (a task may merge one): the
    designer's request names it left out and never carries the file's text."""
    model = Model("silent_continue")
    with LocalServer(model=model) as server:
        root = _project(env, server.url, declare=True)
        (root / ".air" / "shared" / "architecture.yaml").write_text(
            DECLARATION.replace("[docs/architecture.md]", "[docs/architecture.md, docs/design]")
        )
        trust_project(root)
        (root / ".env").write_text("API_TOKEN=planted-4b1d9e\n")
        (root / "docs" / "design").mkdir()
        (root / "docs" / "design" / "env.md").symlink_to("../../.env")
        (root / "docs" / "design" / "c4.md").write_text("# C4 context\n")
        result, _, _ = await _run(root, only_first=True)
    assert str(result.status) == "completed"
    [system] = model.designer_systems
    assert "# C4 context" in system
    assert "## docs/design/env.md\\n(left out: it leads to a protected file" in system
    assert "planted-4b1d9e" not in system


async def test_no_declaration_no_gate_no_extra_model_call(env: Path) -> None:
    model = Model("reject_or_escalate")
    with LocalServer(model=model) as server:
        root = _project(env, server.url, declare=False)
        result, events, gate = await _run(root, only_first=True)
    assert gate is None
    assert str(result.status) == "completed"
    assert model.designer_calls == 0
    assert not [e for e in events if e.type.startswith("architecture.")]
    assert (root / CONTRACT).read_text() == "API_VERSION = 2\n"


def test_per_task_cassettes_need_the_reviews_cassette(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / ".air" / "shared").mkdir(parents=True)
    (root / ".air" / "shared" / "architecture.yaml").write_text(DECLARATION)
    cassettes = tmp_path / "cassettes"
    cassettes.mkdir()
    session = SimpleNamespace(
        project=SimpleNamespace(project_root=str(root), project_id="p"),
        session_id="s",
        ingestor=None,
    )
    services = SimpleNamespace(provider=TaskCassettes(str(cassettes)))
    with pytest.raises(AirException) as refused:
        _architecture_gate(session, services, None, FailClosedPrompt(), headless=True)
    assert refused.value.error.kind == "config_error"
    assert DESIGNER_CASSETTE in refused.value.error.message
    (cassettes / DESIGNER_CASSETTE).write_text("")
    assert _architecture_gate(session, services, None, FailClosedPrompt(), headless=True)


def test_air_run_headless_refuses_cassettes_without_the_review(tmp_path: Path) -> None:
    """The real command: a project declaring its architecture, per-task cassettes without the
    review's: exit 2, no traceback, what to do, and no session created."""
    proj, home = tmp_path / "proj", tmp_path / "home"
    home.mkdir()
    (proj / ".air" / "shared").mkdir(parents=True)
    (proj / ".air" / "shared" / "architecture.yaml").write_text(DECLARATION)
    (proj / "batch.yaml").write_text("version: 1\ntasks:\n  - id: a\n    title: Fix it\n")
    (proj / "cassettes").mkdir()
    (proj / "cassettes" / "a.jsonl").write_text(
        '{"content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn"}\n'
    )
    git(proj, "init", "-q")
    trust_project(proj, home)
    done = air_cli(
        ["run", "--headless", "batch.yaml", "--cassette", "cassettes"],
        cwd=proj,
        env={**os.environ, "HOME": str(home)},
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert DESIGNER_CASSETTE in done.stderr
    assert "what to do:" in done.stderr
    assert not (proj / ".air" / "local" / "sessions").exists() or not os.listdir(
        proj / ".air" / "local" / "sessions"
    )


class SlowDesigner(Model):
    """The designer answers only after ``delay_s`` (a large model reading the documents), or
    when ``released`` is set."""

    def __init__(self, verdict: str, delay_s: float) -> None:
        super().__init__(verdict)
        self.delay_s = delay_s
        self.asked = threading.Event()
        self.released = threading.Event()

    def __call__(self, wire: str, body: dict[str, Any]) -> Reply:
        if "result_class" in json.dumps(body.get("system")):
            self.asked.set()
            self.released.wait(self.delay_s)
        return super().__call__(wire, body)


async def test_a_designer_slower_than_a_record_still_lands_the_change(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gate ran under the shielded grace of a record (10 s): a designer that took longer
    had its call cut, and the task never ended — no end event, its change never merged."""
    monkeypatch.setattr(attempt, "RECORD_GRACE", 1.0)  # records take milliseconds
    monkeypatch.setattr(outcomes, "RECORD_GRACE", 1.0)
    model = SlowDesigner("silent_continue", delay_s=3.0)
    with LocalServer(model=model) as server:
        root = _project(env, server.url, declare=True)
        result, events, _ = await _run(root, only_first=True)
    assert str(result.status) == "completed"
    assert (root / CONTRACT).read_text() == "API_VERSION = 2\n"  # merged
    ends = [e.type for e in events if e.type.startswith("task.") and e.type != "task.created"]
    assert ends == ["task.started", "task.completed"]


async def test_a_run_cancelled_at_the_gate_records_the_task_interrupted(env: Path) -> None:
    model = SlowDesigner("silent_continue", delay_s=60.0)
    with LocalServer(model=model) as server:
        root = _project(env, server.url, declare=True)
        options = HeadlessOptions(project=str(root), stderr=io.StringIO(), max_workers=1)
        try:
            with trio.fail_after(60):  # the designer's 60 s are never waited for
                async with open_runtime(RuntimeFactory(options).create(resume=False)) as rt:
                    await rt.submit(_specs()[:1])
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(rt.run_until_idle)
                        await trio.to_thread.run_sync(model.asked.wait)
                        rt.cancel("the person pressed Ctrl-C")
                    events = rt.ledger.history()
        finally:
            model.released.set()
    [ended] = [e for e in events if e.type == "task.interrupted"]
    assert ended.payload["reason"] == "cancelled while its change was at the architecture gate"
    assert fold_history(events).tasks["t_api"].status.value == "interrupted"
    assert (root / CONTRACT).read_text() == "API_VERSION = 1\n"  # nothing merged
