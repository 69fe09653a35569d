"""``add_note`` (mid-run steering, the worker's side): the correction joins a last user message
as a new dict (the sent one is left as it was: IMPL-TURN-1's identity-based delta resends it),
turns a string content into blocks, and stands alone after an assistant message."""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, cast

from air.roles.loop import RESUME_NOTE, ReviewerRole
from air.roles.steering import STEER_MESSAGE, add_note

if TYPE_CHECKING:
    from air.ipc.runtime import WorkerRuntime

NOTE = STEER_MESSAGE.format(text="use tabs")


def test_a_note_joins_the_last_user_message_as_a_new_dict() -> None:
    sent: dict[str, Any] = {"role": "user", "content": [{"type": "tool_result", "content": "ok"}]}
    messages = [{"role": "assistant", "content": []}, sent]
    add_note(messages, "use tabs")
    assert messages[-1] is not sent
    assert sent["content"] == [{"type": "tool_result", "content": "ok"}]
    assert messages[-1]["content"][-1] == {"type": "text", "text": NOTE}
    assert len(messages) == 2


def test_a_string_content_becomes_blocks() -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "do the task"}]
    add_note(messages, "use tabs")
    assert messages == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "do the task"}, {"type": "text", "text": NOTE}],
        }
    ]


def test_after_an_assistant_message_the_note_is_a_user_message_of_its_own() -> None:
    messages: list[dict[str, Any]] = [{"role": "assistant", "content": []}]
    add_note(messages, "use tabs")
    assert messages[-1] == {"role": "user", "content": [{"type": "text", "text": NOTE}]}


def test_a_resumed_attempt_starts_with_the_checkpoints_usage_and_is_told_its_state() -> None:
    """IMPL-CKPT-1: the worker's side of a carried checkpoint (the CLI test in
    tests/cli/test_checkpoint_resume.py shows the usage in the task's result)."""
    carried = {
        "turn": 3,
        "state": "paused",
        "usage": {"tokens": 45, "cache_read_tokens": 4, "cost_usd": None},
        "changed_files": ["src/a.py", 7],
    }
    role = ReviewerRole({"resume_from": carried})
    runtime = SimpleNamespace(
        turn=0, tokens=0, cost_usd=0.0, cache_read_tokens=0, cache_write_tokens=0, cost_known=True
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": "review it"}]
    role.resume(cast("WorkerRuntime", runtime), messages)
    assert (runtime.turn, runtime.tokens, runtime.cache_read_tokens) == (3, 45, 4)
    assert runtime.cost_known is False  # an unknown price stays unknown
    assert role.changed_files == ["src/a.py"]
    note = messages[0]["content"][0]["text"]
    assert note.startswith(RESUME_NOTE.format(turn=3, state="paused"))
    assert "src/a.py" in note
    assert messages[0]["content"][1] == {"type": "text", "text": "review it"}
