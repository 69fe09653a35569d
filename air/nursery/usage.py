"""The usage ledger's writer: every call the runtime's provider completes becomes a durable
``model.usage.recorded`` event (IMPL-USAGE-1).

Owns ``counting_usage``: while it is open, the ProviderManager's usage listener records each
completed call of this session — the Main Agent's classification, plan and answer turns, the
Architecture Designer, compaction, and every worker turn the parent serves (reviewer and
experience miner included) — with who made it (``air.events.usage_ledger.purpose_of``), its
tokens, cache reads and writes, and its cost from the model catalogue (``None``: unknown).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from air.events.usage_ledger import USAGE_EVENT, purpose_of
from air.llm.usage import UsageRecord
from air.nursery.ledger import SessionLedger

__all__ = ["counting_usage", "usage_payload"]


def usage_payload(call: UsageRecord) -> dict[str, Any]:
    """The ``model.usage.recorded`` payload of one call."""
    usage = call.usage
    return {
        "purpose": purpose_of(call.agent_id, call.task_id),
        "provider_id": call.provider_id,
        "model_id": call.model_id,
        "agent_id": call.agent_id,
        "task_id": call.task_id,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
        "cost_usd": usage.cost_usd,
    }


@contextmanager
def counting_usage(provider: Any, ledger: SessionLedger) -> Iterator[None]:
    """Record the usage of ``provider``'s calls for ``ledger``'s session while open (a calls'
    session other than this one is not ours to count). A provider without usage listeners (an
    injected fake runner's ``None``) records nothing."""
    add = getattr(provider, "add_usage_listener", None)
    if add is None:
        yield
        return

    async def record(call: UsageRecord) -> None:
        if call.session_id in (None, ledger.session_id):
            await ledger.record(USAGE_EVENT, usage_payload(call))

    add(record)
    try:
        yield
    finally:
        provider.remove_usage_listener(record)
