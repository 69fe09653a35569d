"""Whole-task deadlines (runner-contract invariants 15 and 31; IMPL-DEADLINE-1).

Owns: ``arm`` (a task's one absolute deadline on the Trio clock, made once from its
``hard_timeout_ms`` before it is first planned: queueing for a wave or a slot, start-up,
running and every retry count against it; ``move`` puts it later by the time the person was
waited for), ``arm_all`` (every task of a loaded graph),
``disarm`` (a task that ended for good keeps no deadline: what the run holds is bounded by the
tasks that may still run, not by the session; IMPL-RSS-1),
``next_at`` (when the dispatch loop must look again), ``expire_queued`` (a task still waiting
for a wave when its deadline passes ends ``task.failed`` with phase ``queued``), ``expired``
and ``depth``. Reads and changes only the run's state record and records through its ports.
"""

from __future__ import annotations

import heapq
import logging
import math
from collections.abc import Collection
from typing import TYPE_CHECKING

import trio

from air.contracts.task import TaskStatus
from air.nursery.facts import end_task
from air.supervision.deadline import deadline_error

if TYPE_CHECKING:
    from air.nursery.graph import TaskGraph, TaskNode
    from air.nursery.state import Ports, RunState

__all__ = [
    "arm",
    "arm_all",
    "depth",
    "disarm",
    "expire",
    "expire_queued",
    "move",
    "next_at",
    "timeout_s",
]

log = logging.getLogger(__name__)


def timeout_s(node: TaskNode) -> float:
    """The task's whole timeout in seconds."""
    return node.spec.constraints.hard_timeout_ms / 1000


def arm(st: RunState, node: TaskNode) -> float:
    """The task's deadline, made now if it has none yet (moved only by ``move``)."""
    at = st.deadlines.get(node.task_id)
    if at is None:
        at = st.deadlines[node.task_id] = trio.current_time() + timeout_s(node)
        heapq.heappush(st.deadline_heap, (at, node.task_id))
    return at


def move(st: RunState, task_id: str, waited_s: float) -> None:
    """The person was waited for ``waited_s`` on one of the task's calls: its deadline moves
    by as much (the heap's earlier entry is skipped as a stale one)."""
    at = st.deadlines.get(task_id)
    if at is not None and waited_s > 0:
        at = st.deadlines[task_id] = at + waited_s
        heapq.heappush(st.deadline_heap, (at, task_id))


def arm_all(st: RunState, resumed: Collection[str] = ()) -> None:
    """Give every task of the graph that may still run its deadline (before any planning);
    the ``resumed`` ones (interrupted by an earlier run of this process) get a new one, as
    they would in a new process."""
    for task_id in resumed:
        st.deadlines.pop(task_id, None)
    for node in st.graph.tasks.values():
        if not node.final and node.status in (TaskStatus.PENDING, TaskStatus.RUNNING):
            arm(st, node)
        elif node.final:
            disarm(st, node.task_id)


def disarm(st: RunState, task_id: str) -> None:
    """Forget the deadline of a task that ended for good (nothing of it runs again; were it
    ever planned anew, it would get a new deadline, as in a new process). The heap's entries
    are skipped once their task has no deadline, and dropped together once they outnumber the
    armed ones: amortised O(1) per task; the map is copied then too, as a dict keeps the table
    of its largest size (a batch armed at once) after its entries go (IMPL-RSS-1)."""
    st.deadlines.pop(task_id, None)
    heap = st.deadline_heap
    if len(heap) > 2 * len(st.deadlines) + 64:
        st.deadlines = dict(st.deadlines)
        heap[:] = [(at, armed) for armed, at in st.deadlines.items()]
        heapq.heapify(heap)


def next_at(st: RunState) -> float:
    """The earliest deadline still armed (``inf``: none)."""
    return st.deadline_heap[0][0] if st.deadline_heap else math.inf


async def expire_queued(st: RunState, io: Ports) -> None:
    """End every task whose deadline passed while it waited for a wave (phase ``queued``);
    a running task's own attempt ends by its deadline and is left to it."""
    now = trio.current_time()
    heap = st.deadline_heap
    while heap and heap[0][0] <= now:
        at, task_id = heapq.heappop(heap)
        if st.deadlines.get(task_id) != at:
            continue  # a deadline made again since (a resumed task)
        node = st.graph.tasks.get(task_id)
        if node is not None and node.status == TaskStatus.PENDING and not node.final:
            await expire(st, io, node)


async def expire(st: RunState, io: Ports, node: TaskNode) -> None:
    """A task that may not start any more: its deadline passed before this attempt began."""
    st.solo.discard(node.task_id)
    disarm(st, node.task_id)  # it ends for good either way
    stored = io.ledger.state().tasks.get(node.task_id)
    if stored is not None and stored.status != TaskStatus.PENDING:
        # waiting for a retry (failed) or resumed after an interruption (interrupted): its last
        # end stays recorded and is its end (the log has no failed → failed step, and
        # interrupted → failed is no transition); nothing more runs
        log.info("task %s: deadline passed before it could run again", node.task_id)
        node.status = stored.status
        node.final = True
        st.wake()
        return
    error = deadline_error("queued", timeout_s(node))
    payload = {"error": error.model_dump(mode="json")}
    await end_task(io.ledger, node, "task.failed", payload, TaskStatus.FAILED)
    st.wake()


def expired(st: RunState, node: TaskNode) -> bool:
    """Whether the task's deadline has passed."""
    return trio.current_time() >= arm(st, node)


def depth(graph: TaskGraph, node: TaskNode) -> int:
    """How many parents the task has (its machine-wide slot tier)."""
    seen = {node.task_id}
    count = 0
    parent = node.parent_task_id
    while parent is not None and parent not in seen and parent in graph.tasks:
        seen.add(parent)
        count += 1
        parent = graph.tasks[parent].parent_task_id
    return count
