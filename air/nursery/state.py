"""The Scheduler's state record and ports (STYLE 16: a state record and ports, never the
Scheduler object).

Owns ``RunState`` (what a run knows and changes: the TaskGraph, the running tasks' cancel
scopes and cancel reasons, the shared ``main`` workspace, the solo tasks, the merge lock, the
wave counters, the run's cancel reason, the dispatch loop's wake-up and the tasks'
deadlines), ``Ports`` (what a
task's life calls out to: the ledger, the TaskRunner, the workspaces, the planners, the
monitor, the architecture gate, the ids, the options, the state display) and
``SchedulerOptions``. Every helper of the Scheduler (dispatch, attempt, the outcome pipeline,
reviews, repair, the durable facts) takes these two and nothing else of the Scheduler; only
``air.nursery.scheduler`` builds them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import trio

from air.contracts.ids import IdGenerator, UlidGenerator
from air.contracts.task import SchedulerState, WorkspaceRef
from air.nursery.graph import TaskGraph
from air.nursery.planner import WavePlanner, default_max_workers
from air.nursery.retry import RetryPlanner

if TYPE_CHECKING:
    from air.nursery.architecture_gate import ArchitectureGate
    from air.nursery.ledger import Ledger
    from air.supervision.monitor import AgentMonitor
    from air.supervision.seams import TaskRunner
    from air.workspace.manager import WorkspaceManager

__all__ = ["Ports", "RunState", "SchedulerOptions"]


@dataclass(eq=False)
class SchedulerOptions:
    """How the Scheduler runs a session: parallelism, reviews, headless, recovery."""

    max_workers: int = field(default_factory=default_max_workers)
    review: Literal["none", "wave"] = "none"
    """``wave``: every completed code change gets a review task (REVIEWING_WAVE)."""
    headless: bool = True
    monitor_period: float = 1.0
    recover: bool = True  # False: the caller (open_runtime) already ran recovery, once


@dataclass(eq=False)
class RunState:
    """What one Scheduler's run knows and changes (in memory; the ledger keeps the facts)."""

    graph: TaskGraph
    phase: SchedulerState = SchedulerState.IDLE
    scopes: dict[str, trio.CancelScope] = field(default_factory=dict)
    """The cancel scope of every running task (``cancel_task``)."""
    cancel_reasons: dict[str, str] = field(default_factory=dict)
    """Why a running task was cancelled (its ``task.cancelled`` reason)."""
    main_workspace: WorkspaceRef | None = None
    solo: set[str] = field(default_factory=set)
    """Tasks that must run alone (a serial retry, a retry after a merge conflict)."""
    solo_running: str | None = None
    """The solo task running now (nothing else is dispatched meanwhile)."""
    merge_lock: trio.Lock = field(default_factory=trio.Lock)
    """One merge into the project at a time."""
    waves: int = 0
    open_waves: int = 0
    cancel_reason: str | None = None
    """Why the run was cancelled (None: it was not)."""
    wake_event: trio.Event = field(default_factory=trio.Event)
    deadlines: dict[str, float] = field(default_factory=dict)
    """Each task's whole-task deadline on the Trio clock (``air.nursery.deadlines``)."""
    deadline_heap: list[tuple[float, str]] = field(default_factory=list)
    """The armed deadlines, earliest first (the dispatch loop wakes at the first)."""

    def wake(self) -> None:
        """Something a plan depends on changed: the dispatch loop plans again."""
        self.wake_event.set()

    def slot_freed(self, task_id: str) -> None:
        """A task's attempt ended (its slot is free): wake the dispatch loop."""
        if self.solo_running == task_id:
            self.solo_running = None
        self.wake()


@dataclass(eq=False)
class Ports:
    """What a task's life calls out to; fixed for the Scheduler's life (but the gate, which
    the composition root sets once the tools exist)."""

    ledger: Ledger
    runner: TaskRunner
    project_root: str
    workspaces: WorkspaceManager | None = None
    planner: WavePlanner = field(default_factory=WavePlanner)
    retry: RetryPlanner = field(default_factory=RetryPlanner)
    monitor: AgentMonitor | None = None
    ids: IdGenerator = field(default_factory=UlidGenerator)
    options: SchedulerOptions = field(default_factory=SchedulerOptions)
    architecture_gate: ArchitectureGate | None = None
    """Holds a completed result before merge/dependents (SDD §19.4); set by the root."""
    on_state: Callable[[SchedulerState], None] | None = None

    def enter(self, st: RunState, phase: SchedulerState) -> None:
        """The run enters ``phase`` (told to ``on_state``: progress display, tests)."""
        st.phase = phase
        if self.on_state is not None:
            self.on_state(phase)

    def slots(self) -> int:
        return max(1, self.options.max_workers)
