"""The Main Agent's direct mode on a thinking model (every current Claude model): its own tool
loop sends each reply's thinking blocks back unchanged on the next request of the turn, which
the strict server checks by their signatures (IMPL-THINK-1), and never shows their text."""

from __future__ import annotations

import json
from typing import Any

from air.testing.cassette_model import THOUGHT, with_thinking
from air.testing.strict_servers import StrictServer
from air.testing.wire_replies import Block, Reply, blocks_sse
from tests.agents.conftest import KEY, AgentEnv, one_direct_message, serve_anthropic

MODEL = "claude-opus-5-5"


def _model(wire: str, body: dict[str, Any]) -> Reply:
    """Turn 1 writes notes.txt, turn 2 says so; each reply thinks first, signed."""
    turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
    call = ("toolu_d1", "fs_write", [json.dumps({"path": "notes.txt", "content": "direct\n"})])
    blocks: list[Block] = [("tool_use", call)] if turn == 0 else [("text", ["Wrote notes.txt."])]
    stop = "tool_use" if turn == 0 else "end_turn"
    thought = with_thinking(body, blocks, f"direct turn {turn + 1}", turn == 0)
    return Reply(chunks=blocks_sse(wire, thought, stop, model=MODEL))


async def test_direct_mode_sends_the_thinking_back_and_shows_none(direct_env: AgentEnv) -> None:
    with StrictServer(api_key=KEY, model=_model) as server:
        serve_anthropic(direct_env, server.url, MODEL, supports_prompt_cache=True)
        await one_direct_message(direct_env, "write the notes")
        bodies = [r.body for r in server.requests]
        rejected = [r.problem for r in server.rejected]
    assert rejected == []
    assert (direct_env.root / "notes.txt").read_text() == "direct\n"
    assert len(bodies) == 2
    replayed = [b for m in bodies[1]["messages"] if m["role"] == "assistant" for b in m["content"]]
    assert [b["type"] for b in replayed] == ["thinking", "redacted_thinking", "tool_use"]
    assert direct_env.assistant_texts() == ["Wrote notes.txt."]
    shown = json.dumps([e.payload for e in direct_env.events()])
    assert THOUGHT.split("{")[0] not in shown
