"""``add_note`` (mid-run steering, the worker's side): the correction joins a last user message
as a new dict (the sent one is left as it was: IMPL-TURN-1's identity-based delta resends it),
turns a string content into blocks, and stands alone after an assistant message."""

from __future__ import annotations

from typing import Any

from air.roles.steering import STEER_MESSAGE, add_note

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
