"""Providers: ProviderManager, the Anthropic and OpenAI-compatible adapters, converters, and the
scripted / recording providers (SDD §12).
"""
