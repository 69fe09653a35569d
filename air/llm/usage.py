"""Usage and cost: the price of one call, and the accumulator summing per session/task/agent.

Owns ``cost_of`` (tokens x the model's price in models.yaml or the catalogue, USD per million
tokens; cache writes and cache reads at their own prices), ``UsageAccumulator`` whose totals
feed budgets (SDD §12; issue #3 item 7), and ``UsageRecord`` / ``UsageListener``: what the
ProviderManager hands to its usage listeners after every call, which the runtime records as
the durable usage ledger (IMPL-USAGE-1). A model whose price is unknown costs ``None``, and a
sum with an unknown part is unknown: never 0.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import NamedTuple

import trio

from air.contracts.provider import LongPromptPrice, ModelPrice, ProviderCompletionInput, Usage

__all__ = [
    "UsageAccumulator",
    "UsageListener",
    "UsageListeners",
    "UsageRecord",
    "add_usage",
    "cost_of",
]


class UsageRecord(NamedTuple):
    """One model call that completed: who paid (session, task, agent), the model and its usage
    (``usage.cost_usd`` from the model's price; ``None`` when the price is unknown). A
    NamedTuple: a read-only record on the way to the first request (IMPL-BOOT-14)."""

    provider_id: str
    model_id: str
    usage: Usage
    session_id: str | None = None
    task_id: str | None = None
    agent_id: str | None = None


UsageListener = Callable[[UsageRecord], Awaitable[None]]
"""Awaited by the ProviderManager after each completed call, before its final event is passed
on: by the time a caller sees ``message_stop``, the call is in the ledger."""


class UsageListeners:
    """The usage listeners of a provider (the ProviderManager, per-task cassettes)."""

    def __init__(self) -> None:
        self._listeners: list[UsageListener] = []

    def add(self, listener: UsageListener) -> None:
        self._listeners.append(listener)

    def remove(self, listener: UsageListener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    async def count(self, request: ProviderCompletionInput, usage: Usage) -> None:
        """Hand one completed call's usage to every listener. Shielded and bounded (why: the
        call is paid for; a turn cancelled now must still leave it in the ledger)."""
        if not self._listeners:
            return
        counted = UsageRecord(
            provider_id=request.provider_id,
            model_id=request.model_id,
            usage=usage,
            session_id=request.session_id,
            task_id=request.task_id,
            agent_id=request.agent_id,
        )
        with trio.move_on_after(5, shield=True):
            for listener in list(self._listeners):
                await listener(counted)


def cost_of(usage: Usage, price: ModelPrice | None) -> float | None:
    """USD for one call; ``None`` when the price is unknown. A prompt past the price's
    ``long_prompt`` threshold pays its rates on every token of the call."""
    if price is None:
        return None
    long = price.long_prompt
    prompt = usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens
    rates: ModelPrice | LongPromptPrice = (
        long if long is not None and prompt > long.threshold_tokens else price
    )
    return (
        usage.input_tokens * rates.input
        + usage.output_tokens * rates.output
        + usage.cache_creation_input_tokens * rates.cache_write
        + usage.cache_read_input_tokens * rates.cache_read
    ) / 1_000_000


def add_usage(a: Usage, b: Usage) -> Usage:
    return Usage(
        input_tokens=a.input_tokens + b.input_tokens,
        output_tokens=a.output_tokens + b.output_tokens,
        cache_creation_input_tokens=a.cache_creation_input_tokens + b.cache_creation_input_tokens,
        cache_read_input_tokens=a.cache_read_input_tokens + b.cache_read_input_tokens,
        cost_usd=None if a.cost_usd is None or b.cost_usd is None else a.cost_usd + b.cost_usd,
    )


class UsageAccumulator:
    """Sums usage per session, task and agent, plus a grand total."""

    def __init__(self) -> None:
        self.total = Usage(cost_usd=0.0)
        self.calls = 0
        self._by: dict[tuple[str, str], Usage] = {}

    def add(
        self,
        usage: Usage,
        *,
        session_id: str | None = None,
        task_id: str | None = None,
        agent_id: str | None = None,
    ) -> None:
        self.calls += 1
        self.total = add_usage(self.total, usage)
        for scope, key in (("session", session_id), ("task", task_id), ("agent", agent_id)):
            if key is not None:
                before = self._by.get((scope, key), Usage(cost_usd=0.0))
                self._by[(scope, key)] = add_usage(before, usage)

    def for_session(self, session_id: str) -> Usage:
        return self._by.get(("session", session_id), Usage(cost_usd=0.0))

    def for_task(self, task_id: str) -> Usage:
        return self._by.get(("task", task_id), Usage(cost_usd=0.0))

    def for_agent(self, agent_id: str) -> Usage:
        return self._by.get(("agent", agent_id), Usage(cost_usd=0.0))
