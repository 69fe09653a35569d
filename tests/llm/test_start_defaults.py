"""Start-up defaults (IMPL-START-2, IMPL-BOOT-10): an ``anthropic`` provider without
``transport`` uses the plain HTTP adapter; its client is h11 on Trio (httpx is never imported)
unless the environment names a proxy, and then httpx without its command-line client."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from air.contracts.provider import ModelConfig, ModelsConfig, ProviderConfig, ProviderKind
from air.llm.anthropic_http import AnthropicHttpAdapter
from air.llm.manager import ProviderManager


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


def _client_probe(env: dict[str, str]) -> list[object]:
    probe = (
        "import json, sys\n"
        "from air.contracts.provider import ModelsConfig\n"
        "from air.llm.manager import ProviderManager\n"
        "config = ModelsConfig.model_validate({'default': 'p/m', 'providers': {'p': {\n"
        "    'kind': 'openai_compatible', 'base_url': 'http://127.0.0.1:9/v1',\n"
        "    'models': {'m': {}}}}})\n"
        "client = ProviderManager(config, env={}).adapter_for('p')._http()\n"
        "print(json.dumps([type(client).__name__, 'httpx' in sys.modules,\n"
        "    sys.modules.get('httpx._main') is None]))\n"
    )
    proxies = ("http_proxy", "https_proxy", "all_proxy")
    base = {k: v for k, v in os.environ.items() if k.lower() not in proxies}
    out = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={**base, **env},
    )
    return list(json.loads(out.stdout))


def test_the_http_adapters_use_h11_and_never_import_httpx_without_a_proxy() -> None:
    assert _client_probe({}) == ["Http11Client", False, True]


def test_behind_a_proxy_the_http_adapters_use_httpx_without_its_cli() -> None:
    for name in ("HTTPS_PROXY", "http_proxy", "ALL_PROXY"):
        assert _client_probe({name: "http://127.0.0.1:3128"}) == ["AsyncClient", True, True]
