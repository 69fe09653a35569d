"""The Scheduler's seam to the architecture review gate (SDD §19.4, IMPL-ARCH-3).

Owns ``ArchitectureGate`` (what the Scheduler asks before a completed worker result is merged
or its dependents run) and ``GateDecision`` (the answer's shape), plus ``hold``: the one call
``outcomes.collect`` makes. The gate itself is the ArchitectureDesigner's ``SchedulerGate``
(``air.agents.architecture``), set by the composition root as ``Scheduler.architecture_gate``;
the nursery never imports the agents.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from air.contracts.task import TaskSpec, TaskStatus
from air.contracts.worker_result import WorkerResult
from air.nursery.graph import TaskNode

if TYPE_CHECKING:
    from air.nursery.scheduler import Scheduler

__all__ = ["ArchitectureGate", "GateDecision", "hold"]


class GateDecision(Protocol):
    @property
    def proceed(self) -> bool: ...

    @property
    def result_class(self) -> str: ...

    @property
    def reason(self) -> str: ...


class ArchitectureGate(Protocol):
    async def review(self, spec: TaskSpec, result: WorkerResult) -> GateDecision:
        """Classify a completed result; returns only when the class is known."""
        ...


async def hold(
    s: Scheduler, node: TaskNode, agent_id: str, result: WorkerResult, attempt_index: int
) -> bool:
    """Ask the gate about a completed result. False: the task was ended ``task.blocked``
    (not merged; its dependents never run) with the gate's class and reason."""
    gate = s.architecture_gate
    if gate is None:
        return True
    decision = await gate.review(node.spec, result)
    if decision.proceed:
        return True
    await s.record_end(
        node,
        "task.blocked",
        {
            "agent_id": agent_id,
            "reason": f"architecture gate ({decision.result_class}): {decision.reason}",
            "worker_result": result.model_dump(mode="json"),
        },
        attempt_index=attempt_index,
    )
    node.status = TaskStatus.BLOCKED
    node.final = True
    return False
