"""OpenAI's reasoning models (gpt-5*, o1/o3/o4*) over chat completions: the strict server
refuses ``max_tokens`` for them as the real API does, ``reasoning_effort`` only where taken;
air sends ``max_completion_tokens`` and the configured effort, and the calc batch completes on
a gpt-5-style and an o-series-style model chosen with ``--model`` (issue 26 item 2)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from air.contracts.provider import ModelConfig, ModelsConfig, ProviderConfig, ProviderKind
from air.llm.catalogue import complete_model
from air.llm.manager import ProviderManager
from air.testing.openai_rules import openai_problem
from tests.llm.conftest import FAKE_KEY
from tests.llm.helpers import collect, request
from tests.llm.servers import CassetteModel, LocalServer, Reply, StrictServer, Turn, openai_sse
from tests.trusted import trust_project

HEADERS = {"authorization": f"Bearer {FAKE_KEY}"}
EXAMPLE = Path(__file__).parents[2] / "examples" / "calc"


def _body(model: str, **extra: Any) -> dict[str, Any]:
    return {
        "model": model,
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
        **extra,
    }


@pytest.mark.parametrize("model", ["gpt-5", "gpt-5-mini", "gpt-5.1", "o1", "o3", "o4-mini"])
def test_reasoning_models_refuse_max_tokens(model: str) -> None:
    refused = openai_problem(HEADERS, _body(model, max_tokens=100))
    assert refused is not None
    assert refused.code == "unsupported_parameter"
    assert refused.param == "max_tokens"
    assert "Use 'max_completion_tokens' instead." in refused.message
    assert openai_problem(HEADERS, _body(model, max_completion_tokens=100)) is None
    hot = openai_problem(HEADERS, _body(model, max_completion_tokens=100, temperature=0.2))
    assert hot is not None
    assert hot.code == "unsupported_value"


def test_reasoning_effort_only_where_the_model_takes_it() -> None:
    for model in ("gpt-4.1", "gpt-4o", "gpt-5-chat-latest"):
        refused = openai_problem(HEADERS, _body(model, reasoning_effort="low"))
        assert refused is not None, model
        assert refused.param == "reasoning_effort", model
    assert openai_problem(HEADERS, _body("gpt-5", reasoning_effort="minimal")) is None
    assert openai_problem(HEADERS, _body("gpt-5.1", reasoning_effort="none")) is None
    wrong = openai_problem(HEADERS, _body("o3", reasoning_effort="minimal"))
    assert wrong is not None
    assert "'low', 'medium', and 'high'" in wrong.message
    assert openai_problem(HEADERS, _body("gpt-4.1", max_tokens=100)) is None


def _manager(url: str, model_id: str, **fields: Any) -> ProviderManager:
    model = complete_model(model_id, ModelConfig.model_validate(fields))
    provider = ProviderConfig(
        kind=ProviderKind.OPENAI_COMPATIBLE,
        base_url=f"{url}/v1",
        auth_ref="AIR_TEST_KEY",
        models={model_id: model},
    )
    config = ModelsConfig(default=f"p/{model_id}", providers={"p": provider})
    return ProviderManager(config, env={"AIR_TEST_KEY": FAKE_KEY})


@pytest.mark.parametrize(("model", "effort"), [("gpt-5", "minimal"), ("o4-mini", "high")])
async def test_a_reasoning_model_is_sent_max_completion_tokens_and_its_effort(
    model: str, effort: str
) -> None:
    with LocalServer(api_key=FAKE_KEY, ceilings={model: 128_000}) as server:
        server.push(Reply(chunks=openai_sse(Turn(text=["ok"]))))
        manager = _manager(server.url, model, reasoning_effort=effort, params={"seed": 7})
        try:
            got = await collect(manager, request(model_id=model))
        finally:
            await manager.aclose()
        assert server.rejected == []
        assert got.types[-1] == "message_stop"
        body = server.requests[0].body
        assert "max_tokens" not in body
        assert body["max_completion_tokens"] == 256
        assert body["reasoning_effort"] == effort
        assert body["seed"] == 7


async def test_the_strict_server_refuses_max_tokens_sent_to_a_reasoning_model() -> None:
    """What air sent before the catalogue (a model entry saying ``max_tokens``) fails as at
    the real API, with its message and no retry."""
    with LocalServer(api_key=FAKE_KEY) as server:
        manager = _manager(server.url, "o3", max_tokens_param="max_tokens")
        try:
            got = await collect(manager, request(model_id="o3"))
        finally:
            await manager.aclose()
        assert got.types == ["error"]
        assert "Use 'max_completion_tokens' instead." in json.dumps(got.events[0].model_dump())
        assert len(server.requests) == 1


MODELS = (
    "default: openai/gpt-4.1\n"
    "providers:\n"
    "  openai:\n"
    "    kind: openai_compatible\n"
    "    base_url: {url}/v1\n"
    "    auth_ref: AIR_E2E_KEY\n"
    "    models:\n"
    "      gpt-4.1: {{}}\n"
    "      o4-mini: {{reasoning_effort: low}}\n"
)


@pytest.mark.slow
@pytest.mark.parametrize("model", ["gpt-5", "o4-mini"])
def test_calc_batch_on_a_reasoning_model_chosen_with_model_flag(model: str, tmp_path: Path) -> None:
    root, home = tmp_path / "calc", tmp_path / "home"
    home.mkdir()
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", ".air"))
    scripts = tmp_path / "scripts"
    shutil.move(root / "cassettes", scripts)
    ceilings = {"gpt-4.1": 32_768, "gpt-5": 128_000, "o4-mini": 100_000}
    with StrictServer(api_key=FAKE_KEY, ceilings=ceilings, model=CassetteModel(scripts)) as server:
        (root / ".air" / "shared").mkdir(parents=True)
        (root / ".air" / "shared" / "models.yaml").write_text(MODELS.format(url=server.url))
        trust_project(root, home)
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "air.cli",
                "run",
                "--headless",
                str(root / "batch.yaml"),
                "--project",
                str(root),
                "--model",
                model,
            ],
            env={**os.environ, "HOME": str(home), "AIR_E2E_KEY": FAKE_KEY},
            capture_output=True,
            text=True,
            timeout=300,
        )
        rejected, requests = list(server.rejected), list(server.requests)
    assert rejected == [], [r.problem for r in rejected]
    assert proc.returncode == 0, proc.stderr
    assert "completed: done 3/3" in proc.stderr
    assert {r.body["model"] for r in requests} == {model}
    assert all("max_tokens" not in r.body for r in requests)
    assert all(r.body["max_completion_tokens"] > 0 for r in requests)
    efforts = {r.body.get("reasoning_effort") for r in requests}
    assert efforts == ({"low"} if model == "o4-mini" else {None})
