"""PromptLayerLoader: L0 invariant, L1 role prompts (injected or built-in), L3 rules, L5 task."""

from __future__ import annotations

from pathlib import Path

import pytest

from air.context import PromptLayerLoader
from air.contracts.error import AirException, ErrorKind
from air.contracts.project import ProjectContext
from air.contracts.runtime import AgentType, PromptLayerLevel
from air.contracts.task import TaskContextRefs, TaskScope, TaskSpec, TaskType, VerificationPolicy


def test_runtime_invariant_is_immutable_builtin_text() -> None:
    layer = PromptLayerLoader().load_runtime_invariant()
    assert layer.level is PromptLayerLevel.RUNTIME_INVARIANT
    assert layer.immutable is True
    assert "permission engine" in layer.content
    assert layer.source_ref == "builtin:runtime_invariant.md"
    assert layer.token_estimate == -(-len(layer.content) // 4)


@pytest.mark.parametrize("role", list(AgentType))
def test_every_role_has_a_builtin_fallback(role: AgentType) -> None:
    layer = PromptLayerLoader().load_role(role)
    assert layer.level is PromptLayerLevel.ROLE
    assert layer.immutable is True
    assert layer.source_ref == f"builtin:role-{role.value}.md"
    assert layer.content.strip()


def test_role_prompt_dir_then_callable_take_precedence(tmp_path: Path) -> None:
    (tmp_path / "executor.md").write_text("Executor prompt from the roles package.\n")
    (tmp_path / "reviewer.md").write_text("   \n")  # empty: falls back to the built-in
    by_dir = PromptLayerLoader(role_prompt_dir=tmp_path)
    assert by_dir.load_role(AgentType.EXECUTOR).content == "Executor prompt from the roles package."
    assert by_dir.load_role(AgentType.REVIEWER).source_ref == "builtin:role-reviewer.md"

    def source(role: AgentType) -> str | None:
        return "injected executor" if role is AgentType.EXECUTOR else None

    both = PromptLayerLoader(role_prompt_dir=tmp_path, role_prompt_source=source)
    assert both.load_role(AgentType.EXECUTOR).content == "injected executor"
    assert both.load_role(AgentType.DEBUGGER).source_ref == "builtin:role-debugger.md"


def test_runtime_role_name_is_refused() -> None:
    with pytest.raises(AirException) as info:
        PromptLayerLoader().load_role("main")  # type: ignore[arg-type]
    assert info.value.kind is ErrorKind.VALIDATION_ERROR
    assert info.value.user_action
    assert "executor" in info.value.user_action


def test_project_rules_from_a_real_project_tree(project: ProjectContext) -> None:
    rules = Path(project.shared_root) / "rules"
    (rules / "toolchain-rules.md").write_text("Use CMake and Ninja.\n")
    (rules / "project-rules.md").write_text("Never touch vendor/.\n")
    (rules / "empty.md").write_text("\n\n")
    (rules / "notes.txt").write_text("not a rules file")
    (rules / "sub.md").mkdir()
    layers = PromptLayerLoader().load_project_rules(project)
    assert [layer.source_ref for layer in layers] == [
        ".air/shared/rules/project-rules.md",
        ".air/shared/rules/toolchain-rules.md",
    ]
    assert [layer.content for layer in layers] == ["Never touch vendor/.", "Use CMake and Ninja."]
    assert all(layer.level is PromptLayerLevel.PROJECT_RULES for layer in layers)
    assert not any(layer.immutable for layer in layers)


def test_project_without_rules_dir_has_no_rules(tmp_path: Path) -> None:
    ctx = ProjectContext(
        project_id="p",
        project_root=str(tmp_path),
        shared_root=str(tmp_path / ".air" / "shared"),
        local_root=str(tmp_path / ".air" / "local"),
        name="x",
    )
    assert PromptLayerLoader().load_project_rules(ctx) == []


def test_unreadable_rules_file_is_a_config_error(project: ProjectContext) -> None:
    (Path(project.shared_root) / "rules" / "bad.md").write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(AirException) as info:
        PromptLayerLoader().load_project_rules(project)
    assert info.value.kind is ErrorKind.CONFIG_ERROR
    assert info.value.user_action
    assert "bad.md" in info.value.user_action


def test_task_context_frames_the_work() -> None:
    spec = TaskSpec(
        id="task_1",
        type=TaskType.EXECUTE,
        title="Add a parser",
        description="Write the parser.",
        scope=TaskScope(write_area=["src/parser/**"], denied_paths=["vendor/**"]),
        verification=VerificationPolicy(commands=["pytest tests/parser"], required=True),
        context_refs=TaskContextRefs(arc_ref="arch.md", parent_task_results=["task_0"]),
    )
    layers = PromptLayerLoader().load_task_context(spec, spec.context_refs)
    assert [layer.source_ref for layer in layers] == ["task:task_1", "task:task_1:refs"]
    body = layers[0].content
    assert "Write area: src/parser/**" in body
    assert "Denied paths: vendor/**" in body
    assert "Verification (required):\n  - pytest tests/parser" in body
    assert "Write the parser." not in body  # the description is L9, not L5
    assert "Architecture: arch.md" in layers[1].content
    assert "task_0" in layers[1].content
