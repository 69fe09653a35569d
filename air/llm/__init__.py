"""Providers: ProviderManager, the Anthropic and OpenAI-compatible adapters, converters, and the
scripted / recording providers (SDD §12).

Importing this package loads neither ``anthropic`` nor ``httpx``: the adapters that need them
are imported by ``ProviderManager.adapter_for`` on first use. The names below are re-exported
lazily (IMPL-BOOT-4): a run against a real provider never imports the cassette module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from air.contracts.exports import lazy_export

if TYPE_CHECKING:
    from air.llm.adapter import ProviderAdapter
    from air.llm.cassette import CassetteTurn, RecordingProvider, ScriptedProvider, load_cassette
    from air.llm.convert import AnthropicCanonicalConverter
    from air.llm.manager import CallRecord, ProviderManager, scripted_models_config
    from air.llm.normalize import AnthropicStreamNormalizer, OpenAIStreamNormalizer
    from air.llm.usage import UsageAccumulator, cost_of

__all__ = [
    "AnthropicCanonicalConverter",
    "AnthropicStreamNormalizer",
    "CallRecord",
    "CassetteTurn",
    "OpenAIStreamNormalizer",
    "ProviderAdapter",
    "ProviderManager",
    "RecordingProvider",
    "ScriptedProvider",
    "UsageAccumulator",
    "cost_of",
    "load_cassette",
    "scripted_models_config",
]

_HOMES = {
    "ProviderAdapter": "adapter",
    "CassetteTurn": "cassette",
    "RecordingProvider": "cassette",
    "ScriptedProvider": "cassette",
    "load_cassette": "cassette",
    "AnthropicCanonicalConverter": "convert",
    "CallRecord": "manager",
    "ProviderManager": "manager",
    "scripted_models_config": "manager",
    "AnthropicStreamNormalizer": "normalize",
    "OpenAIStreamNormalizer": "normalize",
    "UsageAccumulator": "usage",
    "cost_of": "usage",
}


def __getattr__(name: str) -> Any:
    """A re-exported name, imported from its module on first use and cached here."""
    return lazy_export(__name__, _HOMES, globals(), name)
