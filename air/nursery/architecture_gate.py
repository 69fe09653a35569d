"""The Scheduler's seam to the architecture review gate (SDD §19.4, IMPL-ARCH-3).

Owns ``ArchitectureGate`` (what the Scheduler asks before a completed worker result is merged
or its dependents run) and ``GateDecision`` (the answer's shape); the outcome pipeline
(``outcomes``) asks it at its gate step. The gate itself is the ArchitectureDesigner's
``SchedulerGate`` (``air.agents.architecture``), given to the Scheduler by the composition
root; the nursery never imports the agents.
"""

from __future__ import annotations

from typing import Protocol

from air.contracts.task import TaskSpec
from air.contracts.worker_result import WorkerResult

__all__ = ["ArchitectureGate", "GateDecision"]


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
