"""The wait for the person is off the asking task's clock (IMPL-DEADLINE-1).

Owns ``OffTheClock``: the console's ``PermissionPrompt`` as the ToolRegistry sees it. While a
task's permission prompt is open, the task's deadlines stand still — its attempt's soft and hard
deadlines (``WorkerManager.hold_clock``), the monitor's safety net — and when the person
answers, each moves by the wait, its whole-task deadline too (``deadlines.move``). A person who
read a prompt for longer than the task's hard timeout had the task fail ``timeout`` under the
open prompt, its work set aside. The time the worker and its tools spend is still counted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from air.nursery import deadlines

if TYPE_CHECKING:
    from air.contracts.permission_records import PermissionPromptRequest, PermissionPromptResponse
    from air.contracts.prompt import PermissionPrompt
    from air.nursery.scheduler import Scheduler

__all__ = ["OffTheClock"]


class OffTheClock:
    """Asks ``inner``; the asking task's clock stands still until the answer."""

    def __init__(self, inner: PermissionPrompt) -> None:
        self.inner = inner
        self.scheduler: Scheduler | None = None
        """Bound once the runtime has made it (the registry is made first)."""

    async def ask(self, request: PermissionPromptRequest) -> PermissionPromptResponse:
        scheduler, agent_id = self.scheduler, request.agent_id
        if scheduler is None or agent_id is None:
            return await self.inner.ask(request)
        started = trio.current_time()
        self._hold(scheduler, agent_id, request.task_id, True, 0.0)
        try:
            return await self.inner.ask(request)
        finally:
            waited = trio.current_time() - started
            self._hold(scheduler, agent_id, request.task_id, False, waited)

    @staticmethod
    def _hold(
        scheduler: Scheduler, agent_id: str, task_id: str | None, held: bool, waited_s: float
    ) -> None:
        runner = scheduler.io.runner
        hold, release = getattr(runner, "hold_clock", None), getattr(runner, "release_clock", None)
        if held and hold is not None:
            hold(agent_id)
        elif not held and release is not None:
            release(agent_id, waited_s)
        if scheduler.io.monitor is not None:
            scheduler.io.monitor.hold(agent_id, held, waited_s)
        if not held and task_id is not None:
            deadlines.move(scheduler.st, task_id, waited_s)
