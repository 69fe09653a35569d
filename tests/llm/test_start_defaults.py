"""Start-up defaults (IMPL-START-2): an ``anthropic`` provider without ``transport`` uses plain
httpx, and creating an httpx adapter does not import httpx's command-line client."""

from __future__ import annotations

import json
import subprocess
import sys

from air.contracts import ModelConfig, ModelsConfig, ProviderConfig, ProviderKind
from air.llm import ProviderManager
from air.llm.anthropic_http import AnthropicHttpAdapter


def test_anthropic_defaults_to_the_http_transport() -> None:
    provider = ProviderConfig.model_validate(
        {"kind": "anthropic", "base_url": "http://127.0.0.1:9", "models": {"m": {}}}
    )
    assert provider.transport == "http"
    config = ModelsConfig(default="p/m", providers={"p": provider})
    adapter = ProviderManager(config, env={}).adapter_for("p")
    assert isinstance(adapter, AnthropicHttpAdapter)
    sdk = ProviderConfig(kind=ProviderKind.ANTHROPIC, transport="sdk", models={"m": ModelConfig()})
    assert sdk.transport == "sdk"


def test_an_httpx_adapter_does_not_load_the_httpx_cli() -> None:
    probe = (
        "import json, sys\n"
        "from air.contracts import ModelsConfig\n"
        "from air.llm import ProviderManager\n"
        "config = ModelsConfig.model_validate({'default': 'p/m', 'providers': {'p': {\n"
        "    'kind': 'openai_compatible', 'base_url': 'http://127.0.0.1:9/v1',\n"
        "    'models': {'m': {}}}}})\n"
        "ProviderManager(config, env={}).adapter_for('p')\n"
        "print(json.dumps(['httpx' in sys.modules, sys.modules.get('httpx._main') is None]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(out.stdout) == [True, True]
