"""CompactionPolicy: trigger at ~70 %, the replaced range, the summariser call, rules files."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from air.context import CompactionPolicy, CompactionRules, load_compaction_rules
from air.context.tokens import estimate_message_tokens, estimate_tokens
from air.contracts.error import AirException, ErrorKind
from air.contracts.project import ProjectContext


def msg(i: int, text: str, role: str = "user") -> dict[str, Any]:
    return {"id": f"msg_{i}", "role": role, "content": [{"type": "text", "text": text}]}


class RecordingSummariser:
    """A summariser double that records its calls (stands in for the compactor's model)."""

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.calls: list[tuple[list[Mapping[str, Any]], int, str]] = []

    async def __call__(self, messages: Sequence[Mapping[str, Any]], budget: int, rules: str) -> str:
        self.calls.append((list(messages), budget, rules))
        return self.reply


def test_should_compact_at_seventy_percent() -> None:
    policy = CompactionPolicy()
    messages = [msg(1, "a" * 400)]  # 100 tokens + 4 framing
    used = estimate_message_tokens(messages[0])
    assert used == 104
    assert policy.should_compact(messages, 148)  # 104 >= 0.7 * 148 = 103.6
    assert not policy.should_compact(messages, 149)  # 104 < 104.3
    assert not policy.should_compact([], 10)
    assert CompactionPolicy(rules=CompactionRules(trigger_ratio=0.5)).should_compact(messages, 208)


async def test_compact_replaces_the_older_range_and_keeps_recent() -> None:
    messages = [
        msg(i, f"message {i} " + "x" * 200, "user" if i % 2 else "assistant") for i in range(1, 11)
    ]
    summariser = RecordingSummariser("Earlier: the user asked for X; we decided Y.")
    policy = CompactionPolicy(
        summariser=summariser,
        rules=CompactionRules(keep_recent_messages=3, instructions="keep decisions"),
        summary_ids=lambda: "sum_FIXED",
    )
    result = await policy.compact(messages, target_tokens=1000)
    assert result.summary_id == "sum_FIXED"
    assert result.replaced_message_ids == [f"msg_{i}" for i in range(1, 8)]
    assert result.summary_text == "Earlier: the user asked for X; we decided Y."
    assert result.token_estimate == estimate_tokens(result.summary_text)
    ((sent, budget, rules),) = summariser.calls
    assert [m["content"][0]["text"][:10] for m in sent] == [
        f"message {i} "[:10] for i in range(1, 8)
    ]
    assert set(sent[0]) == {"role", "content"}
    kept = sum(estimate_message_tokens(m) for m in messages[7:])
    assert budget == 1000 - kept
    assert rules == "keep decisions"
    # the originals are untouched
    assert messages[0]["id"] == "msg_1"
    assert len(messages) == 10


async def test_recent_range_never_starts_with_an_orphaned_tool_result() -> None:
    messages = [
        msg(1, "do it"),
        {
            "id": "msg_2",
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "fs.read", "input": {}}],
        },
        {
            "id": "msg_3",
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "data"}],
        },
        msg(4, "done", "assistant"),
    ]
    policy = CompactionPolicy(
        summariser=RecordingSummariser("s"), rules=CompactionRules(keep_recent_messages=2)
    )
    replaced, kept = policy.split(messages, target_tokens=10_000)
    assert [m["id"] for m in replaced] == ["msg_1", "msg_2", "msg_3"]
    assert [m["id"] for m in kept] == ["msg_4"]


async def test_keep_budget_limits_the_recent_range_and_one_message_is_always_replaced() -> None:
    policy = CompactionPolicy(summariser=RecordingSummariser("summary"))
    big = [msg(i, "y" * 4000) for i in range(1, 4)]  # ~1000 tokens each
    replaced, kept = policy.split(big, target_tokens=1000)  # half = 500: nothing fits
    assert [m["id"] for m in replaced] == ["msg_1", "msg_2", "msg_3"]
    assert kept == []
    replaced, kept = policy.split([msg(1, "hi")], target_tokens=10_000)
    assert [m["id"] for m in replaced] == ["msg_1"]


async def test_long_summary_is_cut_to_the_budget() -> None:
    policy = CompactionPolicy(summariser=RecordingSummariser("z" * 10_000))
    result = await policy.compact([msg(1, "a"), msg(2, "b")], target_tokens=50)
    assert result.token_estimate <= 50
    assert result.summary_text.endswith("[summary cut to fit]")


async def test_store_rows_with_content_json_are_accepted() -> None:
    summariser = RecordingSummariser("ok")
    rows = [{"id": "m1", "role": "user", "content_json": '[{"type":"text","text":"hello"}]'}]
    result = await CompactionPolicy(summariser=summariser).compact(rows, target_tokens=100)
    assert result.replaced_message_ids == ["m1"]
    assert summariser.calls[0][0] == [
        {"role": "user", "content": [{"type": "text", "text": "hello"}]}
    ]


async def test_compact_errors_are_air_errors() -> None:
    policy = CompactionPolicy(summariser=RecordingSummariser("   "))
    for messages, target, kind in [
        ([], 100, ErrorKind.VALIDATION_ERROR),
        ([msg(1, "a")], 0, ErrorKind.VALIDATION_ERROR),
        ([{"role": "user", "content": "no id"}], 100, ErrorKind.VALIDATION_ERROR),
        ([msg(1, "a")], 100, ErrorKind.VALIDATION_ERROR),  # empty summary
    ]:
        with pytest.raises(AirException) as info:
            await policy.compact(messages, target)
        assert info.value.kind is kind
        assert info.value.user_action
    with pytest.raises(AirException) as info:
        await CompactionPolicy().compact([msg(1, "a")], 100)
    assert info.value.kind is ErrorKind.CONFIG_ERROR


def test_rules_files_merge_builtin_user_then_project(
    project: ProjectContext, home_air: Path
) -> None:
    builtin = load_compaction_rules(user_air_dir=home_air)
    assert builtin.trigger_ratio == 0.7
    assert builtin.keep_recent_messages == 6
    assert "never invent facts" in builtin.instructions
    assert builtin.sources == ("builtin:compaction-rules.md",)

    (home_air / "compaction-rules.md").write_text(
        "---\ntrigger_ratio: 0.6\n---\nUser: keep paths.\n"
    )
    (Path(project.shared_root) / "compaction-rules.md").write_text(
        "---\nkeep_recent_messages: 2\n---\nProject: keep ADR numbers.\n"
    )
    rules = load_compaction_rules(user_air_dir=home_air, project=project)
    assert rules.trigger_ratio == 0.6
    assert rules.keep_recent_messages == 2
    assert rules.instructions.endswith("User: keep paths.\n\nProject: keep ADR numbers.")
    assert len(rules.sources) == 3
    policy = CompactionPolicy(rules=rules)
    assert policy.should_compact([msg(1, "a" * 400)], 173)  # 104 >= 0.6 * 173


@pytest.mark.parametrize(
    "text",
    [
        "---\ntrigger_ratio: [1\n---\nbody\n",
        "---\ntrigger_ratio: 1.5\n---\nbody\n",
        "---\nkeep_recent_messages: -1\n---\nbody\n",
        "---\n- a list\n---\nbody\n",
    ],
)
def test_bad_rules_file_is_a_config_error(home_air: Path, text: str) -> None:
    (home_air / "compaction-rules.md").write_text(text)
    with pytest.raises(AirException) as info:
        load_compaction_rules(user_air_dir=home_air)
    assert info.value.kind is ErrorKind.CONFIG_ERROR
    assert info.value.user_action
    assert "compaction-rules.md" in info.value.user_action
