"""The model turns a test's cassette holds (``--cassette DIR``: ``<task id>.jsonl``, one
Anthropic Messages reply per line), as the headless tests write them: a turn, a tool call and
the completing answer with its ``json:result`` block."""

from __future__ import annotations

import json

USAGE = {"input_tokens": 10, "output_tokens": 5}


def turn(content: list[dict[str, object]], stop: str) -> str:
    """One reply (without its newline): ``content`` blocks, ``stop`` its stop reason."""
    return json.dumps({"content": content, "stop_reason": stop, "usage": USAGE})


def tool_turn(tool_id: str, name: str, **args: str) -> str:
    """A reply calling tool ``name`` with ``args`` (``tool_id``: the call's id suffix)."""
    use = {"type": "tool_use", "id": f"toolu_{tool_id}", "name": name}
    return turn([{**use, "input": args}], "tool_use")


def done_turn() -> str:
    """The answer that completes an executor task that changed files."""
    block = json.dumps({"status": "completed", "summary": "done", "result": {"changes_made": True}})
    return turn([{"type": "text", "text": f"ok\n```json:result\n{block}\n```\n"}], "end_turn")
