"""The fork context's pure parts (IMPL-FORK-1): the copy of the Main Agent's conversation, a
forked worker's first messages, and the refusals shared by batches, plans and the runtime.
The whole path through the real ``air`` is tests/ui/test_fork_console.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from air.agents.plan import parse_plan
from air.cli.batch import load_batch_text
from air.context.fork import (
    FORK_NOTE,
    fork_messages,
    fork_point,
    fork_refusal,
    forked_conversation,
)
from air.context.session_rows import SessionReaders
from air.contracts.error import AirException
from air.contracts.task import TaskSpec, TaskType


def _row(mid: str, role: str, text: str, task_id: str | None = None) -> dict[str, Any]:
    content = json.dumps([{"type": "text", "text": text}])
    at = f"2026-01-01T00:00:0{mid[1]}.000000Z"
    return {"id": mid, "role": role, "content_json": content, "task_id": task_id, "created_at": at}


def _spec(task_id: str, context: str = "fork") -> TaskSpec:
    return TaskSpec.model_validate(
        {"id": task_id, "type": TaskType.EXECUTE, "title": "T", "description": "Do T.",
         "context": context}
    )  # fmt: skip


ROWS = [
    _row("m0", "assistant", "a greeting nobody asked for"),
    _row("m1", "user", "first"),
    _row("m2", "assistant", "one"),
    _row("m3", "user", "worker chatter", task_id="t9"),
    _row("m4", "user", "second"),
    _row("m5", "user", "more"),
    _row("m6", "assistant", "two"),
]


def test_the_copy_is_the_main_agent_s_turns_alternating_from_the_person() -> None:
    readers = SessionReaders(messages=lambda _sid: ROWS)
    assert forked_conversation(readers, "ses") == [
        {"role": "user", "content": [{"type": "text", "text": "first"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "one"}]},
        {
            "role": "user",
            "content": [{"type": "text", "text": "second"}, {"type": "text", "text": "more"}],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "two"}]},
    ]
    assert forked_conversation(SessionReaders(), "ses") == []


def test_a_compacted_conversation_forks_from_its_summary_and_what_came_after() -> None:
    summary = {"summary_id": "sum_1", "content": "they said hello", "covers_until_message_id": "m2"}
    readers = SessionReaders(messages=lambda _sid: ROWS, summaries=lambda _sid: [summary])
    forked = forked_conversation(readers, "ses")
    assert forked[0]["role"] == "user"
    assert forked[0]["content"][0]["text"].endswith("they said hello")
    assert [b["text"] for b in forked[0]["content"][1:]] == ["second", "more"]
    assert forked[1] == {"role": "assistant", "content": [{"type": "text", "text": "two"}]}


def test_the_task_follows_the_copy_even_when_its_context_went_to_an_artifact() -> None:
    forked = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    messages = fork_messages(forked, [], _spec("t1"))
    assert [m["role"] for m in messages] == ["user"]
    texts = [b["text"] for b in messages[0]["content"]]
    assert texts[:2] == ["hi", FORK_NOTE]
    assert texts[2].startswith("# Task t1: T")


def test_one_fork_with_a_conversation_passes_two_forks_or_none_to_copy_do_not() -> None:
    assert fork_refusal([_spec("a"), _spec("b", "fresh")], conversation=2) is None
    assert fork_refusal([_spec("a", "fresh")], conversation=0) is None
    twice = fork_refusal([_spec("a"), _spec("b")], conversation=2)
    assert twice is not None
    assert twice.kind == "validation_error"
    assert twice.error.message == "2 tasks have context: fork (a, b); one may"
    assert twice.user_action
    alone = fork_refusal([_spec("a")], conversation=0)
    assert alone is not None
    assert alone.kind == "validation_error"
    assert "no persisted Main Agent conversation" in alone.error.message


def test_a_plan_or_a_batch_with_two_forks_is_refused() -> None:
    task = {"id": "a", "type": "execute", "title": "A", "description": "A.", "context": "fork"}
    plan = {"summary": "s", "tasks": [task, {**task, "id": "b"}]}
    parsed, errors = parse_plan(json.dumps(plan))
    assert parsed is None
    assert errors == ["tasks: a, b have context fork; at most one task may fork"]
    batch = "tasks:\n  - {id: a, title: A, context: fork}\n  - {id: b, title: B, context: fork}\n"
    with pytest.raises(AirException) as info:
        load_batch_text(batch, "b.yaml")
    assert info.value.kind == "validation_error"
    assert info.value.error.message == "b.yaml:3: tasks a, b have context: fork; one task may"


def test_the_copy_is_the_conversation_as_it_was_when_the_task_was_created() -> None:
    """Every attempt of a forked task starts from the same copy: what was said after the task
    was created (the plan's answer, later chat) is not in it (``fork_point``)."""
    task = {"id": "t1", "created_at": "2026-01-01T00:00:04.000000Z"}
    readers = SessionReaders(messages=lambda _sid: ROWS, task=lambda tid: task)
    until = fork_point(readers, "t1")
    assert until == task["created_at"]
    forked = forked_conversation(readers, "ses", until)
    assert [b["text"] for m in forked for b in m["content"]] == ["first", "one", "second"]
    assert fork_point(SessionReaders(), "t1") is None
