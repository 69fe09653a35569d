"""ContextAssembler over a real project tree and a real session DB (SQLite)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from air.context import (
    ContextAssembler,
    PromptLayerLoader,
    SessionReaders,
    readers_from_store,
    render_layer,
)
from air.context.tokens import estimate_tokens
from air.contracts.error import AirException, ErrorKind
from air.contracts.ids import new_id
from air.contracts.project import ProjectContext
from air.contracts.runtime import AgentType, ContextAssembleInput, PromptLayerLevel
from air.contracts.task import TaskContextRefs, TaskScope, TaskSpec, TaskType, VerificationPolicy
from air.store.repositories import SessionStore

SID = "ses_TEST"
TASK = "task_TEST"
NOW = "2026-01-01T00:00:00.000000Z"


def spec(**refs: Any) -> TaskSpec:
    return TaskSpec(
        id=TASK,
        type=TaskType.EXECUTE,
        title="Fix the tokenizer",
        description="Make the tokenizer accept empty input.",
        acceptance_criteria=["empty input gives []", "tests pass"],
        scope=TaskScope(write_area=["src/**"]),
        verification=VerificationPolicy(commands=["pytest -q"], required=True),
        context_refs=TaskContextRefs(**refs),
    )


def fill_session(store: SessionStore) -> None:
    """Rows as the event projections write them."""
    for seq, (role, content) in enumerate(
        [
            ("user", [{"type": "text", "text": "Please fix the tokenizer."}]),
            (
                "assistant",
                [
                    {
                        "type": "tool_use",
                        "id": "tu1",
                        "name": "fs.read",
                        "input": {"path": "src/tok.py"},
                    }
                ],
            ),
            ("user", [{"type": "tool_result", "tool_use_id": "tu1", "content": "def tok(): ..."}]),
            ("assistant", [{"type": "text", "text": "Found it: the loop assumes one token."}]),
        ],
        start=1,
    ):
        store.messages.insert(
            {
                "id": f"msg_{seq}",
                "session_id": SID,
                "role": role,
                "content_json": json.dumps(content),
                "event_seq": seq,
                "created_at": NOW,
            }
        )
    store.messages.insert(
        {
            "id": "msg_other",
            "session_id": "ses_OTHER",
            "role": "user",
            "content_json": json.dumps("other session"),
            "event_seq": 9,
            "created_at": NOW,
        }
    )
    store.tool_runs.insert(
        {
            "id": "tr_1",
            "session_id": SID,
            "task_id": TASK,
            "tool_name": "fs.read",
            "status": "ok",
            "input_json": "{}",
            "output_summary": "read 40 lines",
            "duration_ms": 3,
            "started_at": "2026-01-01T00:00:01Z",
        }
    )
    store.command_runs.insert(
        {
            "id": "cr_1",
            "session_id": SID,
            "task_id": TASK,
            "command": "pytest -q",
            "cwd": "/w",
            "exit_code": 1,
            "duration_ms": 900,
            "started_at": "2026-01-01T00:00:02Z",
            "completed_at": "2026-01-01T00:00:03Z",
            "stdout_artifact_id": "art_OUT",
        }
    )
    store.command_runs.insert(
        {
            "id": "cr_2",
            "session_id": SID,
            "task_id": "task_OTHER",
            "command": "make",
            "cwd": "/w",
            "started_at": "2026-01-01T00:00:02Z",
        }
    )
    store.evidence.insert(
        {
            "evidence_ref_id": "evd_1",
            "session_id": SID,
            "kind": "test_output",
            "ref": "cr_1",
            "claim": "tests fail before the fix",
            "entity_type": "task",
            "entity_id": TASK,
            "created_at": NOW,
        }
    )


def write_permissions(project: ProjectContext, home_air: Path) -> None:
    (home_air / "permissions.yaml").write_text(
        "rules:\n  - action: deny\n    command: 'git push*'\n    reason: no pushing\n"
    )
    (Path(project.shared_root) / "permissions.yaml").write_text(
        "headless_allow_ask: true\nrules:\n  - action: allow\n    category: network\n"
    )


def assembler(
    project: ProjectContext, home_air: Path, store: SessionStore | None = None, **kwargs: Any
) -> ContextAssembler:
    return ContextAssembler(
        project=project,
        readers=readers_from_store(store) if store is not None else None,
        user_air_dir=home_air,
        **kwargs,
    )


def inp(budget: int = 100_000, **kwargs: Any) -> ContextAssembleInput:
    defaults: dict[str, Any] = {"agent_type": AgentType.EXECUTOR, "task_spec": spec()}
    defaults.update(kwargs)
    return ContextAssembleInput(
        session_id=SID, project_id="prj_test", token_budget=budget, **defaults
    )


async def test_all_layers_in_order_from_real_sources(
    project: ProjectContext, home_air: Path, session_store: SessionStore
) -> None:
    fill_session(session_store)
    write_permissions(project, home_air)
    (Path(project.shared_root) / "rules" / "project-rules.md").write_text("Keep functions small.")
    (Path(project.project_root) / "docs").mkdir()
    (Path(project.project_root) / "docs" / "arch.md").write_text("Tokenizer -> Parser -> AST")
    (Path(project.shared_root) / "plan" / "plan.md").write_text("1. tokenizer 2. parser")
    artifacts = {"art_LOG": "build log: 2 warnings"}
    ctx = await assembler(project, home_air, session_store, artifact_reader=artifacts.get).assemble(
        inp(
            task_spec=spec(arc_ref="docs/arch.md", plan_ref="plan.md", artifacts=["art_LOG"]),
            user_instruction="Keep the public API.",
            system_debug="Log every tool decision.",
        )
    )
    levels = [layer.level for layer in ctx.layers]
    order = list(PromptLayerLevel)
    assert levels == sorted(levels, key=order.index)
    assert set(levels) == set(PromptLayerLevel)
    assert ctx.omitted == []
    assert not ctx.compaction_requested
    assert ctx.canonical_format == "anthropic"
    # system = L0-L3; one user message with L4-L9 as text blocks, in order
    assert ctx.system.startswith("## [L0 runtime_invariant]")
    assert "## [L1 role]" in ctx.system
    assert "## [L2 safety]" in ctx.system
    assert "Keep functions small." in ctx.system
    assert [m["role"] for m in ctx.messages] == ["user"]
    texts = [block["text"] for block in ctx.messages[0]["content"]]
    assert all(block["type"] == "text" for block in ctx.messages[0]["content"])
    joined = "\n".join(texts)
    for needle in [
        "Tokenizer -> Parser -> AST",  # L4 arc_ref (project file)
        "1. tokenizer 2. parser",  # L4 plan_ref (.air/shared/plan)
        "Write area: src/**",  # L5
        "build log: 2 warnings",  # L6 artifact
        "[test_output] tests fail before the fix (cr_1)",  # L6 evidence row
        "user: Please fix the tokenizer.",  # L7
        "[tool_use fs.read id=tu1]",
        "[tool_result for tu1] def tok(): ...",
        "tool fs.read [ok] 3 ms:\nread 40 lines",  # L8
        "$ pytest -q  (in /w)\n→ error (exit 1), 900 ms",
        "Make the tokenizer accept empty input.",  # L9
        "- empty input gives []",
        "Instruction: Keep the public API.",
        "Log every tool decision.",
    ]:
        assert needle in joined, needle
    assert "other session" not in joined
    assert "$ make" not in joined
    assert texts[-1].startswith("## [L9 system_debug]")
    # L2 summarises both permission files
    safety = next(x for x in ctx.layers if x.level is PromptLayerLevel.SAFETY).content
    assert "- deny command=git push* — no pushing" in safety
    assert "- allow category=network" in safety
    assert "headless runs may take actions that need approval" in safety
    # the estimate is the sum of the rendered layers
    assert ctx.token_estimate == sum(x.token_estimate or 0 for x in ctx.layers)


async def test_conversation_is_limited_to_the_most_recent_messages(
    project: ProjectContext, home_air: Path, session_store: SessionStore
) -> None:
    fill_session(session_store)
    ctx = await assembler(project, home_air, session_store, conversation_limit=2).assemble(inp())
    refs = [x.source_ref for x in ctx.layers if x.level is PromptLayerLevel.CONVERSATION]
    assert refs == ["message:msg_3", "message:msg_4"]


async def test_pressure_drops_low_priority_layers_and_reports_them(
    project: ProjectContext, home_air: Path, session_store: SessionStore
) -> None:
    fill_session(session_store)
    full = await assembler(project, home_air, session_store).assemble(inp())
    conversation = [x for x in full.layers if x.level is PromptLayerLevel.CONVERSATION]
    budget = full.token_estimate - sum(x.token_estimate or 0 for x in conversation)
    ctx = await assembler(project, home_air, session_store).assemble(inp(budget=budget))
    assert ctx.token_estimate <= budget
    assert {o.level for o in ctx.omitted} == {PromptLayerLevel.CONVERSATION}
    assert sorted(o.source_ref or "" for o in ctx.omitted) == [
        f"message:msg_{i}" for i in range(1, 5)
    ]
    assert all(o.reason == "budget" for o in ctx.omitted)
    # dropping conversation asks for compaction (the history would otherwise be lost)
    assert ctx.compaction_requested
    assert PromptLayerLevel.TOOL_OUTPUT in {x.level for x in ctx.layers}


async def test_immutable_layers_are_kept_when_over_budget_and_compaction_is_requested(
    project: ProjectContext, home_air: Path
) -> None:
    ctx = await assembler(project, home_air).assemble(inp(budget=50))
    levels = {x.level for x in ctx.layers}
    assert levels == {
        PromptLayerLevel.RUNTIME_INVARIANT,
        PromptLayerLevel.ROLE,
        PromptLayerLevel.SAFETY,
    }
    assert ctx.token_estimate > 50
    assert ctx.compaction_requested
    assert {o.level for o in ctx.omitted} >= {
        PromptLayerLevel.TASK_SPEC,
        PromptLayerLevel.USER_OVERRIDE,
    }
    assert ctx.messages == []


async def test_dropping_the_task_spec_requests_compaction_even_without_history(
    project: ProjectContext, home_air: Path
) -> None:
    full = await assembler(project, home_air).assemble(inp())
    l5 = [x for x in full.layers if x.level is PromptLayerLevel.TASK_SPEC]
    assert len(l5) == 1
    budget = full.token_estimate - (l5[0].token_estimate or 0) // 2
    ctx = await assembler(project, home_air).assemble(inp(budget=budget))
    # L9 (the immediate instruction) outranks L5, so the task spec is what goes
    assert [o.level for o in ctx.omitted] == [PromptLayerLevel.TASK_SPEC]
    assert ctx.messages[0]["content"][-1]["text"].startswith("## [L9 user_override]")
    assert ctx.token_estimate <= budget
    assert ctx.compaction_requested


async def test_missing_refs_are_reported_as_omissions(
    project: ProjectContext, home_air: Path
) -> None:
    ctx = await assembler(project, home_air).assemble(
        inp(task_spec=spec(arc_ref="docs/nope.md", artifacts=["art_MISSING"]))
    )
    assert [(o.level, o.source_ref, o.reason.split(":")[0]) for o in ctx.omitted] == [
        (PromptLayerLevel.ARCHITECTURE, "docs/nope.md", "not_found"),
        (PromptLayerLevel.EVIDENCE, "art_MISSING", "no_artifact_reader"),
    ]
    assert not ctx.compaction_requested


async def test_architecture_directory_ref_reads_all_markdown(
    project: ProjectContext, home_air: Path
) -> None:
    adr = Path(project.shared_root) / "plan" / "docs"
    adr.mkdir()
    (adr / "adr-001.md").write_text("Use Trio.")
    (adr / "adr-002.md").write_text("Use SQLite.")
    ctx = await assembler(project, home_air).assemble(inp(task_spec=spec(arc_ref="docs")))
    arch = [x for x in ctx.layers if x.level is PromptLayerLevel.ARCHITECTURE]
    assert len(arch) == 1
    assert arch[0].source_ref == ".air/shared/plan/docs"
    assert arch[0].content.index("Use Trio.") < arch[0].content.index("Use SQLite.")


async def test_ref_outside_the_project_is_refused(
    project: ProjectContext, home_air: Path, tmp_path: Path
) -> None:
    (tmp_path / "secret.md").write_text("outside")
    for ref in ["../secret.md", str(tmp_path / "secret.md")]:
        with pytest.raises(AirException) as info:
            await assembler(project, home_air).assemble(inp(task_spec=spec(arc_ref=ref)))
        assert info.value.kind is ErrorKind.VALIDATION_ERROR
        assert info.value.user_action


async def test_a_document_of_a_ref_directory_that_links_out_is_refused(
    project: ProjectContext, home_air: Path, tmp_path: Path
) -> None:
    """An architecture directory the project ships may hold ``notes.md -> ~/.aws/credentials``:
    its text never reaches a prompt."""
    secret = tmp_path / "credentials"
    secret.write_text("aws_secret_access_key = planted\n")
    docs = Path(project.project_root) / "docs" / "arch"
    docs.mkdir(parents=True)
    (docs / "overview.md").write_text("Tokenizer -> Parser")
    (docs / "notes.md").symlink_to(secret)
    with pytest.raises(AirException) as info:
        await assembler(project, home_air).assemble(inp(task_spec=spec(arc_ref="docs/arch")))
    assert info.value.kind is ErrorKind.VALIDATION_ERROR
    assert "notes.md" in info.value.error.message
    assert "planted" not in str(info.value.error.model_dump())
    # a link that stays inside the project is read where it leads
    (docs / "notes.md").unlink()
    (docs / "notes.md").symlink_to(Path(project.project_root) / "README.md")
    (Path(project.project_root) / "README.md").write_text("the readme")
    ctx = await assembler(project, home_air).assemble(inp(task_spec=spec(arc_ref="docs/arch")))
    [arch] = [x for x in ctx.layers if x.level is PromptLayerLevel.ARCHITECTURE]
    assert "the readme" in arch.content
    assert "Tokenizer -> Parser" in arch.content


async def test_large_context_goes_to_a_messages_artifact(
    project: ProjectContext, home_air: Path, tmp_path: Path
) -> None:
    store_dir = tmp_path / "artifacts"
    store_dir.mkdir()
    written: list[str] = []

    def writer(content: bytes, slug: str) -> str:
        artifact_id = new_id("art")
        (store_dir / f"{artifact_id}-{slug}.json").write_bytes(content)
        written.append(artifact_id)
        return artifact_id

    (Path(project.shared_root) / "rules" / "big.md").write_text("rule line\n" * 400)
    small = await assembler(project, home_air, artifact_writer=writer).assemble(inp())
    assert small.messages_artifact_id is None
    assert small.messages
    assert written == []

    ctx = await assembler(
        project, home_air, artifact_writer=writer, inline_limit_tokens=500
    ).assemble(inp())
    assert ctx.messages_artifact_id == written[0]
    assert ctx.messages == []
    assert all(layer.content is None for layer in ctx.layers)
    stored = json.loads(next(store_dir.iterdir()).read_text())
    assert stored["canonical_format"] == "anthropic"
    assert stored["system"] == ctx.system
    assert stored["messages"] == small.messages
    assert "Make the tokenizer accept empty input." in stored["messages"][0]["content"][-1]["text"]


async def test_runtime_role_prompt_and_no_task(project: ProjectContext, home_air: Path) -> None:
    ctx = await assembler(project, home_air).assemble(
        inp(
            agent_type=None,
            task_spec=None,
            purpose="main",
            role_prompt="You are the Main Agent.",
            user_instruction="hello",
        )
    )
    role = next(x for x in ctx.layers if x.level is PromptLayerLevel.ROLE)
    assert role.content == "You are the Main Agent."
    assert role.source_ref == "runtime:main"
    assert (
        ctx.messages[0]["content"][-1]["text"] == "## [L9 user_override] user\nInstruction: hello"
    )


async def test_task_spec_as_json_and_injected_readers(
    project: ProjectContext, home_air: Path
) -> None:
    rows = [{"id": "m1", "role": "user", "content": [{"type": "text", "text": "plain row"}]}]
    readers = SessionReaders(messages=lambda sid: rows if sid == SID else [])
    ctx = await ContextAssembler(
        project=project,
        loader=PromptLayerLoader(role_prompt_source=lambda role: f"custom {role.value}"),
        readers=readers,
        user_air_dir=home_air,
    ).assemble(inp(task_spec=spec().model_dump(mode="json")))
    assert "custom executor" in ctx.system
    conversation = [
        b["text"] for b in ctx.messages[0]["content"] if b["text"].startswith("## [L7 ")
    ]
    assert conversation == ["## [L7 conversation] message:m1\nuser: plain row"]


async def test_bad_inputs_are_air_errors(project: ProjectContext, home_air: Path) -> None:
    with pytest.raises(AirException) as info:
        await assembler(project, home_air).assemble(inp(task_spec={"id": "x"}))
    assert info.value.kind is ErrorKind.VALIDATION_ERROR
    assert info.value.user_action
    with pytest.raises(AirException) as info:
        await assembler(project, home_air).assemble(inp(budget=-1))
    assert info.value.kind is ErrorKind.VALIDATION_ERROR
    (home_air / "permissions.yaml").write_text("rules: [unclosed\n")
    with pytest.raises(AirException) as info:
        await assembler(project, home_air).assemble(inp())
    assert info.value.kind is ErrorKind.CONFIG_ERROR
    assert info.value.user_action
    assert "permissions.yaml" in info.value.user_action
    (home_air / "permissions.yaml").write_text("rules:\n  - just a string\n")
    with pytest.raises(AirException) as info:
        await assembler(project, home_air).assemble(inp())
    assert info.value.kind is ErrorKind.CONFIG_ERROR


def test_layer_estimates_use_the_documented_estimator(
    project: ProjectContext, home_air: Path
) -> None:
    ctx = assembler(project, home_air).assemble_now(inp())
    for layer in ctx.layers:
        assert layer.token_estimate == estimate_tokens(render_layer(layer))
