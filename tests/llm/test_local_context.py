"""A local keyless OpenAI-compatible server reports the context length it serves a model with
(Ollama ``/api/show``, llama.cpp ``/props``, vLLM ``/v1/models``), and air sizes the model by
it: in the configuration, ``air provider list`` and the requests' output limit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from air.llm.config import load_models_config
from air.llm.local_context import local_context_length
from air.testing.local_info import LocalServerInfo
from tests.headless import json_events, review_project, review_verdict, run_batch_json
from tests.llm.servers import Reply, StrictServer, Turn, openai_sse

REPO = Path(__file__).resolve().parents[2]
MODEL = "qwen2.5-coder:7b"


@pytest.mark.parametrize(
    "info",
    [
        LocalServerInfo("vllm", MODEL, 24_576),
        LocalServerInfo("llama.cpp", MODEL, 16_384),
        LocalServerInfo("ollama", MODEL, 32_768),
        LocalServerInfo("ollama", MODEL, 32_768, num_ctx=8192),
    ],
    ids=["vllm", "llama.cpp", "ollama", "ollama-num_ctx"],
)
def test_each_server_is_asked_what_it_says(info: LocalServerInfo) -> None:
    with StrictServer(openai_keyless=True, info=info) as server:
        got = local_context_length(f"{server.url}/v1", MODEL)
        other = local_context_length(f"{server.url}/v1", "other-model")
    assert got == (info.num_ctx or info.context_length)
    if info.flavour != "llama.cpp":  # llama.cpp serves one model whatever it is called
        assert other is None


@pytest.mark.parametrize(
    "info",
    [
        LocalServerInfo("vllm", MODEL, 10**400),
        LocalServerInfo("llama.cpp", MODEL, 10**9),
        LocalServerInfo("ollama", MODEL, 10**400, num_ctx="9" * 5000),
        LocalServerInfo("ollama", MODEL, 10**400, num_ctx=10**11),
    ],
    ids=["vllm", "llama.cpp", "ollama", "ollama-num_ctx"],
)
def test_a_window_no_model_has_leaves_the_configuration(info: LocalServerInfo) -> None:
    """400 digits became the model's window unchecked (``model_copy``) and overflowed the
    compaction trigger's float at the first request; Ollama's 5,000 digits failed ``int()``."""
    with StrictServer(openai_keyless=True, info=info) as server:
        assert local_context_length(f"{server.url}/v1", MODEL) is None


def test_a_silent_or_remote_server_leaves_the_configuration() -> None:
    with StrictServer(openai_keyless=True) as server:
        assert local_context_length(f"{server.url}/v1", MODEL) is None
    assert local_context_length("https://api.openai.com/v1", MODEL) is None


def test_a_keyless_local_model_reports_its_real_context_length(tmp_path: Path) -> None:
    info = LocalServerInfo("llama.cpp", MODEL, 16_384)
    with StrictServer(openai_keyless=True, info=info) as server:
        env = {"OPENAI_BASE_URL": f"{server.url}/v1", "OPENAI_MODEL": MODEL}
        config = load_models_config(None, home=str(tmp_path), env=env)
        listed = subprocess.run(
            [sys.executable, "-m", "air.cli", "provider", "list"],
            env={
                **{k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")},
                **env,
                "HOME": str(tmp_path),
                "PYTHONPATH": str(REPO),
            },
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
    model = config.providers["openai"].models[MODEL]
    assert model.context_window == 16_384
    assert model.max_output_tokens == 4096  # a quarter of the window, unless set
    assert model.price is None
    assert listed.returncode == 0, listed.stderr
    assert f"base_url={server.url}/v1 (base_url)" in listed.stdout
    assert "ctx=16384" in listed.stdout
    assert "$/Mtok unknown" in listed.stdout


def test_a_configured_window_or_a_keyed_provider_is_not_asked(tmp_path: Path) -> None:
    info = LocalServerInfo("vllm", MODEL, 24_576)
    with StrictServer(openai_keyless=True, info=info) as server:
        (tmp_path / ".air").mkdir()
        (tmp_path / ".air" / "models.yaml").write_text(
            "default: local/q\nproviders:\n  local:\n    kind: openai_compatible\n"
            f"    base_url: {server.url}/v1\n    models:\n"
            f"      q: {{api_model: '{MODEL}', context_window: 4096}}\n"
            f"      r: {{api_model: '{MODEL}'}}\n"
        )
        config = load_models_config(None, home=str(tmp_path), env={})
        keyed = load_models_config(
            None,
            home=str(tmp_path / "none"),
            env={
                "OPENAI_BASE_URL": f"{server.url}/v1",
                "OPENAI_API_KEY": "k",
                "OPENAI_MODEL": MODEL,
            },
        )
    models = config.providers["local"].models
    assert models["q"].context_window == 4096
    assert models["r"].context_window == 24_576
    assert keyed.providers["openai"].models[MODEL].context_window == 200_000


def test_a_run_on_a_model_of_unknown_price_reports_its_cost_as_unknown(tmp_path: Path) -> None:
    """The ledger never turns an unknown price into $0: the task's usage has no cost and the
    run's last line says the total is a lower bound; the local model's window is the server's."""
    root, home = review_project(tmp_path)
    info = LocalServerInfo("ollama", MODEL, 32_768, num_ctx=16_384)
    with StrictServer(openai_keyless=True, info=info) as server:
        server.push(Reply(chunks=openai_sse(Turn(text=[review_verdict()]))))
        env = {
            **{k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")},
            "HOME": str(home),
            "OPENAI_BASE_URL": f"{server.url}/v1",
            "OPENAI_MODEL": MODEL,
        }
        proc = run_batch_json(root, env)
        bodies = [r.body for r in server.requests if r.path.endswith("/chat/completions")]
    assert proc.returncode == 0, proc.stderr
    assert bodies[0]["max_tokens"] == 4096  # a quarter of the 16384 the server serves
    [done] = [e for e in json_events(proc.stdout) if e["type"] == "task.completed"]
    assert done["payload"]["worker_result"]["usage"]["cost_usd"] is None
    assert "cost unknown" in proc.stderr
