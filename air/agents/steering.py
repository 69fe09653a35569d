"""A correction while work runs: deliver it to the running workers, or cancel and re-plan.

Owns the Main Agent's side of mid-run steering: ``SteeringPort`` (what it needs of the
``WorkerManager``: ``steer``), ``CONTRADICTS`` (the question added to the requirement-change
turn), ``contradicted_tasks`` (its answer) and ``deliver`` (send the correction down every
running worker's stdin command channel, record ``requirement.delivered`` naming the tasks that
got it, tell the person). The decision is explicit and simple (IMPL-STEER-1): the tasks the
model names as contradicted are cancelled and the change goes to a new plan; otherwise an
``execution`` change is delivered and the work continues.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol

from air.agents.plan import extract_json
from air.agents.turns import TurnRunner

__all__ = ["CONTRADICTS", "SteeredTaskLike", "SteeringPort", "contradicted_tasks", "deliver"]

CONTRADICTS = (
    ' Add "contradicted_task_ids": [...]: the running tasks whose work the message makes wrong '
    "whatever they do next (they are cancelled and planned again); a task that can take the "
    "message in as it goes on is not contradicted (it receives the message before its next "
    "model turn)."
)


class SteeredTaskLike(Protocol):
    @property
    def task_id(self) -> str: ...

    @property
    def agent_id(self) -> str: ...


class SteeringPort(Protocol):
    """What the Main Agent needs of ``air.supervision.worker_manager.WorkerManager``."""

    async def steer(
        self, session_id: str, note_id: str, text: str
    ) -> Sequence[SteeredTaskLike]: ...


def contradicted_tasks(text: str, running: Collection[str]) -> list[str]:
    """The running tasks the change turn's answer names in ``contradicted_task_ids`` (ids
    outside ``running`` dropped; an unreadable answer names none)."""
    try:
        raw = extract_json(text)
    except ValueError:
        return []
    listed = raw.get("contradicted_task_ids") if isinstance(raw, dict) else None
    if not isinstance(listed, list):
        return []
    return [str(t) for t in listed if str(t) in running]


async def deliver(
    turns: TurnRunner,
    port: SteeringPort | None,
    *,
    session_id: str,
    requirement_id: str,
    text: str,
) -> list[str]:
    """Send ``text`` to the session's running workers, record ``requirement.delivered`` and
    tell the person which tasks got it; the task ids."""
    reached = list(await port.steer(session_id, requirement_id, text)) if port else []
    task_ids = [r.task_id for r in reached]
    await turns.record(
        "requirement.delivered",
        {
            "requirement_id": requirement_id,
            "description": text,
            "task_ids": task_ids,
            "agent_ids": [r.agent_id for r in reached],
        },
    )
    if task_ids:
        await turns.say(
            f"Sent to the running work ({', '.join(task_ids)}); each task takes it in before "
            "its next model turn."
        )
    else:
        await turns.say("No task was running to take it; the work continues.")
    return task_ids
