"""A model's bound on the tools one request offers (``ModelConfig.max_tools``; OpenAI's chat
completions take 128, as the API reference says and the strict server refuses): the catalogue
knows it, and a request over it is refused by air before anything is sent."""

from __future__ import annotations

import pytest

from air.contracts.error import AirException
from air.contracts.provider import ModelConfig, ToolSpec
from air.llm.catalogue import catalogue, complete_model
from air.llm.manager import ProviderManager
from air.testing.openai_rules import openai_problem
from tests.llm.conftest import FAKE_KEY
from tests.llm.helpers import collect, models_config, request, sse_for
from tests.llm.servers import LocalServer, Reply, Turn


def _tool(name: str) -> ToolSpec:
    return ToolSpec(name=name, description=name, input_schema={"type": "object"})


def test_the_strict_server_refuses_a_129th_tool_as_the_api_does() -> None:
    def body(n: int) -> dict[str, object]:
        tools = [
            {"type": "function", "function": {"name": f"t{i}", "parameters": {"type": "object"}}}
            for i in range(n)
        ]
        return {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}], "tools": tools}

    headers = {"authorization": f"Bearer {FAKE_KEY}"}
    assert openai_problem(headers, body(128)) is None
    refused = openai_problem(headers, body(129))
    assert refused is not None
    assert (refused.status, refused.code, refused.param) == (400, "array_above_max_length", "tools")
    assert "maximum length 128, but got an array with length 129" in refused.message


def test_the_catalogue_bounds_the_openai_models_and_not_the_anthropic_ones() -> None:
    assert complete_model("gpt-4.1", ModelConfig()).max_tools == 128
    assert complete_model("gpt-5", ModelConfig()).max_tools == 128
    assert complete_model("claude-sonnet-4-5", ModelConfig()).max_tools is None
    assert complete_model("gpt-4.1", ModelConfig(max_tools=500)).max_tools == 500  # a gateway's
    openai = [e for e in catalogue().values() if e.kind == "openai_compatible"]
    assert openai
    assert all(e.fields.get("max_tools") == 128 for e in openai)


async def test_a_request_over_the_model_s_bound_is_refused_before_it_is_sent(
    server: LocalServer,
) -> None:
    config = models_config("openai", server.url)
    model = config.providers["p"].models["m1"]
    config.providers["p"].models["m1"] = model.model_copy(update={"max_tools": 2})
    manager = ProviderManager(config, env={"AIR_TEST_KEY": FAKE_KEY})
    try:
        with pytest.raises(AirException) as refused:
            await collect(manager, request(tools=[_tool("a"), _tool("b"), _tool("c")]))
        assert refused.value.error.kind == "config_error"
        assert "3 tools would be offered to p/m1, whose API takes at most 2" in str(refused.value)
        assert "tools:" in (refused.value.error.user_action or "")
        assert server.requests == []
        server.push(Reply(chunks=sse_for("openai", Turn(text=["ok"]))))
        got = await collect(manager, request(tools=[_tool("a"), _tool("b")]))
        assert got.types[-1] == "message_stop"
        assert len(server.requests) == 1
    finally:
        await manager.aclose()
    room = manager.tool_room("p/m1")
    assert room is not None
    assert room.max_tools == 2
    assert manager.tool_room("p/nope") is None


def test_tool_definitions_past_a_requests_room_are_refused_before_any_task() -> None:
    from air.nursery.runtime import RuntimeServices, _check_tools_fit

    config = models_config("openai", "http://127.0.0.1:9")
    model = config.providers["p"].models["m1"]
    small = model.model_copy(update={"context_window": 20_000, "max_output_tokens": 4_000})
    config.providers["p"].models["m1"] = small  # room: (20,000 - 4,000) / 2 tokens
    manager = ProviderManager(config, env={"AIR_TEST_KEY": FAKE_KEY})
    services = RuntimeServices(provider=manager, model="p/m1", tool_room=manager.tool_room)

    def specs(n: int, size: int) -> list[dict[str, object]]:
        schema = {"type": "object"}
        return [
            {"name": f"t{i}", "description": "x" * size, "input_schema": schema} for i in range(n)
        ]

    _check_tools_fit(services, specs(20, 1_000))  # ~5,300 tokens
    with pytest.raises(AirException) as refused:
        _check_tools_fit(services, specs(20, 2_000))  # ~10,300 tokens
    assert refused.value.error.kind == "config_error"
    assert "of every request to p/m1, which leaves a worker's context no room (at most ~8000)" in (
        refused.value.error.message
    )
    assert "`tools:`" in (refused.value.error.user_action or "")
