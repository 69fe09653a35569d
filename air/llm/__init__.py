"""Providers: ProviderManager, the Anthropic and OpenAI-compatible adapters, converters, and the
scripted / recording providers (SDD §12).

Re-exports nothing: each name is imported from its module (``air.llm.manager``,
``air.llm.cassette``, ...; IMPL-STRUCT-1). Importing ``air.llm.manager`` loads neither
``anthropic`` nor ``httpx``: the adapters that need them are imported by
``ProviderManager.adapter_for`` on first use, and a run against a real provider never imports the
cassette module.
"""
