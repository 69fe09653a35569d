"""The usage ledger's sums (IMPL-USAGE-1): who made a call, a call of unknown price making the
sum unknown (never 0), the same event fed twice counted once."""

from __future__ import annotations

from air.contracts.event import EventSource, new_event
from air.events.usage_ledger import UsageLedger, purpose_of


def _call(purpose: str, cost: float | None, task_id: str | None = None) -> dict[str, object]:
    return {
        "purpose": purpose,
        "provider_id": "anthropic",
        "model_id": "m",
        "task_id": task_id,
        "input_tokens": 100,
        "output_tokens": 20,
        "cache_read_input_tokens": 7,
        "cache_creation_input_tokens": 3,
        "cost_usd": cost,
    }


def test_who_made_a_call() -> None:
    assert purpose_of("architecture_designer", None) == "designer"
    assert purpose_of("compactor", "task_cmp") == "compaction"  # its compaction task's id
    assert purpose_of("agt_1", "t1") == "task"
    assert purpose_of("main", None) == "main_agent"
    assert purpose_of(None, None) == "main_agent"


def test_sums_per_purpose_and_task_and_an_unknown_price_makes_the_sum_unknown() -> None:
    ledger = UsageLedger()
    event = new_event(
        "model.usage.recorded",
        _call("main_agent", 0.01),
        session_id="ses",
        source=EventSource(kind="main"),
    )
    assert ledger.feed(event)
    assert ledger.feed(event)  # a replayed log overlapping the live stream: counted once
    ledger.add(_call("task", 0.02, "t1"))
    assert ledger.total.calls == 2
    assert ledger.total.tokens == 240
    assert (ledger.total.cache_read_tokens, ledger.total.cache_write_tokens) == (14, 6)
    assert ledger.total.cost_usd is not None
    assert round(ledger.total.cost_usd, 6) == 0.03
    assert ledger.task("t1").calls == 1
    assert ledger.task("t2").calls == 0
    ledger.add(_call("compaction", None))
    assert ledger.total.cost_usd is None  # unknown, never taken as 0
    assert round(ledger.total.known_cost_usd, 6) == 0.03
    assert ledger.by_purpose["compaction"].cost_usd is None
    assert ledger.by_purpose["main_agent"].cost_usd == 0.01
