"""Per-task cassettes for headless batches: a provider router that replays
``<dir>/<task_id>.jsonl`` for each agent.

Owns: ``TaskCassettes``. Concurrent workers share one provider, so a single cassette would be
answered in whatever order the workers happen to ask; here every agent (one attempt of one
task) gets its own ScriptedProvider over its task's cassette, replayed from the first turn,
so a batch with parallel tasks replays deterministically. Each replayed call is handed to the
usage listeners like a real one (IMPL-USAGE-1; a cassette has no price: its cost is unknown).
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator

from air.contracts.error import AirException
from air.contracts.provider import MessageStopEvent, ProviderCompletionInput, ProviderStreamEvent
from air.llm.cassette import ScriptedProvider
from air.llm.usage import UsageListener, UsageListeners

__all__ = ["TaskCassettes"]


class TaskCassettes:
    """A ProviderRouter over a directory of ``<task_id>.jsonl`` cassettes.

    Args:
        directory: holds one cassette per task id.

    Raises:
        AirException: ``not_found`` when the directory does not exist.
    """

    def __init__(self, directory: str) -> None:
        if not os.path.isdir(directory):
            raise AirException.of(
                kind="not_found",
                message=f"{directory}: no such cassette directory",
                user_action="Pass --cassette DIR holding one <task_id>.jsonl per task.",
            )
        self.directory = directory
        self._providers: dict[str, ScriptedProvider] = {}
        self._usage_listeners = UsageListeners()

    def add_usage_listener(self, listener: UsageListener) -> None:
        self._usage_listeners.add(listener)

    def remove_usage_listener(self, listener: UsageListener) -> None:
        self._usage_listeners.remove(listener)

    def _provider(self, request: ProviderCompletionInput) -> ScriptedProvider:
        key = request.agent_id or request.task_id or ""
        provider = self._providers.get(key)
        if provider is None:
            path = os.path.join(self.directory, f"{request.task_id}.jsonl")
            if not os.path.isfile(path):
                raise AirException.of(
                    kind="config_error",
                    message=f"no cassette for task {request.task_id} in {self.directory}",
                    user_action=f"Record one to {path}.",
                )
            provider = ScriptedProvider.from_cassette(path)
            self._providers[key] = provider
        return provider

    async def complete(
        self, request: ProviderCompletionInput
    ) -> AsyncGenerator[ProviderStreamEvent, None]:
        """Stream the next turn of this agent's cassette."""
        provider = self._provider(request)
        async for event in provider.complete(request):
            if isinstance(event, MessageStopEvent):
                await self._usage_listeners.count(request, event.usage)
            yield event
