"""The usage ledger: every model call's ``model.usage.recorded`` event, summed (IMPL-USAGE-1).

Owns ``UsageSum`` (calls, tokens in/out, cache read/write and the cost, ``None`` once any part
has an unknown price: never 0), ``UsageLedger`` (the pure sum of the events per session, task,
purpose — Main Agent, designer, compaction, tasks — and agent) and ``purpose_of`` (who made a
call, from its agent and task). Every reader of usage folds these events with it: the console's
projection (HUD, ``/cost``), the headless progress and summary, ``air report`` and the JUnit
and ``--json`` summary; nothing else is counted, so they cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "COMPACTOR_AGENT",
    "DESIGNER_AGENT",
    "PURPOSES",
    "USAGE_EVENT",
    "UsageLedger",
    "UsageSum",
    "purpose_of",
]

USAGE_EVENT = "model.usage.recorded"
DESIGNER_AGENT = "architecture_designer"
"""The agent id of the Architecture Designer's calls (``air.agents.architecture.AGENT_ID``)."""
COMPACTOR_AGENT = "compactor"
"""The agent id of the session compactor's calls (``air.context.compactor.AGENT_ID``)."""
PURPOSES = ("main_agent", "designer", "compaction", "task")
"""Who made a call, in the order ``/cost`` and the report list them."""


def purpose_of(agent_id: str | None, task_id: str | None) -> str:
    """``designer`` / ``compaction`` for those runtime roles (the compactor's calls carry the
    compaction's task id), ``task`` for a task's worker, else ``main_agent`` (the console's
    classification, plan and answer turns)."""
    if agent_id == DESIGNER_AGENT:
        return "designer"
    if agent_id == COMPACTOR_AGENT:
        return "compaction"
    return "task" if task_id else "main_agent"


@dataclass(eq=False)
class UsageSum:
    """The sum of some model calls."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = 0.0
    """USD; ``None`` when a call's model has no known price (the sum is unknown, never 0)."""
    known_cost_usd: float = 0.0
    """What the calls of known price cost: a lower bound when ``cost_usd`` is ``None``."""

    @property
    def tokens(self) -> int:
        """Tokens in and out (cache reads and writes are counted apart)."""
        return self.input_tokens + self.output_tokens

    def add(self, payload: Mapping[str, Any]) -> None:
        self.calls += 1
        self.input_tokens += int(payload.get("input_tokens") or 0)
        self.output_tokens += int(payload.get("output_tokens") or 0)
        self.cache_read_tokens += int(payload.get("cache_read_input_tokens") or 0)
        self.cache_write_tokens += int(payload.get("cache_creation_input_tokens") or 0)
        cost = payload.get("cost_usd")
        self.known_cost_usd += cost or 0.0
        self.cost_usd = None if cost is None or self.cost_usd is None else self.cost_usd + cost


@dataclass(eq=False)
class UsageLedger:
    """The ledger's sums: in total, per task, per purpose and per agent."""

    total: UsageSum = field(default_factory=UsageSum)
    by_task: dict[str, UsageSum] = field(default_factory=dict)
    by_purpose: dict[str, UsageSum] = field(default_factory=dict)
    by_agent: dict[str, UsageSum] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)
    """Ids of the events fed: a replayed log and the live stream may overlap."""

    def feed(self, event: Any) -> bool:
        """Add ``event`` when it is a ``model.usage.recorded`` not fed before; True when it is
        one (fed now or before)."""
        if event.type != USAGE_EVENT:
            return False
        if event.id not in self.seen:
            self.seen.add(event.id)
            self.add(event.payload)
        return True

    def add(self, payload: Mapping[str, Any]) -> None:
        """Add one call (a ``model.usage.recorded`` payload)."""
        self.total.add(payload)
        task_id, agent_id = payload.get("task_id"), payload.get("agent_id")
        purpose = str(payload.get("purpose") or purpose_of(agent_id, task_id))
        self.by_purpose.setdefault(purpose, UsageSum()).add(payload)
        if task_id:
            self.by_task.setdefault(str(task_id), UsageSum()).add(payload)
        if agent_id:
            self.by_agent.setdefault(str(agent_id), UsageSum()).add(payload)

    def task(self, task_id: str) -> UsageSum:
        """What ``task_id``'s workers spent (every attempt); zero when nothing yet."""
        return self.by_task.get(task_id) or UsageSum()
