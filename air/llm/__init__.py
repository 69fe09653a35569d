"""Providers: ProviderManager, the Anthropic and OpenAI-compatible adapters, converters, and the
scripted / recording providers (SDD §12).

Importing this package loads neither ``anthropic`` nor ``httpx``: the adapters that need them
are imported by ``ProviderManager.adapter_for`` on first use.
"""

from __future__ import annotations

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
