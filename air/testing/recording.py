"""A ProviderManager wrapper for tests that keeps every request it was asked.

Owns ``RecordingProvider``: it answers through the wrapped manager (a cassette, a scripted
provider, the real one) and keeps each ``ProviderCompletionInput``, so a test can read what the
model was sent.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

from air.contracts.provider import (
    ModelAssignment,
    ModelRequirement,
    ProviderCompletionInput,
    ProviderStreamEvent,
)
from air.llm.manager import ProviderManager

__all__ = ["RecordingProvider"]


class RecordingProvider:
    """The wrapped ProviderManager, keeping each request it was asked."""

    def __init__(self, inner: ProviderManager) -> None:
        self.inner = inner
        self.requests: list[ProviderCompletionInput] = []

    def select_model(self, requirement: ModelRequirement) -> ModelAssignment:
        return self.inner.select_model(requirement)

    def complete(
        self, request: ProviderCompletionInput
    ) -> AsyncGenerator[ProviderStreamEvent, None]:
        self.requests.append(request)
        return self.inner.complete(request)
