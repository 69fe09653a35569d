"""The ArchitectureDesigner gate (SDD §14.2, §19.4) on a real session, real Scheduler, real
ToolRegistry and scripted models: the declaration, the four result classes on the plan path
(Main Agent) and on the worker-result path (Scheduler hold before merge / dependents), and
``update_architecture_docs`` through the registry only."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from air.agents import MainAgentState
from air.agents.architecture import (
    AREAS,
    ArchitectureChange,
    ArchitectureDesigner,
    ArchitectureImpact,
    DocumentUpdate,
    SchedulerGate,
    architecture_reference,
    load_declaration,
)
from air.contracts.error import AirException
from air.contracts.task import TaskSpec
from air.contracts.task_results import SchedulerRunResult
from air.nursery.worker_context import document_refusal
from air.testing.fake_runner import FakeStep
from air.testing.recording import RecordingProvider
from tests.agents.conftest import AgentEnv, json_turn, spec, text_turn, wait_until

S = MainAgentState


class Recording(RecordingProvider):
    """The ProviderManager, keeping each request it was asked (to read what the model saw)."""

    def text(self, index: int) -> str:
        request = self.requests[index]
        system = request.system
        parts: list[str] = [system if isinstance(system, str) else ""]
        for message in request.messages:
            parts += [str(getattr(block, "text", "")) for block in message.content]
        return "\n".join(parts)


@pytest.fixture
def env(tmp_path: Path) -> Iterator[AgentEnv]:
    e = AgentEnv(tmp_path)
    (e.root / "ARCHITECTURE.md").write_text("# Architecture\nThe API lives in api/contracts.\n")
    yield e
    e.close()


def plan(*tasks: dict[str, object]) -> dict[str, object]:
    return {"summary": "The plan.", "needs_plan": True, "tasks": list(tasks)}


def impact(result_class: str, summary: str = "finding") -> Any:
    return json_turn({"result_class": result_class, "summary": summary})


def designer(env: AgentEnv, models: Any, **kwargs: Any) -> ArchitectureDesigner:
    return ArchitectureDesigner(
        events=env.session.ingestor,
        models=models,
        project_root=str(env.root),
        session_id=env.session.session_id,
        project_id=env.project.project_id,
        tools=env.registry,
        **kwargs,
    )


# -- the declaration -----------------------------------------------------------------------


def test_the_declaration_file_names_docs_and_areas(env: AgentEnv) -> None:
    shared = env.root / ".air" / "shared"
    (shared / "architecture.yaml").write_text(
        "docs: [design/*.md]\nareas:\n  contracts: [src/api/**]\n  runtime: [src/loop.py]\n"
    )
    d = designer(env, env.cassette())
    assert d.declaration.docs == ("design/*.md",)
    assert d.declaration.doc_roots() == ["design"]
    change = ArchitectureChange(
        origin="worker_result",
        summary="s",
        paths=(
            "src/api/v1/users.py",
            "src/loop.py",
            "design/c4.md",
            "src/util.py",
            "x.schema.json",
        ),
    )
    assert d.triggers(change) == [
        "contracts: src/api/v1/users.py",
        "runtime: src/loop.py",
        "architecture docs: design/c4.md",
        "schemas: x.schema.json",  # an area the file does not name keeps the built-in globs
    ]


@pytest.mark.parametrize(
    "text",
    [
        "docs: [",
        "docs: nope\n",
        "areas:\n  kernels: [a]\n",
        "other: 1\n",
        "docs: [../outside/secret.md]\n",
        "docs: [/etc/passwd]\n",
        "docs: ['~/.ssh/id_rsa']\n",
    ],
)
def test_a_bad_declaration_is_a_config_error(env: AgentEnv, text: str) -> None:
    (env.root / ".air" / "shared" / "architecture.yaml").write_text(text)
    with pytest.raises(AirException) as caught:
        load_declaration(env.root)
    assert caught.value.kind == "config_error"
    action = caught.value.error.user_action or ""
    reference = architecture_reference()
    assert f"(reference: {reference})" in action
    assert Path(reference).is_file()  # the installed package's copy


def test_the_shipped_reference_s_example_is_a_valid_declaration(env: AgentEnv) -> None:
    text = Path(architecture_reference()).read_text(encoding="utf-8")
    example = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    (env.root / ".air" / "shared" / "architecture.yaml").write_text(example)
    declared = load_declaration(env.root)
    assert declared.docs == ("ARCHITECTURE.md", "docs/adr/**")
    assert declared.areas["runtime"] == ("src/scheduler/**",)
    assert set(declared.areas) == set(AREAS)


async def test_a_document_linked_out_of_the_project_never_reaches_the_model(
    env: AgentEnv,
) -> None:
    (env.outside / "secret.md").write_text("TOP-SECRET-KEY\n")
    (env.root / "docs" / "architecture").mkdir(parents=True)
    (env.root / "docs" / "architecture" / "leak.md").symlink_to(env.outside / "secret.md")
    (env.root / "docs" / "architecture" / "c4.md").write_text("# C4 context\n")
    models = Recording(env.cassette(impact("silent_continue")))
    d = designer(env, models)
    await d.assess_impact(ArchitectureChange(origin="plan", summary="s"))
    assert "# C4 context" in models.text(0)
    assert "TOP-SECRET-KEY" not in models.text(0)


async def test_a_document_linked_to_a_protected_file_never_reaches_the_model(
    env: AgentEnv,
) -> None:
    """A task may merge links into the declared docs (``docs/architecture/`` is the project's
    own): one to ``.env``, one to git's config (a remote URL may hold a token), one into air's
    local state. The designer reads what ``fs.read`` would let a worker read, nothing else."""
    (env.root / ".env").write_text("API_TOKEN=TOP-SECRET-ENV\n")
    git_config = env.root / ".git" / "config"
    git_config.write_text(git_config.read_text() + "# TOP-SECRET-GIT\n")
    (env.root / ".air" / "local" / "notes.md").write_text("TOP-SECRET-LOCAL\n")
    docs = env.root / "docs" / "architecture"
    docs.mkdir(parents=True)
    (docs / "env.md").symlink_to("../../.env")
    (docs / "git.md").symlink_to("../../.git/config")
    (docs / "local.md").symlink_to("../../.air/local/notes.md")
    (docs / "c4.md").write_text("# C4 context\n")
    (docs / "same.md").symlink_to("c4.md")
    models = Recording(env.cassette(impact("silent_continue")))
    d = designer(env, models, document_refusal=document_refusal(str(env.root)))
    await d.assess_impact(ArchitectureChange(origin="plan", summary="s"))
    seen = models.text(0)
    assert "# C4 context" in seen
    assert "## docs/architecture/same.md\n# C4 context" in seen  # a link inside is followed
    for secret in ("TOP-SECRET-ENV", "TOP-SECRET-GIT", "TOP-SECRET-LOCAL"):
        assert secret not in seen
    assert "## docs/architecture/env.md\n(left out: it leads to a protected file" in seen


# -- the plan path (Main Agent) -------------------------------------------------------------


async def test_silent_continue_schedules_the_plan(env: AgentEnv) -> None:
    models = Recording(
        env.cassette(
            json_turn({"intent": "task"}),
            json_turn(plan(spec("t_api", "Extend the API", area="api/contracts"))),
            impact("silent_continue", "fits the documented API layer"),
        )
    )
    agent = env.agent(models=models)
    async with env.running(agent):
        await agent.submit("extend the API")
        await wait_until(lambda: "SUMMARIZING" in env.path() and agent.state is S.IDLE)
    assert env.path()[:6] == [
        "IDLE",
        "CLASSIFYING",
        "DELEGATING",
        "ARCHITECTURE_DESIGNING",
        "SCHEDULING",
        "EXECUTING",
    ]
    assert [p["task_spec"]["id"] for p in env.payloads("task.created")] == ["t_api"]
    [done] = env.payloads("architecture.impact.completed")
    assert done["result_class"] == "silent_continue"
    assert done["impacted_task_ids"] == ["t_api"]
    # the designer saw the L4 pack (the declared documents) and the touched area
    seen = models.text(2)
    assert "The API lives in api/contracts." in seen
    assert "contracts: api/contracts" in seen


async def test_requires_user_confirmation_waits_for_the_person(env: AgentEnv) -> None:
    env.cassette(
        json_turn({"intent": "task"}),
        json_turn(plan(spec("t_api", "Rename the API"))),
        impact("requires_user_confirmation", "renames a public contract"),
    )
    agent = env.agent()
    async with env.running(agent):
        await agent.submit("rename the API")
        await wait_until(lambda: agent.state is S.CONFIRMING)
        assert env.payloads("task.created") == []
        assert "Architecture review: renames a public contract" in env.assistant_texts()[-1]
        await agent.submit("no")
        await wait_until(lambda: agent.state is S.IDLE)
    assert env.payloads("task.created") == []
    assert [p["result_class"] for p in env.payloads("architecture.impact.completed")] == [
        "requires_user_confirmation"
    ]


async def test_requires_replan_replans_with_the_finding_then_asks(env: AgentEnv) -> None:
    models = Recording(
        env.cassette(
            json_turn({"intent": "task"}),
            json_turn(plan(spec("t_bad", "Put SQL in the UI"))),
            impact("requires_replan", "storage belongs behind the repository layer"),
            json_turn(plan(spec("t_repo", "Add a repository method"))),
        )
    )
    agent = env.agent(models=models)
    async with env.running(agent):
        await agent.submit("show users")
        await wait_until(lambda: agent.state is S.CONFIRMING)
        assert "[t_repo] Add a repository method" in env.assistant_texts()[-1]
        await agent.submit("yes")
        await wait_until(lambda: "SUMMARIZING" in env.path() and agent.state is S.IDLE)
    assert "storage belongs behind the repository layer" in models.text(3)
    assert [p["task_spec"]["id"] for p in env.payloads("task.created")] == ["t_repo"]
    [done] = env.payloads("architecture.impact.completed")
    assert done["result_class"] == "requires_replan"
    assert done["requirement_id"].startswith("req_")


@pytest.mark.parametrize(
    "answer",
    [
        impact("reject_or_escalate", "breaks the package boundary"),
        text_turn("I am not sure."),  # unreadable: the gate fails closed
        json_turn({"result_class": "ship_it", "summary": "?"}),
    ],
)
async def test_reject_or_escalate_schedules_nothing(env: AgentEnv, answer: Any) -> None:
    env.cassette(json_turn({"intent": "task"}), json_turn(plan(spec("t_x", "Cross it"))), answer)
    agent = env.agent()
    async with env.running(agent):
        await agent.submit("cross the boundary")
        await wait_until(lambda: len(env.path()) > 4 and agent.state is S.IDLE)
    assert env.path() == ["IDLE", "CLASSIFYING", "DELEGATING", "ARCHITECTURE_DESIGNING", "IDLE"]
    assert env.payloads("task.created") == []
    [done] = env.payloads("architecture.impact.completed")
    assert done["result_class"] == "reject_or_escalate"
    assert "rejected this plan" in env.assistant_texts()[-1]


async def test_a_rejected_revision_leaves_the_running_work_alone(env: AgentEnv) -> None:
    env.runner.script["t_long"] = [FakeStep(duration=0.5)]
    env.cassette(
        json_turn({"intent": "task"}),
        json_turn({"summary": "s", "tasks": [spec("t_long", "Long work")]}),
        json_turn({"change_class": "design_interface_goal"}),
        json_turn(plan(spec("t_new", "Drop the event log"))),
        impact("reject_or_escalate", "the event log is the source of truth"),
    )
    agent = env.agent()
    async with env.running(agent):
        await agent.submit("do the long work")
        await wait_until(lambda: env.runner.log.records != [])
        await agent.submit("actually drop the event log")
        await wait_until(lambda: env.path()[-1] == "IDLE" and "SUMMARIZING" in env.path())
    assert env.path()[4:8] == ["EXECUTING", "INTERRUPTING", "ARCHITECTURE_REVISING", "EXECUTING"]
    assert "the event log is the source of truth" in "\n".join(env.assistant_texts())
    assert {r["id"]: r["status"] for r in env.rows("tasks")} == {"t_long": "completed"}


# -- the worker-result path (Scheduler) -----------------------------------------------------


def task(task_id: str, *, after: tuple[str, ...] = ()) -> TaskSpec:
    return TaskSpec.model_validate(spec(task_id, f"Task {task_id}", after=after))


def statuses_of(result: SchedulerRunResult) -> dict[str, str]:
    out = {t: "completed" for t in result.completed_task_ids}
    out.update({t: "blocked" for t in result.blocked_task_ids})
    out.update({t: "failed" for t in result.failed_task_ids})
    out.update({t: "cancelled" for t in result.cancelled_task_ids})
    return out


async def run_gated(
    env: AgentEnv, answers: list[Any], confirm: Any = None
) -> tuple[dict[str, str], list[str]]:
    env.runner.script["t_a"] = [FakeStep(duration=0.05, changed_files=("air/contracts/x.py",))]
    env.runner.script["t_b"] = [FakeStep(duration=0.05, changed_files=("src/y.py",))]
    env.scheduler.architecture_gate = SchedulerGate(designer(env, env.cassette(*answers)), confirm)
    await env.scheduler.create_tasks([task("t_a"), task("t_b", after=("t_a",))])
    async with env.session.bus.serving():
        result = await env.scheduler.run_until_idle()
    statuses = statuses_of(result)
    order = [
        e.type if e.type.startswith("architecture.") else f"{e.type}:{e.payload['task_id']}"
        for e in env.events()
        if e.type.startswith(("architecture.", "task.started", "task.completed", "task.blocked"))
    ]
    return statuses, order


async def test_a_contract_change_is_held_until_silent_continue(env: AgentEnv) -> None:
    statuses, order = await run_gated(env, [impact("silent_continue")])
    assert statuses == {"t_a": "completed", "t_b": "completed"}
    # held: t_a ends, and t_b starts, only after the class is known; t_b touches no area
    assert order == [
        "task.started:t_a",
        "architecture.impact.completed",
        "task.completed:t_a",
        "task.started:t_b",
        "task.completed:t_b",
    ]


@pytest.mark.parametrize("answer", [True, False])
async def test_requires_user_confirmation_proceeds_only_when_confirmed(
    env: AgentEnv, answer: bool
) -> None:
    asked: list[ArchitectureImpact] = []

    async def confirm(found: ArchitectureImpact) -> bool:
        asked.append(found)
        return answer

    statuses, _ = await run_gated(env, [impact("requires_user_confirmation")], confirm)
    assert [a.triggers for a in asked] == [("contracts: air/contracts/x.py",)]
    if answer:
        assert statuses == {"t_a": "completed", "t_b": "completed"}
    else:
        assert statuses["t_a"] == "blocked"
        assert statuses["t_b"] != "completed"


@pytest.mark.parametrize(
    "answers",
    [
        [impact("requires_user_confirmation")],  # nobody to ask: fails closed
        [impact("requires_replan", "needs a new plan")],
        [impact("reject_or_escalate", "breaks the event contract")],
        [],  # the model call fails: fails closed
    ],
)
async def test_a_held_result_is_blocked_and_its_dependents_never_run(
    env: AgentEnv, answers: list[Any]
) -> None:
    statuses, order = await run_gated(env, answers)
    assert statuses["t_a"] == "blocked"
    assert statuses["t_b"] != "completed"
    assert "task.started:t_b" not in order
    [blocked] = env.payloads("task.blocked")[:1]
    assert blocked["reason"].startswith("architecture gate (")
    assert [e.type for e in env.events() if e.type == "architecture.impact.completed"] == [
        "architecture.impact.completed"
    ]


async def test_a_result_outside_the_architecture_needs_no_model_call(env: AgentEnv) -> None:
    env.runner.script["t_a"] = [FakeStep(duration=0.05, changed_files=("src/a.py",))]
    env.scheduler.architecture_gate = SchedulerGate(designer(env, env.cassette()))
    await env.scheduler.create_tasks([task("t_a")])
    async with env.session.bus.serving():
        result = await env.scheduler.run_until_idle()
    assert statuses_of(result) == {"t_a": "completed"}
    assert env.payloads("architecture.impact.completed") == []


# -- update_architecture_docs ---------------------------------------------------------------


async def test_update_architecture_docs_writes_through_the_registry(env: AgentEnv) -> None:
    d = designer(env, env.cassette())
    run_id = await d.update_architecture_docs(
        DocumentUpdate(path="docs/adr/0002-repos.md", content="# ADR 2\n", summary="ADR 2")
    )
    assert (env.root / "docs" / "adr" / "0002-repos.md").read_text() == "# ADR 2\n"
    [updated] = env.payloads("architecture.plan.updated")
    assert updated["plan_ref"] == "docs/adr/0002-repos.md"
    assert [r["id"] for r in env.rows("tool_runs")] == [run_id]


@pytest.mark.parametrize("path", ["src/app.py", "../outside/x.md", ".git/config"])
async def test_update_architecture_docs_is_refused_outside_the_registry_permissions(
    env: AgentEnv, path: str
) -> None:
    d = designer(env, env.cassette())
    with pytest.raises(AirException) as caught:
        await d.update_architecture_docs(DocumentUpdate(path=path, content="x", summary="s"))
    assert caught.value.kind in ("permission_denied", "validation_error")
    assert not (env.root / path).exists() or path == ".git/config"
    assert (env.root / ".git" / "config").read_text() != "x"
    assert env.payloads("architecture.plan.updated") == []
    # the refusal is the registry's PermissionEngine's: it recorded its decision
    [decision] = env.payloads("permission.decision.recorded")
    assert decision["decision"]["action"] in ("deny", "block")
    assert decision["subject"]


async def test_update_architecture_docs_without_a_registry_refuses(env: AgentEnv) -> None:
    d = designer(env, env.cassette())
    d.tools = None
    with pytest.raises(AirException) as caught:
        await d.update_architecture_docs(
            DocumentUpdate(path="ARCHITECTURE.md", content="x", summary="s")
        )
    assert caught.value.kind == "config_error"
    assert "The API lives" in (env.root / "ARCHITECTURE.md").read_text()
    await trio.lowlevel.checkpoint()
