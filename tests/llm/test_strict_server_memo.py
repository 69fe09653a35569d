"""The strict Anthropic server checks only the new messages of a growing conversation
(``MessageMemo``, IMPL-API-7) and is never more lenient for it: a message changed anywhere, the
last message becoming an earlier one, or the tools going away are checked again, with the verdict
a fresh check gives; the prompt cache counts each message's tokens once (the same total)."""

from __future__ import annotations

import copy
import random
from typing import Any

import httpx

from air.testing.anthropic_rules import MessageMemo, anthropic_problem
from air.testing.prompt_cache import PromptCache
from tests.llm.conftest import FAKE_KEY
from tests.llm.servers import LocalServer, Reply, blocks_sse

HEADERS = {"x-api-key": FAKE_KEY, "anthropic-version": "2023-06-01"}
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}
EPHEMERAL = {"type": "ephemeral"}


def _conversation(turns: int) -> dict[str, Any]:
    """A task of ``turns`` fs_read turns, as air sends it."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "read notes.txt again and again"}]}
    ]
    for n in range(turns):
        use = {"type": "tool_use", "id": f"toolu_{n}", "name": "fs_read", "input": {"path": "a"}}
        result = {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": f"line {n}"}
        messages += [
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": [result]},
        ]
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "stream": True,
        "tools": [{"name": "fs_read", "description": "read", "input_schema": SCHEMA}],
        "messages": messages,
    }


def _reply() -> Reply:
    return Reply(chunks=blocks_sse("anthropic", [("text", ["ok"])], "end_turn"))


def test_the_server_refuses_a_bad_message_early_in_a_long_conversation() -> None:
    with LocalServer(api_key=FAKE_KEY) as server:
        for turns in (300, 301):
            server.push(_reply())
            answer = httpx.post(
                f"{server.url}/v1/messages", headers=HEADERS, json=_conversation(turns)
            )
            assert answer.status_code == 200, answer.text
        bad = _conversation(302)
        bad["messages"][4]["content"][0]["tool_use_id"] = "toolu_7"
        answer = httpx.post(f"{server.url}/v1/messages", headers=HEADERS, json=bad)
        assert answer.status_code == 400
        assert "messages.4.content.0: unexpected `tool_use_id`" in answer.json()["error"]["message"]
        assert server.rejected[-1].problem == anthropic_problem(HEADERS, bad)


def test_the_last_message_is_checked_again_once_it_is_no_longer_last() -> None:
    memo = MessageMemo()
    body = _conversation(20)
    body["messages"].append({"role": "assistant", "content": []})  # allowed last
    assert anthropic_problem(HEADERS, body, memo=memo) is None
    body["messages"].append({"role": "user", "content": [{"type": "text", "text": "go on"}]})
    refused = anthropic_problem(HEADERS, body, memo=memo)
    assert refused is not None
    assert "messages.41: all messages must have non-empty content" in refused.message
    assert refused == anthropic_problem(HEADERS, body)


def test_tool_blocks_are_checked_again_when_the_tools_go_away() -> None:
    memo = MessageMemo()
    body = _conversation(20)
    talk = [
        {"role": "assistant", "content": [{"type": "text", "text": "thinking"}]},
        {"role": "user", "content": [{"type": "text", "text": "go on"}]},
    ]
    body["messages"] += talk
    assert anthropic_problem(HEADERS, body, memo=memo) is None
    body["messages"] += talk
    del body["tools"]  # the new messages hold no tool block; the earlier ones do
    refused = anthropic_problem(HEADERS, body, memo=memo)
    assert refused is not None
    assert "must define tools" in refused.message


def test_cache_breakpoints_of_checked_messages_still_count() -> None:
    memo = MessageMemo()
    body = _conversation(20)
    for i in (2, 4, 6):
        body["messages"][i]["content"][0]["cache_control"] = {"type": "ephemeral"}
    assert anthropic_problem(HEADERS, body, memo=memo) is None
    body["messages"] += copy.deepcopy(_conversation(22)["messages"][-4:])
    for i in (-3, -1):
        body["messages"][i]["content"][0]["cache_control"] = {"type": "ephemeral"}
    refused = anthropic_problem(HEADERS, body, memo=memo)
    assert refused is not None
    assert "A maximum of 4 blocks with cache_control may be provided. Found 5." in refused.message


def _mutate(body: dict[str, Any], rng: random.Random) -> None:
    """One random change anywhere in the conversation: some make it invalid."""
    messages = body["messages"]
    i = rng.randrange(len(messages))
    content = messages[i]["content"]
    match rng.randrange(7):
        case 0:
            content[0]["type"] = "text" if content[0]["type"] != "text" else "image"
        case 1:
            messages[i]["role"] = "user" if messages[i]["role"] == "assistant" else "assistant"
        case 2:
            key = "id" if content[0]["type"] == "tool_use" else "tool_use_id"
            content[0][key] = f"toolu_{rng.randrange(len(messages))}"
        case 3:
            content[0]["text"] = rng.choice(["", " ", "fine"])
        case 4:
            del messages[i]
        case 5:
            ttl = rng.choice(["5m", "1h", "2h"])
            content[0]["cache_control"] = {"type": "ephemeral", "ttl": ttl}
        case _:
            messages.insert(i, copy.deepcopy(messages[rng.randrange(len(messages))]))


def _total(usage: dict[str, int]) -> int:
    return sum(usage.values())


def test_verdicts_with_the_memo_are_those_of_a_fresh_check() -> None:
    rng = random.Random(28)
    memo = MessageMemo()
    cache = PromptCache()
    refused = 0
    for _ in range(300):
        body = _conversation(rng.randrange(1, 30))
        for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
            _mutate(body, rng)
        if rng.random() < 0.1:
            body["tools"] = []
        fresh = anthropic_problem(HEADERS, copy.deepcopy(body))
        assert anthropic_problem(HEADERS, body, memo=memo) == fresh
        refused += fresh is not None
        if fresh is None:  # the prompt's size, counted once per message, as counted whole
            assert _total(cache.usage("anthropic", body)) == _total(
                PromptCache().usage("anthropic", copy.deepcopy(body))
            )
    assert 30 < refused < 270  # both verdicts were exercised


def _marked(turns: int) -> dict[str, Any]:
    """``_conversation`` with a system prompt over every cache minimum and two breakpoints."""
    body = _conversation(turns)
    body["system"] = [{"type": "text", "text": "Rules. " * 800, "cache_control": EPHEMERAL}]
    body["messages"][-1]["content"][-1]["cache_control"] = EPHEMERAL
    return body


def test_cache_usage_with_kept_prefix_keys_is_that_of_keys_made_afresh() -> None:
    """The prefix keys kept for the messages a prompt shares with the last one (IMPL-API-7)
    give, turn after turn, the usage of a cache that keys every prompt afresh."""
    rng = random.Random(26)
    kept, afresh = PromptCache(), PromptCache()
    reads = 0
    for turn in range(1, 150):
        body = _marked(turn)
        for _ in range(rng.choice([0, 0, 0, 1, 2])):
            _mutate(body, rng)
        if rng.random() < 0.1:
            body["system"][0]["text"] += " Changed."  # the head before the messages differs
        fresh = PromptCache()  # nothing remembered of the last prompt, the same cache
        fresh._known = afresh._known
        usage = kept.usage("anthropic", body)
        assert usage == fresh.usage("anthropic", copy.deepcopy(body)), turn
        reads += usage["cache_read_input_tokens"] > 0
    assert reads > 60
