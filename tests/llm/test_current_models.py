"""The models current in December 2026 (their vendors' model pages): the catalogue's Claude 5.x
and GPT-6 entries, Haiku 5.5's price past a 100K-token prompt, models their vendor retired
refused before anything runs (exit 2, the model to use instead) unless a gateway serves them,
and GPT-6 in Chat Completions calling tools only at reasoning effort none (the strict server
refuses any other effort with tools), so the catalogue calls every GPT-6 model on the Responses
API, tools at any effort."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from air.contracts.provider import (
    ModelConfig,
    ModelRequirement,
    ModelsConfig,
    ProviderConfig,
    ProviderKind,
    ToolSpec,
    Usage,
)
from air.llm.catalogue import catalogue, complete_model
from air.llm.lifecycle import retired_refusal
from air.llm.manager import ProviderManager
from air.llm.usage import cost_of
from air.testing.openai_rules import openai_problem
from air.testing.problems import DEFAULT_CEILING, ceiling
from air.testing.responses_rules import responses_problem
from air.testing.wire_replies import blocks_sse
from tests.forked_air import air_cli
from tests.llm.conftest import FAKE_KEY
from tests.llm.helpers import collect, request
from tests.llm.servers import LocalServer, Reply, Turn, openai_sse

HEADERS = {"authorization": f"Bearer {FAKE_KEY}"}


def test_the_current_claude_and_gpt_models_are_in_the_catalogue() -> None:
    known = catalogue()
    for model, (price_in, price_out, read) in {
        "claude-opus-5-5": (4.0, 20.0, 0.2),
        "claude-sonnet-5-5": (2.0, 10.0, 0.1),
        "claude-haiku-5-5": (0.1, 0.5, 0.01),
        "claude-fable-5-2": (8.0, 40.0, 0.2),
        "claude-opus-5": (5.0, 25.0, 0.5),
        "gpt-6-sol": (2.0, 10.0, 0.2),
        "gpt-6.1-sol": (2.0, 10.0, 0.1),
        "gpt-6-luna": (0.1, 0.5, 0.01),
    }.items():
        config = ModelConfig.model_validate(known[model].fields)
        assert config.price is not None
        assert (config.price.input, config.price.output, config.price.cache_read) == (
            price_in,
            price_out,
            read,
        ), model
        assert config.context_window >= 1_000_000, model
        assert config.max_output_tokens == 128_000, model
        assert known[model].retired is None
    for model in ("gpt-6-sol", "gpt-6-luna", "gpt-6.1-sol"):
        config = complete_model(model, ModelConfig())
        assert (config.api, config.reasoning_effort, config.supports_tools) == (
            "responses",
            None,
            True,
        ), model
    assert complete_model("gpt-6.1-sol", ModelConfig()).reasoning_efforts[-1] == "max"


def test_haiku_5_5_past_100k_prompt_tokens_pays_the_long_rates_on_every_token() -> None:
    price = complete_model("claude-haiku-5-5", ModelConfig()).price
    short = Usage(input_tokens=60_000, cache_read_input_tokens=40_000, output_tokens=1_000)
    long = short.model_copy(update={"input_tokens": 60_001})
    assert cost_of(short, price) == pytest.approx(
        (60_000 * 0.1 + 40_000 * 0.01 + 1_000 * 0.5) / 1e6
    )
    assert cost_of(long, price) == pytest.approx((60_001 * 0.5 + 40_000 * 0.05 + 1_000 * 2.5) / 1e6)


def _anthropic(model: str, base_url: str | None = None) -> ModelsConfig:
    provider = ProviderConfig(
        kind=ProviderKind.ANTHROPIC,
        base_url=base_url,
        auth_ref="AIR_TEST_KEY",
        models={model: complete_model(model, ModelConfig())},
    )
    return ModelsConfig(default=f"anthropic/{model}", providers={"anthropic": provider})


def test_a_retired_model_is_refused_with_the_day_and_the_model_to_use() -> None:
    refusal = retired_refusal(_anthropic("claude-opus-4-1"), "anthropic/claude-opus-4-1", env={})
    assert refusal is not None
    assert refusal.kind == "config_error"
    assert "retired by its vendor on 2026-08-05" in refusal.error.message
    assert "claude-opus-5-5" in (refusal.user_action or "")
    dated = _anthropic("claude-sonnet-4-20250514")
    assert retired_refusal(dated, "anthropic/claude-sonnet-4-20250514", env={}) is not None
    assert (
        retired_refusal(_anthropic("claude-opus-5-5"), "anthropic/claude-opus-5-5", env={}) is None
    )
    # a gateway keeps its own schedule: its endpoint answers for itself
    gateway = _anthropic("claude-opus-4-1", base_url="https://gateway.example/anthropic")
    assert retired_refusal(gateway, "anthropic/claude-opus-4-1", env={}) is None
    via_env = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9/"}
    assert (
        retired_refusal(_anthropic("claude-opus-4-1"), "anthropic/claude-opus-4-1", via_env) is None
    )


def test_air_refuses_a_retired_model_before_a_session_and_lists_it_retired(tmp_path: Path) -> None:
    root, home = tmp_path / "proj", tmp_path / "home"
    root.mkdir()
    (home / ".air").mkdir(parents=True)
    (home / ".air" / "models.yaml").write_text(
        "default: anthropic/claude-opus-4-1\nescalation: []\nproviders:\n  anthropic:\n"
        "    kind: anthropic\n    auth_ref: AIR_TEST_KEY\n    models:\n"
        "      claude-opus-4-1: {}\n      claude-opus-5-5: {}\n"
    )
    (root / "batch.yaml").write_text("version: 1\ntasks:\n  - {id: a, title: A}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIR_", "ANTHROPIC_"))}
    env.update(HOME=str(home), AIR_TEST_KEY=FAKE_KEY)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    run = air_cli(["run", "--headless", "batch.yaml"], cwd=root, env=env, timeout=60)
    assert run.returncode == 2, run.stderr
    assert "anthropic/claude-opus-4-1 was retired by its vendor on 2026-08-05" in run.stderr
    assert "--model claude-opus-5-5" in run.stderr
    assert "Traceback" not in run.stderr
    assert not (root / ".air" / "local" / "sessions").exists()
    listed = air_cli(["provider", "list"], cwd=root, env=env, timeout=60)
    assert listed.returncode == 0, listed.stderr
    line = next(x for x in listed.stdout.splitlines() if "anthropic/claude-opus-4-1" in x)
    assert line.endswith("RETIRED 2026-08-05")
    current = next(x for x in listed.stdout.splitlines() if "anthropic/claude-opus-5-5" in x)
    assert "RETIRED" not in current


def _chat(model: str, **extra: object) -> dict[str, object]:
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    return {
        "model": model,
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [tool],
    } | extra


def test_gpt_6_chat_completions_call_tools_only_at_effort_none() -> None:
    refused = openai_problem(HEADERS, _chat("gpt-6-sol"))  # the default effort is medium
    assert refused is not None
    assert (refused.status, refused.param) == (400, "tools")
    assert openai_problem(HEADERS, _chat("gpt-6-sol", reasoning_effort="high")) is not None
    assert openai_problem(HEADERS, _chat("gpt-6-sol", reasoning_effort="none")) is None
    assert openai_problem(HEADERS, _chat("gpt-6-luna", reasoning_effort="none")) is None
    no_none = openai_problem(HEADERS, _chat("gpt-6.1-sol", reasoning_effort="none"))
    assert no_none is not None
    assert no_none.param == "reasoning_effort"
    assert openai_problem(HEADERS, _chat("gpt-6-sol", max_tokens=10)) is not None


async def test_air_calls_gpt_6_with_tools_on_responses_and_on_chat_only_at_effort_none(
    server: LocalServer,
) -> None:
    """The catalogue's gpt-6.1-sol (no effort none) calls tools on the Responses API at the
    API's default effort; gpt-6-sol set to the chat wire does at effort none only."""
    chat_sol = ModelConfig(api="chat_completions", reasoning_effort="none")
    provider = ProviderConfig(
        kind=ProviderKind.OPENAI_COMPATIBLE,
        base_url=server.url + "/v1",
        auth_ref="AIR_TEST_KEY",
        models={
            "gpt-6-sol": complete_model("gpt-6-sol", chat_sol),
            "gpt-6.1-sol": complete_model("gpt-6.1-sol", ModelConfig()),
        },
    )
    config = ModelsConfig(default="openai/gpt-6-sol", providers={"openai": provider})
    manager = ProviderManager(config, env={"AIR_TEST_KEY": FAKE_KEY})
    tool = ToolSpec(name="f", description="f", input_schema={"type": "object"})
    try:
        server.push(Reply(chunks=openai_sse(Turn(text=["ok"]))))
        server.push(Reply(chunks=blocks_sse("responses", [("text", ["ok"])], "end_turn")))
        for model in ("gpt-6-sol", "gpt-6.1-sol"):
            got = await collect(
                manager, request(provider_id="openai", model_id=model, tools=[tool])
            )
            assert got.types[-1] == "message_stop", got.events[-1]
        assert manager.select_model(ModelRequirement(model="openai/gpt-6.1-sol")).model_id
    finally:
        await manager.aclose()
    assert [r.problem for r in server.rejected] == []
    chat, responses = (r.body for r in server.requests)
    assert [r.path for r in server.requests] == ["/v1/chat/completions", "/v1/responses"]
    assert (chat["reasoning_effort"], "max_tokens" in chat) == ("none", False)
    assert "reasoning" not in responses
    assert responses["tools"][0]["name"] == "f"
    assert responses["max_output_tokens"] > 0
    assert responses_problem(HEADERS, {**responses, "reasoning": {"effort": "none"}}) is not None


