"""What a retried attempt carries from the one before it: that attempt's last checkpoint.

Owns ``carried_checkpoint`` (IMPL-CKPT-1): when the attempt just before ended without a
``WorkerResult`` (the runtime was killed, the worker crashed or was lost), its last durable
``agent.checkpointed`` (state, turn, usage, changed paths) is handed to the next attempt's
worker, which starts with that usage spent (runner invariant 21: usage accumulates across
attempts, and budgets count it) and is told what the earlier attempt had done. An attempt that
did return a result carries nothing: its usage is in its own end event, and a report that sums
the ends would count it twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from air.events.transitions import TASK_ENDS

if TYPE_CHECKING:
    from air.nursery.ledger import Ledger

__all__ = ["carried_checkpoint"]


def carried_checkpoint(ledger: Ledger, task_id: str, attempt_index: int) -> dict[str, Any] | None:
    """The checkpoint attempt ``attempt_index`` of ``task_id`` starts from, if any.

    Args:
        ledger: the session's log (an indexed read of two kinds of the task's events).
        task_id: the task.
        attempt_index: the attempt about to start (from 1).

    Returns:
        The last ``agent.checkpointed`` payload of attempt ``attempt_index - 1`` when that
        attempt ended without a worker result; otherwise None.
    """
    if attempt_index <= 1:
        return None
    last: dict[str, Any] | None = None
    for event in ledger.history_of("agent.checkpointed", task_id=task_id):
        p = event.payload
        if p.get("task_id") == task_id and p.get("attempt_index") == attempt_index - 1:
            last = dict(p)
    if last is None:
        return None
    for event in ledger.history_of(*sorted(TASK_ENDS), task_id=task_id):
        p = event.payload
        if p.get("agent_id") == last["agent_id"] and p.get("worker_result"):
            return None
    return last
