"""The conversation layer's text of a model's reply (``air.context.row_text.render_blocks``):
what the model said and called, never its reasoning: a thinking block's text or a redacted
block's encrypted data would be re-read by another model, out of the conversation it is bound
to (IMPL-THINK-1)."""

from __future__ import annotations

from air.context.row_text import render_blocks


def test_a_reply_s_text_and_calls_are_kept_and_its_thinking_is_not() -> None:
    content = [
        {"type": "thinking", "thinking": "secret plan", "signature": "sig-1"},
        {"type": "redacted_thinking", "data": "ENCRYPTED-BLOB"},
        {"type": "openai_reasoning", "id": "rs_1", "encrypted_content": "SEALED", "summary": []},
        {"type": "text", "text": "I will read the file."},
        {"type": "tool_use", "id": "toolu_1", "name": "fs.read", "input": {"path": "a.py"}},
    ]
    text = render_blocks(content)
    assert "I will read the file." in text
    assert "[tool_use fs.read id=toolu_1]" in text
    for hidden in ("secret plan", "sig-1", "ENCRYPTED-BLOB", "thinking", "SEALED", "rs_1"):
        assert hidden not in text
