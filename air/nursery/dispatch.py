"""DISPATCHING (SDD §20.2, IMPL-CORE-3): the next wave, planned when a slot frees.

Owns ``plan_next`` (the runnable, non-conflicting tasks that fit the free slots; a solo task
waits for the running ones and then runs alone) and ``run_wave`` (one wave = one nursery with
one task per entry, started with ``nursery.start`` so that every task of the wave holds its
slot before the Scheduler plans again; its reviews after its tasks end).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import trio

from air.contracts.ids import utc_now_iso
from air.contracts.task import SchedulerState, TaskDependencySpec, WavePlanEntry
from air.nursery.attempt import run_task
from air.nursery.facts import add_dependency
from air.nursery.planner import ResourceSnapshot

if TYPE_CHECKING:
    from air.nursery.state import Ports, RunState

__all__ = ["plan_next", "run_wave"]


async def plan_next(st: RunState, io: Ports) -> list[WavePlanEntry]:
    """The next wave: runnable, non-conflicting tasks for the free slots (none while a
    solo task runs or waits for the running ones to end)."""
    if st.solo_running is not None:
        return []
    graph = st.graph
    running = graph.running_count()
    solo = sorted((t for t in st.solo if graph.is_ready(t)), key=lambda t: graph.tasks[t].order)
    if solo:
        if running:
            return []
        node = graph.tasks[solo[0]]
        st.solo.discard(node.task_id)
        st.solo_running = node.task_id
        return [
            WavePlanEntry(
                task_id=node.task_id,
                workspace=io.planner.assign_workspace(node, concurrent_writers=1),
                model_id=io.planner.assign_model(node),
            )
        ]
    if running >= io.slots():
        return []
    decision = io.planner.plan(
        graph,
        ResourceSnapshot(max_workers=io.slots(), running=running),
        wave_index=st.waves,
        planned_at=utc_now_iso(),
    )
    for edge in decision.inferred_edges:
        if not io.ledger.knows("task.dependency.added"):
            # the planner re-infers the same edge from the write areas on every start
            graph.add_edge(edge)
            continue
        await add_dependency(
            io.ledger,
            graph,
            edge.task_id,
            TaskDependencySpec(
                depends_on_task_id=edge.depends_on_task_id,
                dependency_type=edge.dependency_type,
                reason=edge.reason,
                source=edge.source,
            ),
        )
    return list(decision.plan.entries)


async def run_wave(
    st: RunState,
    io: Ports,
    entries: Sequence[WavePlanEntry],
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """One wave: one nursery holding one task per entry; reviews after its tasks end."""
    st.open_waves += 1
    st.waves += 1
    completed: list[str] = []
    try:
        async with trio.open_nursery() as wave:
            io.enter(st, SchedulerState.MONITORING)
            for entry in entries:
                await wave.start(run_task, st, io, entry, completed)
            task_status.started()
        io.enter(st, SchedulerState.COLLECTING_RESULTS)
        if io.options.review == "wave" and completed:
            io.enter(st, SchedulerState.REVIEWING_WAVE)
            from air.nursery.reviews import schedule_reviews  # after a wave (IMPL-BOOT-8)

            await schedule_reviews(st, io, completed)
    finally:
        st.open_waves -= 1
        st.wake()
