"""Role table, prompts as package resources, the json:result contract and the repair round."""

from __future__ import annotations

import json

import pytest

from air.contracts.ipc import AgentStartControl
from air.contracts.runtime import AgentRuntimeContext, ContextPack, PermissionTemplate
from air.contracts.task import TaskSpec, TaskType
from air.contracts.worker_result import WorkerStatus
from air.roles.loop import (
    CompactorRole,
    DebuggerRole,
    ExecutorRole,
    ExperienceMinerRole,
    ReviewerRole,
    extract_result_block,
    load_prompt,
    role_for,
)
from tests.workers.conftest import Env, result_text, text_turn


@pytest.mark.parametrize(
    ("task_type", "role"),
    [
        (TaskType.EXECUTE, ExecutorRole),
        (TaskType.DOCS, ExecutorRole),
        (TaskType.REVIEW, ReviewerRole),
        (TaskType.DEBUG, DebuggerRole),
        (TaskType.COMPACT, CompactorRole),
        (TaskType.MINE_EXPERIENCE, ExperienceMinerRole),
    ],
)
def test_task_type_picks_the_sdd_role(task_type: TaskType, role: type) -> None:
    start = AgentStartControl(
        task_spec=TaskSpec(id="t", type=task_type, title="x", description="y"),
        context_pack=ContextPack(),
        runtime=AgentRuntimeContext(
            session_id="s",
            project_id="p",
            agent_id="a",
            permission_template=PermissionTemplate.EXECUTOR,
        ),
    )
    picked = role_for(start)
    assert type(picked) is role
    prompt = load_prompt(picked.prompt_name)
    assert picked.output_contract in prompt
    assert "json:result" in prompt


def test_extract_result_block_validates_against_the_contract() -> None:
    ok = result_text("completed", "fine", {"verdict": "approved"})
    data, problem = extract_result_block(ok, "ReviewerResult")
    assert problem is None
    assert data is not None
    assert data["result"] == {"verdict": "approved", "findings": []}
    assert extract_result_block("no block here", "ReviewerResult") == (None, "no json:result block")
    bad = result_text("completed", "fine", {"verdict": "maybe"})
    data, problem = extract_result_block(bad, "ReviewerResult")
    assert data is None
    assert problem is not None
    assert "ReviewerResult" in problem
    data, problem = extract_result_block("```json:result\n{nope\n```", "ReviewerResult")
    assert data is None
    assert problem is not None
    assert problem.startswith("invalid JSON")
    weird = "```json:result\n" + json.dumps({"status": "done", "result": {}}) + "\n```"
    assert extract_result_block(weird, "ReviewerResult")[0] is None


async def test_one_repair_round_recovers_a_bad_final_answer(env: Env) -> None:
    turns = [
        text_turn("I think it is fine."),
        text_turn(result_text("completed", "fine after repair", {"verdict": "approved"})),
    ]
    outcome = await env.manager(turns).supervise(env.request(type=TaskType.REVIEW))
    assert outcome.result is not None
    assert outcome.result.status == WorkerStatus.COMPLETED
    assert outcome.result.summary == "fine after repair"


async def test_after_the_repair_round_the_result_fails_with_raw_text_kept(env: Env) -> None:
    turns = [text_turn("I think it is fine."), text_turn("Still no block, sorry.")]
    outcome = await env.manager(turns).supervise(env.request(type=TaskType.REVIEW))
    result = outcome.result
    assert result is not None
    assert result.status == WorkerStatus.FAILED
    assert result.raw_text == "Still no block, sorry."
    assert result.error is not None
    assert result.error.kind == "validation_error"
    assert outcome.kind == "result"
