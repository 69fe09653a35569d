"""Mid-run steering, the parent's side: a correction sent to every running worker of a session.

Owns ``SteeredTask`` and ``steer_runs``: an ``agent.steer`` control down the live stdin command
channel of each supervised run of the session, in the order the runs started; it returns the
tasks whose worker's stdin took it, which the caller records (the Main Agent's
``requirement.delivered``). The worker adds the text before its next model turn
(``air.roles.steering``). A run with no process yet, or whose stdin is closed, is skipped.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from air.supervision.worker_run import WorkerRun, control

__all__ = ["SteeredTask", "steer_runs"]


class SteeredTask(NamedTuple):
    task_id: str
    agent_id: str


async def steer_runs(
    runs: Iterable[WorkerRun], *, session_id: str, note_id: str, text: str
) -> list[SteeredTask]:
    """Send ``text`` to each live run of ``session_id``; the tasks it reached."""
    reached: list[SteeredTask] = []
    for run in list(runs):
        req = run.request
        if req.session_id != session_id:
            continue
        if not await control(run, {"type": "agent.steer", "note_id": note_id, "text": text}):
            continue
        reached.append(SteeredTask(req.task_spec.id, req.agent_id))
    return reached
