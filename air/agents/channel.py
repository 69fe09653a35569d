"""The console's UiCommandChannel: every decision of the person, routed (SDD §13.2, §17).

Owns ``MainAgentChannel`` (implements ``air.contracts.ui.UiCommandChannel``) and
``PendingPrompts`` (the permission prompts waiting for the person). Routing, one place per
kind: ``user_message`` / ``direct`` / ``direct_done`` → the Main Agent's inbox (in order);
``interrupt`` (Esc) → ``MainAgent.interrupt`` (its current model turn only); ``cancel_task`` →
``Scheduler.cancel_task`` for exactly that task; ``cancel_run`` → ``Scheduler.cancel`` (the
second press, ``force``, goes to the runtime's kill hook); ``permission_response`` → the
waiting prompt; ``confirm`` → the Main Agent; ``compact`` → the Main Agent's inbox (refused
while it is mid-turn, IMPL-COMPACT-2); ``quit`` → the runtime's quit hook. A command
missing its field is an ``AirError`` (``validation_error``), never a silent no-op.

``PendingPrompts.wait`` is what a ToolRegistry ``PromptBroker`` awaits (a three-line adapter
builds its ``PermissionPromptResponse`` from the ``PromptAnswer``; it lives with the composition
root because ``air.agents`` may not import ``air.tools``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import trio

from air.agents.execution import TaskScheduler
from air.agents.main import MainAgent
from air.contracts.error import AirException, ErrorKind
from air.contracts.permission import PermissionGrantScope
from air.contracts.ui import PermissionAnswer, UiCommand

__all__ = ["MainAgentChannel", "PendingPrompts", "PromptAnswer"]

_SCOPES: dict[PermissionAnswer, PermissionGrantScope] = {
    "allow_once": PermissionGrantScope.ONCE,
    "allow_task": PermissionGrantScope.TASK,
    "allow_session": PermissionGrantScope.SESSION,
    "allow_project": PermissionGrantScope.PROJECT,
}


@dataclass(frozen=True)
class PromptAnswer:
    approved: bool
    scope: PermissionGrantScope = PermissionGrantScope.ONCE


class PendingPrompts:
    """Permission prompts waiting for an answer, by ``prompt_id``."""

    def __init__(self) -> None:
        self._events: dict[str, trio.Event] = {}
        self._answers: dict[str, PromptAnswer] = {}

    def open(self) -> list[str]:
        """The prompt ids still waiting."""
        return [p for p in self._events if p not in self._answers]

    async def wait(self, prompt_id: str) -> PromptAnswer:
        """Wait for the person's answer to ``prompt_id`` (cancel the caller to give up)."""
        event = self._events.setdefault(prompt_id, trio.Event())
        try:
            await event.wait()
            return self._answers[prompt_id]
        finally:
            self._events.pop(prompt_id, None)
            self._answers.pop(prompt_id, None)

    def resolve(self, prompt_id: str, answer: PermissionAnswer) -> bool:
        """Answer a waiting prompt; False when nobody waits for ``prompt_id``."""
        event = self._events.get(prompt_id)
        if event is None or prompt_id in self._answers:
            return False
        self._answers[prompt_id] = (
            PromptAnswer(approved=False)
            if answer == "deny"
            else PromptAnswer(approved=True, scope=_SCOPES[answer])
        )
        event.set()
        return True


def _missing(kind: str, field: str) -> AirException:
    return AirException.of(
        kind=ErrorKind.VALIDATION_ERROR,
        message=f"a {kind} command needs {field}",
        user_action=f"Send the {kind} command with its {field}.",
    )


class MainAgentChannel:
    """Routes UiCommands; see the module docstring.

    Args:
        agent: the session's Main Agent.
        scheduler: the session's Scheduler (cancels).
        prompts: the permission prompts waiting for the person.
        on_force_cancel: the second Ctrl-C (kill now); None ignores it.
        on_quit: called with ``force`` on ``quit``; None ignores it.
    """

    def __init__(
        self,
        agent: MainAgent,
        scheduler: TaskScheduler,
        prompts: PendingPrompts,
        *,
        on_force_cancel: Callable[[], None] | None = None,
        on_quit: Callable[[bool], Awaitable[None]] | None = None,
    ) -> None:
        self.agent = agent
        self.scheduler = scheduler
        self.prompts = prompts
        self.on_force_cancel = on_force_cancel
        self.on_quit = on_quit

    async def send(self, command: UiCommand) -> None:
        """Route one command.

        Raises:
            AirException: ``validation_error`` for a command without its required field or a
                permission answer to a prompt nobody waits for.
        """
        match command.kind:
            case "user_message":
                if command.text is None:
                    raise _missing("user_message", "text")
                await self.agent.submit(command.text)
            case "direct":
                await self.agent.submit(f"/direct {command.text or ''}".rstrip())
            case "direct_done":
                await self.agent.submit("/done")
            case "interrupt":
                self.agent.interrupt()
            case "cancel_task":
                if command.task_id is None:
                    raise _missing("cancel_task", "task_id")
                await self.scheduler.cancel_task(command.task_id, "cancelled by the person")
            case "cancel_run":
                if command.force and self.on_force_cancel is not None:
                    self.on_force_cancel()
                else:
                    self.scheduler.cancel("cancelled by the person (Ctrl-C)")
            case "permission_response":
                if command.prompt_id is None or command.decision is None:
                    raise _missing("permission_response", "prompt_id and decision")
                if not self.prompts.resolve(command.prompt_id, command.decision):
                    raise AirException.of(
                        kind=ErrorKind.VALIDATION_ERROR,
                        message=f"no permission prompt {command.prompt_id} is waiting",
                        user_action="Answer a prompt that is still shown.",
                    )
            case "confirm":
                if command.confirmed is None:
                    raise _missing("confirm", "confirmed")
                await self.agent.submit_confirmation(command.confirmed)
            case "compact":
                if self.agent.mid_turn:
                    raise AirException.of(
                        kind=ErrorKind.VALIDATION_ERROR,
                        message=(
                            "/compact waits for the Main Agent's current turn to end; send it "
                            "again once the agent has answered"
                        ),
                        user_action="Send /compact again once it has answered (Esc ends the turn).",
                    )
                await self.agent.compact_now()
            case "quit":
                if self.on_quit is not None:
                    await self.on_quit(command.force)
