"""Prompt caching (issue 26 item 3): air marks the stable prefix of an Anthropic request with
at most 4 breakpoints, the strict server refuses what the API refuses and reports cache usage
as the APIs do, and the manager prices cached tokens at their own prices."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from air.contracts.provider import (
    CanonicalMessage,
    MessageStopEvent,
    ModelConfig,
    ModelPrice,
    ModelsConfig,
    ProviderConfig,
    ProviderKind,
    TextBlock,
)
from air.llm.anthropic_wire import MAX_BREAKPOINTS, mark_cache_breakpoints
from air.llm.manager import ProviderManager
from air.testing.anthropic_rules import anthropic_problem
from air.testing.prompt_cache import PromptCache
from tests.llm.conftest import FAKE_KEY
from tests.llm.helpers import collect, request
from tests.llm.servers import LocalServer, Reply, Turn, anthropic_sse, openai_sse

HEADERS = {"x-api-key": FAKE_KEY, "anthropic-version": "2023-06-01"}
LONG = "Rules of the project. " * 400  # about 2200 tokens: above every cache minimum
EPHEMERAL = {"type": "ephemeral"}


def _body(marks: int) -> dict[str, Any]:
    blocks = [
        {"type": "text", "text": f"part {i}", "cache_control": EPHEMERAL} for i in range(marks)
    ]
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "system": [{"type": "text", "text": "be brief", "cache_control": EPHEMERAL}],
        "messages": [{"role": "user", "content": blocks or [{"type": "text", "text": "hi"}]}],
    }


def test_the_server_refuses_more_than_four_breakpoints_and_bad_markers() -> None:
    assert anthropic_problem(HEADERS, _body(3)) is None
    refused = anthropic_problem(HEADERS, _body(4))
    assert refused is not None
    assert refused.message == "A maximum of 4 blocks with cache_control may be provided. Found 5."
    body = _body(1)
    body["system"][0]["cache_control"] = {"type": "persistent"}
    assert "Input should be 'ephemeral'" in str(anthropic_problem(HEADERS, body))
    body["system"][0]["cache_control"] = {"type": "ephemeral", "ttl": "2h"}
    assert "ttl" in str(anthropic_problem(HEADERS, body))


def test_breakpoints_mark_tools_system_and_the_conversation_within_the_limit() -> None:
    params: dict[str, Any] = {
        "system": "rules",
        "tools": [{"name": "a"}, {"name": "b"}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "x"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "y"}]},
            {"role": "user", "content": [{"type": "text", "text": "z"}]},
        ],
    }
    mark_cache_breakpoints(params)
    assert params["system"] == [{"type": "text", "text": "rules", "cache_control": EPHEMERAL}]
    assert "cache_control" in params["tools"][1]
    assert "cache_control" not in params["tools"][0]
    assert "cache_control" in params["messages"][2]["content"][0]
    # breakpoints the caller placed count: never more than the API's 4
    crowded = copy.deepcopy(params)
    for block in crowded["system"] + crowded["tools"]:
        block.pop("cache_control", None)
    for message in crowded["messages"]:
        message["content"][0]["cache_control"] = dict(EPHEMERAL)
    crowded["messages"][2]["content"][0].pop("cache_control")
    mark_cache_breakpoints(crowded)
    blocks = crowded["system"] + crowded["tools"] + [m["content"][0] for m in crowded["messages"]]
    assert sum("cache_control" in b for b in blocks) == MAX_BREAKPOINTS


def test_the_fake_caches_only_prefixes_the_api_would() -> None:
    cache = PromptCache()
    short = _body(0) | {"messages": [{"role": "user", "content": "hi"}]}
    assert cache.usage("anthropic", short)["cache_creation_input_tokens"] == 0  # < 1024 tokens
    assert cache.usage("anthropic", short)["cache_read_input_tokens"] == 0
    long = copy.deepcopy(short)
    long["system"][0]["text"] = LONG
    first = cache.usage("anthropic", long)
    assert first["cache_creation_input_tokens"] > 1024
    assert first["cache_read_input_tokens"] == 0
    again = cache.usage("anthropic", long)
    assert again["cache_read_input_tokens"] == first["cache_creation_input_tokens"]
    # a read is looked up at most 20 blocks before a breakpoint
    far = copy.deepcopy(long)
    far["messages"] = [
        {"role": "user", "content": [{"type": "text", "text": f"m{i}"} for i in range(25)]}
    ]
    far["messages"][0]["content"][-1]["cache_control"] = EPHEMERAL
    del far["system"][0]["cache_control"]
    assert cache.usage("anthropic", far)["cache_read_input_tokens"] == 0
    unmarked = copy.deepcopy(long)
    del unmarked["system"][0]["cache_control"]
    assert cache.usage("anthropic", unmarked)["cache_read_input_tokens"] == 0


PRICE = ModelPrice(input=3.0, output=15.0, cache_write=3.75, cache_read=0.3)


def _manager(url: str, wire: str) -> ProviderManager:
    provider = ProviderConfig(
        kind=ProviderKind.ANTHROPIC if wire != "openai" else ProviderKind.OPENAI_COMPATIBLE,
        base_url=url if wire != "openai" else f"{url}/v1",
        transport="sdk" if wire == "anthropic" else "http",
        auth_ref="AIR_TEST_KEY",
        models={
            "m1": ModelConfig(
                price=PRICE, supports_prompt_cache=True, api_model="claude-sonnet-4-5"
            )
        },
    )
    config = ModelsConfig(default="p/m1", providers={"p": provider})
    return ProviderManager(config, env={"AIR_TEST_KEY": FAKE_KEY})


def _reply(wire: str, body: dict[str, Any]) -> Reply:
    turn = Turn(text=["done"])
    return Reply(chunks=openai_sse(turn) if wire == "openai" else anthropic_sse(turn))


@pytest.mark.parametrize("wire", ["anthropic", "anthropic_http", "openai"])
async def test_the_second_request_reads_the_cache_and_the_usage_prices_it(wire: str) -> None:
    with LocalServer(api_key=FAKE_KEY, model=_reply) as server:
        manager = _manager(server.url, wire)
        first_turn = request(system=LONG)
        follow = [
            *first_turn.messages,
            CanonicalMessage(role="assistant", content=[TextBlock(text="ok")]),
            CanonicalMessage(role="user", content=[TextBlock(text="and now?")]),
        ]
        try:
            first = await collect(manager, first_turn)
            second = await collect(manager, request(system=LONG, messages=follow))
        finally:
            await manager.aclose()
        assert server.rejected == []
    one, two = first.events[-1], second.events[-1]
    assert isinstance(one, MessageStopEvent)
    assert isinstance(two, MessageStopEvent)
    assert two.usage.cache_read_input_tokens > 1024
    if wire != "openai":
        assert one.usage.cache_creation_input_tokens > 1024
        body = server.requests[1].body
        assert body["system"][-1]["cache_control"] == EPHEMERAL
        assert body["tools"][-1]["cache_control"] == EPHEMERAL
        assert body["messages"][-1]["content"][-1]["cache_control"] == EPHEMERAL
    else:
        assert "cache_control" not in str(server.requests[1].body)
    usage = two.usage
    expected = (
        usage.input_tokens * 3.0
        + usage.output_tokens * 15.0
        + usage.cache_creation_input_tokens * 3.75
        + usage.cache_read_input_tokens * 0.3
    ) / 1_000_000
    assert usage.cost_usd == pytest.approx(expected)
    assert manager.usage.for_task("task_1").cache_read_input_tokens == usage.cache_read_input_tokens
