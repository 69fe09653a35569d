"""The Main Agent's structured outputs: plans validated against TaskSpec, the classifications."""

from __future__ import annotations

import json
from collections.abc import Mapping

from air.agents.conversation import ConversationEntry, to_model_messages
from air.agents.plan import parse_change, parse_intent, parse_plan, render_plan
from tests.agents.conftest import spec


def plan_text(*tasks: Mapping[str, object], needs_plan: bool = False) -> str:
    return json.dumps(
        {"summary": "Add it.", "needs_plan": needs_plan, "tasks": [dict(t) for t in tasks]}
    )


def test_a_valid_plan_in_a_fence_is_read() -> None:
    text = "Here:\n```json\n" + plan_text(spec("t_a", "A"), spec("t_b", "B", after=["t_a"])) + "```"
    plan, errors = parse_plan(text)
    assert errors == []
    assert plan is not None
    assert [t.id for t in plan.tasks] == ["t_a", "t_b"]
    assert "2. [t_b] B (after t_a)" in render_plan(plan)


def test_plan_errors_name_the_field() -> None:
    bad = {"id": "t_a", "type": "execute", "title": "A"}  # no description
    plan, errors = parse_plan(plan_text(bad))
    assert plan is None
    assert any("tasks.0.description" in e for e in errors)
    _, errors = parse_plan(json.dumps({"summary": "x", "tasks": []}))
    assert any("tasks" in e for e in errors)
    _, errors = parse_plan("no json at all")
    assert errors
    assert "JSON" in errors[0]
    _, errors = parse_plan(plan_text({**spec("t_a", "A"), "type": "deploy"}))
    assert any("tasks.0.type" in e for e in errors)


def test_plan_rules_beyond_the_schema() -> None:
    _, errors = parse_plan(plan_text(spec("t_a", "A"), spec("t_a", "again")))
    assert any("used twice" in e for e in errors)
    _, errors = parse_plan(plan_text(spec("t_a", "A", after=["t_zz"])))
    assert any("unknown task 't_zz'" in e for e in errors)
    _, errors = parse_plan(plan_text(spec("t_a", "A", after=["t_a"])))
    assert any("itself" in e for e in errors)
    _, errors = parse_plan(plan_text(spec("t_old", "A")), known_task_ids={"t_old"})
    assert any("already exists" in e for e in errors)
    plan, errors = parse_plan(plan_text(spec("t_b", "B", after=["t_old"])), {"t_old"})
    assert plan is not None
    assert errors == []


def test_a_plan_asks_only_what_a_batch_file_may() -> None:
    """Ids and constraints a model chooses pass the batch file's rules (IMPL-NUM-1): a
    ``"hard_timeout_ms": 1e400`` ended the console with an OverflowError arming the task's
    deadline, a NaN budget made every cost comparison false, an id names branches and commit
    trailers."""

    def with_constraints(task_id: str, **constraints: object) -> dict[str, object]:
        return {**spec(task_id, task_id), "constraints": constraints}

    for constraints, field, reason in (
        ({"hard_timeout_ms": 10**400}, "hard_timeout_ms", "less than or equal to 604800000"),
        ({"soft_timeout_ms": -5}, "soft_timeout_ms", "greater than or equal to 1"),
        ({"max_turns": 10**9}, "max_turns", "less than or equal to 1000"),
        ({"retry_budget": 11}, "retry_budget", "less than or equal to 10"),
        ({"max_cost_usd": 0}, "max_cost_usd", "greater than 0"),
    ):
        plan, errors = parse_plan(plan_text(with_constraints("t_a", **constraints)))
        assert plan is None
        assert errors == [f"tasks.0.constraints.{field}: Input should be {reason}"]
    # NaN (Python's json reads it) is no number of any contract (IMPL-NUM-1)
    text = plan_text(with_constraints("t_a", max_cost_usd=1.5)).replace("1.5", "NaN")
    plan, errors = parse_plan(text)
    assert plan is None
    assert errors == ["tasks.0.constraints.max_cost_usd: Input should be a finite number"]
    for bad_id in ("../../x", "-rf", "a b", "t\nAir-Task: other", "", "x" * 65):
        plan, errors = parse_plan(plan_text(spec(bad_id, "A")))
        assert plan is None
        assert errors[0].startswith(f"tasks.0.id: {bad_id!r} is no task id"), errors
    plan, errors = parse_plan(plan_text(with_constraints("t_a", hard_timeout_ms=7 * 24 * 3600_000)))
    assert errors == []


def test_intent_falls_back_to_chat_and_change_to_a_confirmed_replan() -> None:
    assert parse_intent('{"intent": "task"}') == "task"
    assert parse_intent('{"intent": "chat"}') == "chat"
    assert parse_intent("I think it is a task") == "chat"
    assert parse_change(
        '{"change_class": "execution", "impacted_task_ids": ["t1", "tx"]}', ["t1"]
    ) == (
        "execution",
        ["t1"],
    )
    assert parse_change("garbage", ["t1"]) == ("possible_design", [])
    assert parse_change('{"change_class": "weird"}', []) == ("possible_design", [])


def test_model_messages_alternate_and_skip_failed_turns() -> None:
    entries = [
        ConversationEntry("m0", "assistant", "orphan greeting"),
        ConversationEntry("m1", "user", "one"),
        ConversationEntry("m2", "assistant", "", status="interrupted"),
        ConversationEntry("m3", "user", "two"),
        ConversationEntry("m4", "assistant", "answer"),
    ]
    messages = to_model_messages(entries)
    assert [m.role for m in messages] == ["user", "assistant"]
    assert messages[0].content[0].model_dump()["text"] == "one\n\ntwo"