def test_the_strict_servers_know_the_current_models_output_ceiling() -> None:
    for model in ("claude-opus-5-5", "claude-haiku-5-5", "claude-fable-5-2", "gpt-6.1-sol"):
        assert ceiling(model, None) == 128_000
    assert ceiling("claude-sonnet-4-5", None) == DEFAULT_CEILING
    assert ceiling("gpt-6-sol", {"gpt-6-sol": 10}) == 10
    over = _chat("gpt-6-sol", reasoning_effort="none", max_completion_tokens=128_001)
    assert openai_problem(HEADERS, over) is not None
    fits = _chat("gpt-6-sol", reasoning_effort="none", max_completion_tokens=128_000)
    assert openai_problem(HEADERS, fits) is None


def _messages_body(model: str, **extra: object) -> dict[str, object]:
    return {
        "model": model,
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "hi"}],
    } | extra


def test_claude_s_effort_is_output_config_effort_where_the_model_takes_it() -> None:
    from air.testing.anthropic_rules import anthropic_problem

    anthropic = {"x-api-key": FAKE_KEY, "anthropic-version": "2023-06-01"}
    for effort in ("low", "xhigh", "max"):
        body = _messages_body("claude-opus-5-5", output_config={"effort": effort})
        assert anthropic_problem(anthropic, body, api_key=FAKE_KEY) is None
    wrong = _messages_body("claude-opus-5-5", output_config={"effort": "minimal"})
    refused = anthropic_problem(anthropic, wrong, api_key=FAKE_KEY)
    assert refused is not None
    assert "output_config.effort" in refused.message
    older = _messages_body("claude-haiku-4-5", output_config={"effort": "high"})
    assert anthropic_problem(anthropic, older, api_key=FAKE_KEY) is not None
    assert complete_model("claude-opus-5-5", ModelConfig(reasoning_effort="max")).reasoning_effort
    with pytest.raises(ValueError, match="does not take 'high'"):
        complete_model("claude-haiku-4-5", ModelConfig(reasoning_effort="high"))


@pytest.mark.parametrize("transport", ["http", "sdk"])
async def test_air_sends_claude_s_effort_on_both_transports(
    transport: str, server: LocalServer
) -> None:
    model = complete_model("claude-opus-5-5", ModelConfig(reasoning_effort="high"))
    provider = ProviderConfig(
        kind=ProviderKind.ANTHROPIC,
        base_url=server.url,
        auth_ref="AIR_TEST_KEY",
        transport=transport,
        models={"claude-opus-5-5": model},
    )
    config = ModelsConfig(default="anthropic/claude-opus-5-5", providers={"anthropic": provider})
    manager = ProviderManager(config, env={"AIR_TEST_KEY": FAKE_KEY})
    try:
        server.push(Reply(chunks=blocks_sse("anthropic", [("text", ["ok"])], "end_turn")))
        got = await collect(
            manager, request(provider_id="anthropic", model_id="claude-opus-5-5", tools=[])
        )
        assert got.types[-1] == "message_stop", got.events[-1]
    finally:
        await manager.aclose()
    assert [r.problem for r in server.rejected] == []
    assert server.requests[0].body["output_config"] == {"effort": "high"}
