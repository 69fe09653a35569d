"""The Scheduler's run behind the Main Agent: one run at a time, in the background.

Owns the ``TaskScheduler`` port (what the Main Agent needs of
``air.nursery.scheduler.Scheduler``) and ``SchedulerRun``: it starts ``run_until_idle`` as a
child of the agent's nursery so the agent stays ready while work executes, runs it again when
tasks were added meanwhile, keeps the last result and error for the closing summary, and tells
the agent when a run has ended (under the agent's lock). The states stay with
``air.agents.main.MainAgent``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

import trio

from air.contracts.error import AirError, AirException, ErrorKind
from air.contracts.task import TaskSpec
from air.contracts.task_results import SchedulerRunResult

__all__ = ["SchedulerRun", "TaskScheduler"]


class TaskScheduler(Protocol):
    """What the Main Agent needs of ``air.nursery.scheduler.Scheduler``."""

    async def create_tasks(
        self, specs: Sequence[TaskSpec], *, parent_task_id: str | None = None
    ) -> list[str]: ...

    async def cancel_task(self, task_id: str, reason: str = ...) -> None: ...

    async def run_until_idle(self) -> SchedulerRunResult: ...

    def cancel(self, reason: str = ...) -> None: ...


class SchedulerRun:
    """The background run of one Main Agent's Scheduler.

    Args:
        scheduler: the session's Scheduler.
        session_id: the session (a run that raised ends ``blocked`` in it).
        lock: the agent's lock; a run's end is handled under it.
        on_end: called under ``lock`` when a run has ended and no rerun is due.
    """

    def __init__(
        self,
        scheduler: TaskScheduler,
        *,
        session_id: str,
        lock: trio.Lock,
        on_end: Callable[[], Awaitable[None]],
    ) -> None:
        self._scheduler = scheduler
        self._session_id = session_id
        self._lock = lock
        self._on_end = on_end
        self.running = False
        self._rerun = False
        self.last_result: SchedulerRunResult | None = None
        self.last_error: AirError | None = None

    def start(self, nursery: trio.Nursery | None, *, new_tasks: bool) -> None:
        """Start a run in ``nursery``; while one runs, ask for a rerun when tasks are new.

        Raises:
            AirException: ``system_error`` when the agent is not running (no nursery).
        """
        if self.running:
            self._rerun = self._rerun or new_tasks
            return
        if nursery is None:
            raise AirException.of(
                kind=ErrorKind.SYSTEM_ERROR,
                message="the Main Agent is not running",
                user_action="Start it with `await nursery.start(agent.run)`.",
            )
        self.running = True
        self.last_result = None
        nursery.start_soon(self._execute)

    def forget(self) -> None:
        """Drop the last result and error once they are summarised."""
        self.last_result = None
        self.last_error = None

    async def _execute(self) -> None:
        while True:
            result: SchedulerRunResult | None = None
            try:
                result = await self._scheduler.run_until_idle()
            except AirException as exc:
                self.last_error = exc.error
            async with self._lock:
                if self._rerun:
                    self._rerun = False
                    continue
                self.running = False
                self.last_result = result or SchedulerRunResult(
                    session_id=self._session_id, status="blocked"
                )
                await self._on_end()
                return
