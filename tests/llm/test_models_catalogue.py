"""The model catalogue (issue 26 item 2): shipped data completing models.yaml entries, honest
"unknown" prices, ``--model NAME`` routing, and one endpoint per provider for every transport
(``ANTHROPIC_BASE_URL`` / ``OPENAI_BASE_URL``)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from air.contracts.error import AirException
from air.contracts.provider import ModelConfig, ModelsConfig, ProviderConfig, ProviderKind, Usage
from air.llm.catalogue import catalogue, complete_model, lookup
from air.llm.config import base_url_of, env_models_config, load_models_config
from air.llm.manager import ProviderManager
from air.llm.model_choice import with_model
from air.llm.usage import UsageAccumulator, cost_of
from tests.forked_air import air_cli
from tests.llm.conftest import FAKE_KEY
from tests.llm.helpers import collect, request
from tests.llm.servers import LocalServer, Reply, Turn, anthropic_sse

REPO = Path(__file__).resolve().parents[2]


def test_the_catalogue_covers_the_current_models_with_checked_data() -> None:
    known = catalogue()
    for model in (
        "claude-opus-4-5",
        "claude-opus-4-1",
        "claude-sonnet-4-5",
        "claude-sonnet-4-0",
        "claude-haiku-4-5",
        "claude-3-7-sonnet",
        "claude-3-5-haiku",
        "gpt-5",
        "gpt-5-mini",
        "gpt-5.1",
        "gpt-4.1",
        "gpt-4.1-mini",
        "gpt-4o",
        "gpt-4o-mini",
        "o3",
        "o3-mini",
        "o4-mini",
    ):
        entry = known[model]
        config = ModelConfig.model_validate(entry.fields)
        assert config.price is not None, model
        assert config.price.input > 0, model
        assert config.context_window >= 128_000, model
        assert config.max_output_tokens >= 8192, model
    gpt5 = lookup("gpt-5")
    assert gpt5 is not None
    assert gpt5.fields["max_tokens_param"] == "max_completion_tokens"
    assert lookup("o4-mini").fields["max_tokens_param"] == "max_completion_tokens"  # type: ignore[union-attr]
    assert lookup("gpt-4.1").fields["max_tokens_param"] == "max_tokens"  # type: ignore[union-attr]
    # dated ids and -latest resolve to their entry
    assert lookup("claude-sonnet-4-5-20250929") == known["claude-sonnet-4-5"]
    assert lookup("gpt-5-2025-08-07") == known["gpt-5"]
    assert lookup("claude-3-7-sonnet-latest") == known["claude-3-7-sonnet"]
    assert lookup("o3-pro") is None  # a prefix is not a match: o3-pro is priced differently


def test_an_entry_overrides_the_catalogue_field_by_field() -> None:
    model = complete_model(
        "gpt-5",
        ModelConfig.model_validate({"max_output_tokens": 1000, "price": {"input": 1.0}}),
    )
    assert model.max_output_tokens == 1000
    assert model.context_window == 400_000  # from the catalogue
    assert model.price is not None
    assert (model.price.input, model.price.output) == (1.0, 10.0)
    assert model.max_tokens_param == "max_completion_tokens"


def test_unknown_models_have_unknown_prices_never_zero() -> None:
    model = complete_model("qwen2.5-coder:7b", ModelConfig())
    assert model.price is None
    usage = Usage(input_tokens=1000, output_tokens=10)
    assert cost_of(usage, model.price) is None
    accumulator = UsageAccumulator()
    accumulator.add(usage.model_copy(update={"cost_usd": 0.5}), task_id="t")
    accumulator.add(usage.model_copy(update={"cost_usd": None}), task_id="t")
    assert accumulator.total.cost_usd is None
    assert accumulator.for_task("t").cost_usd is None


def test_the_environment_configures_a_reasoning_model_from_the_catalogue() -> None:
    config = env_models_config({"OPENAI_API_KEY": "k", "OPENAI_MODEL": "gpt-5"})
    model = config.providers["openai"].models["gpt-5"]
    assert model.max_tokens_param == "max_completion_tokens"
    assert model.price is not None
    assert model.price.cache_read == 0.125
    unknown = env_models_config({"OPENAI_API_KEY": "k", "OPENAI_MODEL": "my-finetune"})
    assert unknown.providers["openai"].models["my-finetune"].price is None


def test_a_reasoning_effort_the_model_does_not_take_names_the_file_and_field(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    (home / ".air").mkdir(parents=True)
    path = home / ".air" / "models.yaml"
    path.write_text(
        "default: openai/gpt-4.1\nproviders:\n  openai:\n    kind: openai_compatible\n"
        "    base_url: https://api.openai.com/v1\n    models:\n"
        "      gpt-4.1: {reasoning_effort: high}\n"
    )
    with pytest.raises(AirException) as caught:
        load_models_config(None, home=str(home), env={})
    message = caught.value.error.message
    assert str(path) in message
    assert "providers.openai.models.gpt-4.1.reasoning_effort" in message
    path.write_text(path.read_text().replace("gpt-4.1", "o3").replace("high", "minimal"))
    with pytest.raises(AirException, match="takes: low, medium, high"):
        load_models_config(None, home=str(home), env={})
    path.write_text(path.read_text().replace("minimal", "high"))
    loaded = load_models_config(None, home=str(home), env={})
    assert loaded.providers["openai"].models["o3"].reasoning_effort == "high"


def _config(*providers: tuple[str, ProviderKind, list[str]], default: str) -> ModelsConfig:
    return ModelsConfig(
        default=default,
        roles={"reviewer": default},
        providers={
            pid: ProviderConfig(
                kind=kind,
                base_url="http://127.0.0.1:9/v1"
                if kind is ProviderKind.OPENAI_COMPATIBLE
                else None,
                auth_ref="K",
                models={m: ModelConfig() for m in models},
            )
            for pid, kind, models in providers
        },
    )


def test_model_flag_routes_a_name_to_the_provider_that_serves_it() -> None:
    config = _config(
        ("anthropic", ProviderKind.ANTHROPIC, ["claude-sonnet-4-5"]),
        ("openai", ProviderKind.OPENAI_COMPATIBLE, ["gpt-4.1"]),
        default="anthropic/claude-sonnet-4-5",
    )
    chosen = with_model(config, "gpt-5")
    assert chosen.default == "openai/gpt-5"
    assert chosen.roles == {}  # --model wins over the role pins
    assert chosen.providers["openai"].models["gpt-5"].max_tokens_param == "max_completion_tokens"
    assert with_model(config, "claude-haiku-4-5").default == "anthropic/claude-haiku-4-5"
    assert with_model(config, "openai/gpt-4.1").default == "openai/gpt-4.1"
    assert with_model(config, "my-local", "openai").default == "openai/my-local"
    only_openai = _config(
        ("openai", ProviderKind.OPENAI_COMPATIBLE, ["gpt-4.1"]), default="openai/gpt-4.1"
    )
    with pytest.raises(AirException, match="kind anthropic; none is configured"):
        with_model(only_openai, "claude-opus-4-5")
    with pytest.raises(AirException, match="no provider 'nope'"):
        with_model(only_openai, "gpt-5", "nope")


def _air(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return air_cli(args, cwd=cwd, env={**os.environ, **env, "PYTHONPATH": str(REPO)}, timeout=60)


def test_model_flag_errors_exit_2_with_what_to_do(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": ""}
    batch = tmp_path / "batch.yaml"
    batch.write_text(
        "version: 1\ntasks:\n  - id: look\n    type: review\n    title: Look\n"
        "    description: Say hello.\n"
    )
    wrong = _air(["run", "--headless", str(batch), "--model", "claude-opus-4-5"], env, tmp_path)
    assert wrong.returncode == 2, wrong.stderr
    assert "--model claude-opus-4-5" in wrong.stderr
    assert "what to do" in wrong.stderr
    both = _air(
        ["run", "--headless", str(batch), "-m", "gpt-5", "--cassette", str(batch)], env, tmp_path
    )
    prompt = _air(["-m", "claude-opus-4-5", "-p", "Say hello."], env, tmp_path)
    assert prompt.returncode == 2, prompt.stderr
    assert "--model claude-opus-4-5" in prompt.stderr  # `air -m NAME -p PROMPT` is a run
    assert both.returncode == 2
    assert "--model and --cassette" in both.stderr


def test_base_url_precedence() -> None:
    anthropic = ProviderConfig(kind=ProviderKind.ANTHROPIC)
    assert base_url_of(anthropic, {}) == ("https://api.anthropic.com", "default")
    assert base_url_of(anthropic, {"ANTHROPIC_BASE_URL": "http://x"}) == (
        "http://x",
        "ANTHROPIC_BASE_URL",
    )
    pinned = anthropic.model_copy(update={"base_url": "http://y"})
    assert base_url_of(pinned, {"ANTHROPIC_BASE_URL": "http://x"}) == ("http://y", "base_url")
    openai = ProviderConfig(kind=ProviderKind.OPENAI_COMPATIBLE)
    assert base_url_of(openai, {"OPENAI_BASE_URL": "http://z/v1"})[0] == "http://z/v1"


@pytest.mark.parametrize("transport", ["sdk", "http"])
async def test_every_anthropic_transport_honours_anthropic_base_url(transport: str) -> None:
    with LocalServer(api_key=FAKE_KEY) as server:
        server.push(Reply(chunks=anthropic_sse(Turn(text=["ok"]))))
        provider = ProviderConfig(
            kind=ProviderKind.ANTHROPIC,
            auth_ref="AIR_TEST_KEY",
            transport=transport,
            models={"m1": ModelConfig()},
        )
        env = {"AIR_TEST_KEY": FAKE_KEY, "ANTHROPIC_BASE_URL": server.url}
        manager = ProviderManager(ModelsConfig(default="p/m1", providers={"p": provider}), env=env)
        try:
            got = await collect(manager, request())
        finally:
            await manager.aclose()
        assert got.types[-1] == "message_stop"
        assert [r.path for r in server.requests] == ["/v1/messages"]
