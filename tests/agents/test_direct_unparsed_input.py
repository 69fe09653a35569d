"""The Main Agent's direct mode answers a tool call whose input the model wrote as no JSON object
(IMPL-API-8): the call is never made, its error reaches the model, which calls again; the strict
server, which refuses any field of a ``tool_use`` the Messages API does not know, sees none."""

from __future__ import annotations

import json
from typing import Any

from air.testing.strict_servers import StrictServer
from air.testing.wire_replies import Block, Reply, blocks_sse
from tests.agents.conftest import KEY, AgentEnv, one_direct_message, serve_anthropic

MODEL = "claude-sonnet-5"


def _model(wire: str, body: dict[str, Any]) -> Reply:
    """Turn 1 writes notes.txt with single quotes, turn 2 as JSON, turn 3 says so."""
    turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
    good = json.dumps({"path": "notes.txt", "content": "direct\n"})
    pieces = ["{'path': 'notes.txt', 'content': 'x'}"] if turn == 0 else [good]
    blocks: list[Block] = (
        [("tool_use", (f"toolu_d{turn}", "fs_write", pieces))]
        if turn < 2
        else [("text", ["Wrote notes.txt."])]
    )
    return Reply(chunks=blocks_sse(wire, blocks, "tool_use" if turn < 2 else "end_turn"))


async def test_direct_mode_answers_an_unparsed_call_and_runs_the_mended_one(
    direct_env: AgentEnv,
) -> None:
    with StrictServer(api_key=KEY, model=_model) as server:
        serve_anthropic(direct_env, server.url, MODEL)
        await one_direct_message(direct_env, "write the notes")
        bodies = [r.body for r in server.requests]
        rejected = [r.problem for r in server.rejected]
    assert rejected == []
    assert len(bodies) == 3
    answer = json.dumps(bodies[1]["messages"][-1])
    assert "The call of fs.write was not made: its input is not valid JSON" in answer
    assert (direct_env.root / "notes.txt").read_text() == "direct\n"
    assert [p["input"]["content"] for p in direct_env.payloads("tool.started")] == ["direct\n"]
