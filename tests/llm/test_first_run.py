"""A first run that just works: no models.yaml, only the environment (ANTHROPIC_API_KEY,
OPENAI_API_KEY, *_BASE_URL) — real `air` processes against the strict local servers; nothing
configured or a bad models.yaml exits 2 naming file, field and reason, with a user_action that
points at a document shipped in the installed package."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from air.contracts.error import AirException
from air.contracts.provider import ModelRequirement, ModelsConfig, ProviderKind
from air.llm.config import env_models_config
from air.llm.manager import ProviderManager
from air.testing.strict_servers import StrictServer
from air.testing.wire_replies import Reply, Turn, anthropic_sse, blocks_sse, openai_sse
from tests.forked_air import air_cli
from tests.headless import REVIEW_BATCH, review_verdict
from tests.trusted import trust_project

REPO = Path(__file__).resolve().parents[2]
KEY = "zq81-first-run-0a9b8c7d6e5f4a3b2c1d0e9f8a7b"


def _clean_env(home: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "OPENAI_", "AIR_")) and k != "HOME"
    }
    return {**env, "HOME": str(home), **extra}


def _air(root: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return air_cli(args, cwd=root, env=env)


def _project(tmp_path: Path) -> tuple[Path, Path]:
    root, home = tmp_path / "proj", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    (root / "notes.txt").write_text("ship it\n")
    (root / "batch.yaml").write_text(REVIEW_BATCH)
    return root, home


def test_environment_selects_the_provider() -> None:
    anthropic = env_models_config({"ANTHROPIC_API_KEY": KEY})
    assert anthropic.default == "anthropic/claude-opus-5-5"
    provider = anthropic.providers["anthropic"]
    assert provider.kind is ProviderKind.ANTHROPIC
    assert provider.auth_ref == "ANTHROPIC_API_KEY"
    assert provider.models["claude-opus-5-5"].max_output_tokens == 128_000
    openai = env_models_config({"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": "https://x.test/v1"})
    assert openai.default == "openai/gpt-6-sol"
    assert openai.providers["openai"].base_url == "https://x.test/v1"
    both = env_models_config({"OPENAI_API_KEY": KEY, "ANTHROPIC_API_KEY": KEY})
    assert both.default == "anthropic/claude-opus-5-5"
    assert set(both.providers) == {"anthropic", "openai"}
    local = env_models_config({"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1", "OPENAI_MODEL": "q"})
    assert local.default == "openai/q"
    assert local.providers["openai"].auth_ref is None
    assert env_models_config({"OPENAI_BASE_URL": "https://remote.test/v1"}).providers == {}
    assert env_models_config({}).providers == {}
    named = env_models_config({"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": "http://h:1"})
    assert named.providers["anthropic"].base_url == "http://h:1"


def test_files_win_over_the_environment(tmp_path: Path) -> None:
    (tmp_path / ".air").mkdir()
    (tmp_path / ".air" / "models.yaml").write_text(
        "default: l/m\nproviders:\n  l: {kind: openai_compatible, base_url: 'http://x/v1', "
        "models: {m: {}}}\n"
    )
    config = ProviderManager.load_config(None, home=str(tmp_path), env={"ANTHROPIC_API_KEY": KEY})
    assert set(config.providers) == {"l"}


def test_nothing_configured_is_a_config_error_saying_what_to_set(tmp_path: Path) -> None:
    config = ProviderManager.load_config(None, home=str(tmp_path), env={})
    with pytest.raises(AirException) as info:
        ProviderManager(config).select_model(ModelRequirement(role="executor"))
    assert info.value.kind.value == "config_error"
    assert "ANTHROPIC_API_KEY" in (info.value.user_action or "")
    _assert_reference_exists(info.value.user_action)


def _assert_reference_exists(user_action: str | None) -> None:
    found = re.search(r"installed copy: (\S+?\.yaml)", user_action or "")
    assert found, user_action
    assert Path(found.group(1)).is_file()


@pytest.mark.parametrize("wire", ["anthropic", "openai"])
def test_a_key_in_the_environment_is_enough(wire: str, tmp_path: Path) -> None:
    root, home = _project(tmp_path)
    with StrictServer(api_key=KEY) as server:
        if wire == "anthropic":
            env = _clean_env(home, ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=server.url)
            server.push(Reply(chunks=anthropic_sse(Turn(text=[review_verdict()]))))
        else:
            env = _clean_env(home, OPENAI_API_KEY=KEY, OPENAI_BASE_URL=server.url + "/v1")
            # gpt-6-sol, the default, is on the Responses API
            verdict = blocks_sse("responses", [("text", [review_verdict()])], "end_turn")
            server.push(Reply(chunks=verdict))
        current = _air(root, env, "provider", "current")
        proc = _air(root, env, "run", "--headless", "batch.yaml")
        requests, rejected = list(server.requests), list(server.rejected)
    assert current.returncode == 0, current.stderr
    assert server.url in current.stdout
    assert ("ANTHROPIC_API_KEY (set)" if wire == "anthropic" else "OPENAI_API_KEY (set)") in (
        current.stdout
    )
    assert proc.returncode == 0, proc.stderr
    assert rejected == []
    assert len(requests) == 1
    model = "claude-opus-5-5" if wire == "anthropic" else "gpt-6-sol"
    assert requests[0].body["model"] == model


def test_a_local_openai_compatible_server_needs_no_key(tmp_path: Path) -> None:
    root, home = _project(tmp_path)
    with StrictServer(openai_keyless=True) as server:
        server.push(Reply(chunks=openai_sse(Turn(text=[review_verdict()]))))
        env = _clean_env(home, OPENAI_BASE_URL=server.url + "/v1", OPENAI_MODEL="qwen-local")
        current = _air(root, env, "provider", "current")
        proc = _air(root, env, "run", "--headless", "batch.yaml")
        requests = list(server.requests)
    assert "openai/qwen-local" in current.stdout
    assert "key: none" in current.stdout
    assert proc.returncode == 0, proc.stderr
    assert "authorization" not in requests[0].headers
    assert requests[0].body["model"] == "qwen-local"


def test_nothing_configured_exits_2_without_a_traceback(tmp_path: Path) -> None:
    root, home = _project(tmp_path)
    env = _clean_env(home)
    for args in (("run", "--headless", "batch.yaml"), ("provider", "current")):
        proc = _air(root, env, *args)
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr
        assert "ANTHROPIC_API_KEY" in proc.stderr
        _assert_reference_exists(proc.stderr.replace("\n", " "))


def test_the_default_models_key_unset_exits_2_before_a_session(tmp_path: Path) -> None:
    """``air init --models`` wrote the template (its default names ANTHROPIC_API_KEY) and the
    key is not exported: refused before a session exists (each task failed its first turn);
    ``--model`` of a provider whose key is set runs."""
    root, home = _project(tmp_path)
    env = _clean_env(home)
    assert _air(root, env, "init", "--models").returncode == 0
    trust_project(root, home)
    for args in (("run", "--headless", "batch.yaml"), ("run", "-p", "hi", "--headless")):
        proc = _air(root, env, *args)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "config_error: environment variable ANTHROPIC_API_KEY" in proc.stderr
        assert "--model" in proc.stderr
        assert "Traceback" not in proc.stderr
    assert not (root / ".air" / "local" / "sessions").exists() or not any(
        (root / ".air" / "local" / "sessions").iterdir()
    )
    models = root / ".air" / "shared" / "models.yaml"
    with StrictServer(api_key=KEY) as server:
        server.push(Reply(chunks=openai_sse(Turn(text=[review_verdict()]))))
        models.write_text(models.read_text().replace("https://api.openai.com", server.url))
        trust_project(root, home)
        chosen = ("--model", "openai/gpt-4.1")
        proc = _air(
            root, {**env, "OPENAI_API_KEY": KEY}, "run", "--headless", "batch.yaml", *chosen
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("text", "field", "reason"),
    [
        ("providers: [\n", "line", "not valid YAML"),
        ("default: a/b\nprovidrs: {}\n", "providrs", "Extra inputs"),
        (
            "providers:\n  a: {kind: anthropic, timeout_s: soon, models: {m: {}}}\n",
            "providers.a.timeout_s",
            "valid number",
        ),
        (
            "providers:\n  a: {kind: anthropic, models: {m: {max_output_tokens: many}}}\n",
            "providers.a.models.m.max_output_tokens",
            "valid integer",
        ),
    ],
)
def test_bad_models_yaml_exits_2_naming_file_field_reason(
    tmp_path: Path, text: str, field: str, reason: str
) -> None:
    root, home = _project(tmp_path)
    path = root / ".air" / "shared" / "models.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    trust_project(root, home)
    proc = _air(root, _clean_env(home), "run", "--headless", "batch.yaml")
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert str(path) in proc.stderr
    assert field in proc.stderr
    assert reason in proc.stderr
    _assert_reference_exists(proc.stderr.replace("\n", " "))


def test_unknown_provider_exits_2(tmp_path: Path) -> None:
    root, home = _project(tmp_path)
    env = _clean_env(home, ANTHROPIC_API_KEY=KEY)
    proc = _air(root, env, "run", "--headless", "batch.yaml", "--provider", "nope")
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "'nope' is not configured" in proc.stderr
    _assert_reference_exists(proc.stderr.replace("\n", " "))


def test_the_reference_is_complete_shipped_and_what_init_writes(tmp_path: Path) -> None:
    shipped = (REPO / "air" / "llm" / "resources" / "models.example.yaml").read_text()
    doc = (REPO / "docs" / "models.md").read_text()
    assert f"```yaml\n{shipped}```" in doc
    config = ModelsConfig.model_validate(yaml.safe_load(shipped))
    assert config.default == "anthropic/claude-opus-5-5"
    assert {p.kind for p in config.providers.values()} == set(ProviderKind)
    # what `air init --models` writes uses the fast transport, not the SDK (issue 26)
    assert config.providers["anthropic"].transport == "http"
    for word in (
        "roles:",
        "retry:",
        "escalation:",
        "max_output_tokens",
        "cassette:",
        "record_to",
        "auth_ref",
        "api: responses",
    ):
        assert word in shipped
    root = tmp_path / "proj"
    root.mkdir()
    proc = _air(root, _clean_env(tmp_path), "init", "--models")
    assert proc.returncode == 0, proc.stderr
    assert (root / ".air" / "shared" / "models.yaml").read_text() == shipped
    listed = _air(root, _clean_env(tmp_path), "provider", "list")
    assert "anthropic/claude-opus-5-5" in listed.stdout
    gpt = next(line for line in listed.stdout.splitlines() if "openai/gpt-4.1 " in line)
    assert " tools<=128 " in gpt  # the bound the example and the catalogue give
    # the wire of each OpenAI model: gpt-6.1-sol on the Responses API, tools at any effort
    assert "api=chat_completions " in gpt
    sol = next(line for line in listed.stdout.splitlines() if "openai/gpt-6.1-sol " in line)
    assert "api=responses " in sol
    assert "(max_output_tokens)" in sol
    assert " tools<=128 " in sol
    claude = next(line for line in listed.stdout.splitlines() if "claude-opus-5-5 " in line)
    assert "api=" not in claude


def test_every_provider_config_error_points_at_the_installed_reference() -> None:
    from air.contracts.provider import ModelConfig, ModelsConfig, ProviderConfig

    def error_of(config: ModelsConfig, provider: str, model: str = "m") -> AirException:
        manager = ProviderManager(config, env={})
        try:
            manager.adapter_for(provider).validate_model(model)
            adapter = manager.adapter_for(provider)
            adapter.api_key()
        except AirException as exc:
            return exc
        raise AssertionError("no error")

    models = {"m": ModelConfig()}
    cases = [
        ModelsConfig(
            providers={"o": ProviderConfig(kind=ProviderKind.OPENAI_COMPATIBLE, models=models)}
        ),
        ModelsConfig(providers={"s": ProviderConfig(kind=ProviderKind.SCRIPTED, models=models)}),
        ModelsConfig(providers={"a": ProviderConfig(kind=ProviderKind.ANTHROPIC, models=models)}),
    ]
    errors = [error_of(cases[0], "o"), error_of(cases[1], "s"), error_of(cases[2], "a")]
    errors.append(error_of(cases[2], "nope"))
    for error in errors:
        assert error.kind.value == "config_error", error
        _assert_reference_exists(error.user_action)
