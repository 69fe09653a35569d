"""WorkerContextBuilder and the layers it adds for workers: project instruction files (and the
guard on links out of the project), evidence of dependencies, earlier failed attempts, the
budget and the omissions reported in the pack. Real project tree, real session DB."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from air.context import readers_from_store
from air.context.loader import PromptLayerLoader
from air.context.worker_pack import WorkerContextBuilder, context_budget
from air.contracts.error import AirException, ErrorKind
from air.contracts.project import ProjectContext
from air.contracts.runtime import PromptLayerLevel
from air.contracts.task import TaskDependencySpec, TaskSpec, TaskType
from air.store.repositories import SessionStore

SID = "ses_TEST"
NOW = "2026-01-01T00:00:00.000000Z"


class _Attempt:
    def __init__(self, spec: TaskSpec, attempt_index: int = 1) -> None:
        self.session_id = SID
        self.project_id = "prj_test"
        self.task_spec = spec
        self.attempt_index = attempt_index


def _spec(task_id: str = "task_B", **kwargs: object) -> TaskSpec:
    return TaskSpec.model_validate(
        {
            "id": task_id,
            "type": TaskType.REVIEW,
            "title": "Review",
            "description": "Review the change.",
            "acceptance_criteria": ["the verdict is justified"],
            **kwargs,
        }
    )


def _builder(
    project: ProjectContext, home_air: Path, store: SessionStore, budget: int = 50_000
) -> WorkerContextBuilder:
    return WorkerContextBuilder(
        project=project,
        readers=readers_from_store(store),
        token_budget=budget,
        user_air_dir=home_air,
    )


def test_instruction_files_follow_the_rules_files(project: ProjectContext) -> None:
    root = Path(project.project_root)
    (Path(project.shared_root) / "rules" / "a.md").write_text("rule a\n")
    (root / "CLAUDE.md").write_text("claude says\n")
    (root / "AGENTS.md").write_text("agents say\n")
    layers = PromptLayerLoader().load_project_rules(project)
    assert [(layer.source_ref, layer.content) for layer in layers] == [
        (".air/shared/rules/a.md", "rule a"),
        ("AGENTS.md", "agents say"),
        ("CLAUDE.md", "claude says"),
    ]


def test_an_instruction_file_linking_out_of_the_project_is_refused(
    project: ProjectContext, tmp_path: Path
) -> None:
    secret = tmp_path / "id_key"
    secret.write_text("PRIVATE-KEY-MATERIAL\n")
    os.symlink(secret, Path(project.project_root) / "AGENTS.md")
    with pytest.raises(AirException) as info:
        PromptLayerLoader().load_project_rules(project)
    assert info.value.kind is ErrorKind.CONFIG_ERROR
    assert "AGENTS.md" in (info.value.user_action or "")
    # a link that stays inside the project is fine
    os.remove(Path(project.project_root) / "AGENTS.md")
    (Path(project.project_root) / "real.md").write_text("inside\n")
    os.symlink("real.md", Path(project.project_root) / "AGENTS.md")
    assert [x.content for x in PromptLayerLoader().load_project_rules(project)] == ["inside"]


def test_an_instruction_file_swapped_for_a_link_after_its_check_is_refused(
    project: ProjectContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loader checks where AGENTS.md leads (inside the project, no protected file), then
    reads it: it read the name again, following a link a command running beside air (a task
    under ``--isolation main``) put there between the two, into the next prompt."""
    secret = tmp_path / "id_key"
    secret.write_text("PRIVATE-KEY-MATERIAL\n")
    agents = Path(project.project_root) / "AGENTS.md"
    agents.write_text("agents say\n")
    opened = os.open

    def swapping(path: object, *args: object, **kw: object) -> int:
        if str(path).endswith("AGENTS.md") and not agents.is_symlink():  # checked: swap it
            agents.unlink()
            agents.symlink_to(secret)
        return opened(path, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", swapping)
    with pytest.raises(AirException) as info:
        PromptLayerLoader().load_project_rules(project)
    assert info.value.kind is ErrorKind.CONFIG_ERROR
    assert "PRIVATE-KEY" not in str(info.value.error)


def test_retry_pack_carries_the_failure_and_dependency_evidence(
    project: ProjectContext, home_air: Path, session_store: SessionStore
) -> None:
    session_store.evidence.insert(
        {
            "evidence_ref_id": "evd_A",
            "session_id": SID,
            "kind": "test_output",
            "ref": "cr_A",
            "claim": "`pytest -q` exited 0",
            "entity_type": "task",
            "entity_id": "task_A",
            "created_at": NOW,
        }
    )
    error = {"kind": "verification_failed", "message": "verification did not pass: make check"}
    session_store.task_attempts.insert(
        {
            "task_id": "task_B",
            "attempt_index": 1,
            "status": "failed",
            "started_at": NOW,
            "failure_kind": "verification_failed",
            "failure_message": error["message"],
            "failure_error_json": json.dumps({**error, "user_action": "Fix the build."}),
        }
    )
    spec = _spec(dependencies=[TaskDependencySpec(depends_on_task_id="task_A")])
    builder = _builder(project, home_air, session_store)
    pack = builder.build(_Attempt(spec, attempt_index=2))
    text = json.dumps(pack.messages)
    assert "Attempt 1 of this task failed (verification_failed)" in text
    assert "verification did not pass: make check" in text
    assert "what to do: Fix the build." in text
    assert "`pytest -q` exited 0" in text
    assert "a dependency of this task" in text
    assert "the verdict is justified" in text
    assert pack.system_prompt is not None
    assert "You are running inside air" in pack.system_prompt
    assert builder.last is not None
    levels = [layer.level for layer in builder.last.layers]
    assert PromptLayerLevel.TOOL_OUTPUT in levels
    assert PromptLayerLevel.EVIDENCE in levels
    assert pack.notes is None  # everything fitted


def test_a_first_attempt_has_no_failure_layer(
    project: ProjectContext, home_air: Path, session_store: SessionStore
) -> None:
    session_store.task_attempts.insert(
        {"task_id": "task_B", "attempt_index": 1, "status": "running", "started_at": NOW}
    )
    pack = _builder(project, home_air, session_store).build(_Attempt(_spec()))
    assert "failed" not in json.dumps(pack.messages)


def test_omissions_under_a_small_budget_are_reported_in_the_pack(
    project: ProjectContext, home_air: Path, session_store: SessionStore
) -> None:
    (Path(project.project_root) / "AGENTS.md").write_text("lorem ipsum " * 2_000)
    builder = _builder(project, home_air, session_store, budget=2_000)
    pack = builder.build(_Attempt(_spec()))
    assert pack.notes is not None
    assert any(n.startswith("omitted project_rules AGENTS.md (") for n in pack.notes), pack.notes
    assert "lorem ipsum" not in (pack.system_prompt or "")
    assert "the verdict is justified" in json.dumps(pack.messages)  # L9 outranks L3


def test_budget_leaves_room_for_the_reply_and_later_turns() -> None:
    assert context_budget(32_768, 4_096) == 14_336
    assert context_budget(1_000, 4_096) == 2_000


def test_retry_pack_carries_the_failures_evidence(
    project: ProjectContext, home_air: Path, session_store: SessionStore
) -> None:
    """L8 of a retry (IMPL-REVIEW-2): the worker's account, its verification results, the
    parsed diagnostics, the failing tests and reviewer findings of the failed attempt."""
    error = {
        "kind": "verification_failed",
        "message": "ctest fails",
        "metadata": {
            "worker_summary": "SUMMARY-5d1: the parser rejects empty input",
            "verification": [{"name": "ctest", "status": "failed", "notes": "NOTE-0a9"}],
            "diagnostics": [{"file": "src/p.cpp", "line": 7, "message": "DIAG-77e undeclared"}],
            "failed_tests": ["parser_empty"],
            "findings": ["FINDING-31c: no test for empty input"],
        },
    }
    session_store.task_attempts.insert(
        {
            "task_id": "task_B",
            "attempt_index": 1,
            "status": "failed",
            "started_at": NOW,
            "failure_kind": "verification_failed",
            "failure_message": error["message"],
            "failure_error_json": json.dumps(error),
        }
    )
    pack = _builder(project, home_air, session_store).build(_Attempt(_spec(), attempt_index=2))
    text = json.dumps(pack.messages)
    assert "the worker said: SUMMARY-5d1: the parser rejects empty input" in text
    assert "verification ctest: failed \\u2014 NOTE-0a9" in text
    assert "diagnostic src/p.cpp:7: DIAG-77e undeclared" in text
    assert "failing tests: parser_empty" in text
    assert "reviewer finding: FINDING-31c: no test for empty input" in text
