"""MainAgent: the agent the person talks to (SDD §14.1, §19.1, state machine §20.1).

Owns ``MainAgent``: the state machine over the person's messages. Its other concerns have their
own objects: model turns and their events ``air.agents.turns.TurnRunner``, making and reviewing
a plan ``air.agents.planning.PlanMaker``, the Scheduler's background run and the
``TaskScheduler`` port ``air.agents.execution.SchedulerRun``, direct mode
``air.agents.direct.DirectMode`` (over the ``ToolPort``), progress, blockers and the summary
``air.agents.progress.WorkTracker``, the plan formats ``air.agents.plan``.

Shape: a service (``await nursery.start(agent.run)``) that takes the person's input from its
inbox one at a time. Every state change goes through ``next_state`` and is recorded as a durable
``main_agent.state.changed`` before the agent acts on it. A user message is always recorded
first (``user.message.created``, so the conversation is in ``messages``), then: IDLE → the
model classifies it (``/direct`` needs no model) → an answer streamed to the person, or a task
plan (validated ``TaskPlan``, one repair round, then a clear failure) handed to the Scheduler,
or direct mode, where the agent itself calls tools through the ToolRegistry with the
``main_direct`` template and a write area of the main workspace only. The Scheduler's run is a
background task of the agent's nursery, so the agent stays ready while work executes: a
message then is a ``requirement.changed`` (INTERRUPTING; execution-only → delivered to the
running workers and resume, ``air.agents.steering``; else the contradicted tasks cancelled and a
new plan shown for confirmation). When the run ends the agent summarises it. Esc (``interrupt``)
cancels the current model turn only.

Compaction (IMPL-COMPACT-1): before each model request the agent asks its ``Compactor`` (the
session's ``SessionCompactor``) to compact when the history not yet summarised would pass the
threshold of its conversation budget; every request then carries the latest summary and the
messages after it, within the budget (``air.agents.window``). ``/compact`` (``compact_now``,
through the inbox) compacts at once and says the outcome in the conversation.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import trio

from air.agents.architecture import ArchitectureDesigner, ArchitectureImpact
from air.agents.conversation import ConversationEntry
from air.agents.direct import DirectMode, ToolPort
from air.agents.execution import SchedulerRun, TaskScheduler
from air.agents.model_switch import switch_model, with_task_model
from air.agents.plan import (
    TaskPlan,
    parse_change,
    parse_intent,
    render_plan,
)
from air.agents.planning import AgentFiles, PlanMaker
from air.agents.progress import WorkTracker
from air.agents.state import (
    STATE_EVENT,
    MainAgentState,
    MainAgentTrigger,
    transition_payload,
)
from air.agents.steering import CONTRADICTS, SteeringPort, contradicted_tasks, deliver
from air.agents.turns import EventSink, ModelPort, TurnResult, TurnRunner, turn_error
from air.agents.window import Compactor, conversation_budget, window_messages
from air.context.loader import builtin_resource
from air.contracts.error import AirError, AirException
from air.contracts.event import RuntimeEvent
from air.contracts.ids import new_id
from air.contracts.provider import (
    CanonicalMessage,
    ModelAssignment,
    ModelRequirement,
)
from air.contracts.worker_result import BlockerReport

__all__ = ["MainAgent"]

log = logging.getLogger(__name__)

S = MainAgentState
T = MainAgentTrigger

_CLASSIFY = (
    "Classify the person's last message. Reply with one JSON object only: "
    '{"intent": "task"} when it asks for a change to the project (code, tests, docs, build), '
    '{"intent": "chat"} for a question, an explanation or conversation.'
)
_CHANGE = (
    "Work is running: {tasks}. The person's last message changes the requirements. Reply with "
    'one JSON object only: {{"change_class": "execution" | "possible_design" | '
    '"design_interface_goal", "impacted_task_ids": [...]}}. "execution" means the running '
    "plan stays valid (a detail of how to do it); the others need a new plan."
)
_YES = frozenset({"y", "yes", "ok", "confirm", "go", "run", "run it", "proceed"})
_NO = frozenset({"n", "no", "reject", "drop", "drop it", "stop", "cancel"})


class MainAgent:
    """The Main Agent of one session; see the module docstring.

    Args:
        session_id / project_id: the session.
        project_root: the main workspace (direct mode writes only here).
        events: the EventIngestor (every transition and message is recorded through it).
        models: the ProviderManager.
        scheduler: the session's Scheduler.
        tools: the ToolRegistry (direct mode); None disables direct mode.
        model: the session's model; default ``models.select_model(role="main")``.
        history: the conversation so far (``load_conversation`` on reopen).
        max_direct_turns: model calls one direct-mode message may take.
        architect: the ArchitectureDesigner that gates architecture-level plans (SDD §19.4);
            default one over the same events, models and tools (and ``document_refusal``).
        compactor: the session's compactor (``SessionCompactor``); None: no compaction.
        context_budget: the tokens the conversation of one request may use; default
            ``conversation_budget(model)``.
        steering: sends a correction to the running workers (the ``WorkerManager``); None:
            a correction reaches no running worker (``air.agents.steering``).
        agent_files: the named agent files (``.air/agents``, IMPL-AGENTFILE-1).
        document_refusal: the default architect's check of its documents.
    """

    def __init__(
        self,
        *,
        session_id: str,
        project_id: str | None,
        project_root: str,
        events: EventSink,
        models: ModelPort,
        scheduler: TaskScheduler,
        tools: ToolPort | None = None,
        model: ModelAssignment | None = None,
        history: Sequence[ConversationEntry] = (),
        max_direct_turns: int = 12,
        agent_id: str = "main",
        architect: ArchitectureDesigner | None = None,
        compactor: Compactor | None = None,
        context_budget: int | None = None,
        steering: SteeringPort | None = None,
        agent_files: AgentFiles | None = None,
        document_refusal: Callable[[Path], str | None] | None = None,
    ) -> None:
        self.session_id = session_id
        self.steering = steering
        self.task_model: str | None = None
        """``provider/model`` of the tasks made after a ``/model`` switch (None: no switch)."""
        self.project_root = project_root
        self.scheduler = scheduler
        assignment = model or models.select_model(ModelRequirement(role="main"))
        self.turns = TurnRunner(
            events,
            models,
            assignment,
            session_id=session_id,
            project_id=project_id,
            agent_id=agent_id,
        )
        self.direct = (
            None
            if tools is None
            else DirectMode(
                self.turns,
                tools,
                session_id=session_id,
                project_root=project_root,
                max_turns=max_direct_turns,
            )
        )
        self.work = WorkTracker(self.turns)
        self.architect = architect or ArchitectureDesigner(
            events=events,
            models=models,
            project_root=project_root,
            session_id=session_id,
            project_id=project_id,
            tools=tools,
            model=assignment,
            document_refusal=document_refusal,
        )
        self.compactor = compactor
        self.context_budget = context_budget or conversation_budget(assignment)
        self.role_prompt = builtin_resource("role-main.md")
        self.plans = PlanMaker(
            self.turns,
            self.architect,
            role_prompt=self.role_prompt,
            messages=self._model_messages,
            known_tasks=self.work.titles,
            agent_files=agent_files,
        )
        self.conversation: list[ConversationEntry] = list(history)
        self._state = S.IDLE
        self._lock = trio.Lock()
        self._nursery: trio.Nursery | None = None
        self._inbox_send, self._inbox = trio.open_memory_channel[tuple[str, Any]](64)
        self._pending: TaskPlan | None = None
        self.work.reporting = False
        self.execution = SchedulerRun(
            scheduler, session_id=session_id, lock=self._lock, on_end=self._run_ended
        )

    # -- state -----------------------------------------------------------------------------
    @property
    def state(self) -> MainAgentState:
        return self._state

    async def _move(
        self, trigger: MainAgentTrigger, *, message_id: str | None = None, reason: str | None = None
    ) -> None:
        payload = transition_payload(self._state, trigger, message_id=message_id, reason=reason)
        await self.turns.record(STATE_EVENT, payload)
        self._state = MainAgentState(payload["to_state"])

    # -- the service -----------------------------------------------------------------------
    async def run(
        self, *, task_status: trio.TaskStatus[MainAgent] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Serve the inbox until cancelled; the Scheduler's runs are children of this task."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started(self)
            try:
                async for kind, value in self._inbox:
                    if kind == "message":
                        await self.handle_user_message(str(value))
                    elif kind == "confirm":
                        await self.handle_confirmation(bool(value))
                    elif kind == "compact":
                        await self.handle_compact()
            finally:
                self._nursery = None

    async def submit(self, text: str) -> None:
        """Queue a message of the person (handled in order)."""
        await self._inbox_send.send(("message", text))

    async def submit_confirmation(self, confirmed: bool) -> None:
        """Queue the person's answer to the CONFIRMING question."""
        await self._inbox_send.send(("confirm", confirmed))

    def interrupt(self) -> bool:
        """Esc: interrupt the current model turn only. False when no turn runs."""
        return self.turns.interrupt()

    @property
    def mid_turn(self) -> bool:
        """True while a message of the person is being handled (a model turn may run)."""
        return self._lock.locked()

    async def compact_now(self) -> None:
        """Queue ``/compact``: compact the session now (in order with the messages)."""
        await self._inbox_send.send(("compact", None))

    async def handle_compact(self) -> None:
        """Compact the session now and say the outcome (summary id, messages covered)."""
        async with self._lock:
            if self.compactor is None:
                await self.turns.say("Compaction is not available in this session.")
                return
            try:
                outcome = await self.compactor.compact("/compact")
            except AirException as exc:
                await self.turns.show_failure(exc.error)
                return
            if outcome is None:
                await self.turns.say(
                    "Nothing to compact: only the newest messages are left after the last summary."
                )
                return
            await self.turns.say(
                f"Compacted: summary {outcome.summary_id} covers "
                f"{len(outcome.replaced_message_ids)} messages (up to "
                f"{outcome.covers_until_message_id}); {len(outcome.pinned)} pinned facts kept "
                "verbatim; the originals stay in the history."
            )

    # -- messages --------------------------------------------------------------------------
    async def handle_user_message(self, message: str) -> None:
        """Record the message and act on it according to the current state (SDD §20.1)."""
        text = message.strip()
        message_id = new_id("msg")
        await self.turns.record(
            "user.message.created",
            {"message_id": message_id, "content": [{"type": "text", "text": message}]},
        )
        self.conversation.append(ConversationEntry(message_id, "user", message))
        async with self._lock:
            state = self._state
            command = text.split(maxsplit=1)[0] if text else ""
            if command == "/done" and state is not S.DIRECT_MODE:
                await self.turns.say("Direct mode is not on; /direct turns it on.")
            elif command == "/direct" and state is not S.IDLE:
                await self.turns.say(
                    "Direct mode starts only when the Main Agent is idle "
                    f"(now {state.value}); wait for the work to end or cancel it."
                )
            elif state is S.IDLE:
                await self._from_idle(text, message_id)
            elif state is S.DIRECT_MODE:
                if text == "/done":
                    await self._move(T.DONE, message_id=message_id)
                else:
                    await self._direct_turn(message_id)
            elif state is S.CONFIRMING:
                answer = text.lower().rstrip(".!")
                if answer in _YES:
                    await self._confirm(True, message_id)
                elif answer in _NO:
                    await self._confirm(False, message_id)
                else:
                    await self.turns.say("Reply yes to run the plan, or no to drop it.")
            elif state is S.EXECUTING:
                await self._requirement_changed(message, message_id)
            else:  # pragma: no cover - the lock serialises every other state
                raise AssertionError(f"message handled in state {state}")

    async def handle_confirmation(self, confirmed: bool) -> None:
        """The person's answer to a plan shown for confirmation (ignored in other states)."""
        async with self._lock:
            if self._state is S.CONFIRMING:
                await self._confirm(confirmed, None)

    async def _from_idle(self, text: str, message_id: str) -> None:
        await self._move(T.USER_MESSAGE, message_id=message_id)
        if text == "/direct" or text.startswith("/direct "):
            await self._move(T.DIRECT, message_id=message_id, reason="/direct")
            rest = text[len("/direct") :].strip()
            if rest:
                self.conversation[-1] = ConversationEntry(message_id, "user", rest)
                await self._direct_turn(message_id)
            return
        turn = await self.turns.hidden(
            self.turns.request(f"{self.role_prompt}\n\n{_CLASSIFY}", await self._model_messages())
        )
        if turn.status == "interrupted":
            await self._move(T.INTERRUPTED, message_id=message_id)
            return
        if turn.status == "failed":
            await self.turns.show_failure(turn_error(turn))
            await self._move(T.FAILED, message_id=message_id, reason="classification failed")
            return
        if parse_intent(turn.text) == "chat":
            await self._move(T.CHAT, message_id=message_id)
            answer = await self.turns.visible(
                self.turns.request(self.role_prompt, await self._model_messages())
            )
            if answer.status == "complete":
                self.conversation.append(
                    ConversationEntry(answer.message_id or new_id("msg"), "assistant", answer.text)
                )
            await self._move(T.ANSWERED, message_id=message_id, reason=answer.status)
            return
        await self._move(T.TASK, message_id=message_id)
        await self._delegate(message_id)

    # -- delegation ------------------------------------------------------------------------
    async def _delegate(self, message_id: str) -> None:
        plan = await self.plans.make()
        if isinstance(plan, TurnResult):
            trigger = T.INTERRUPTED if plan.status == "interrupted" else T.FAILED
            if trigger is T.FAILED:
                await self.turns.show_failure(turn_error(plan))
            await self._move(trigger, message_id=message_id)
            return
        self.work.reporting = True
        if plan.needs_plan:
            await self._move(T.NEEDS_PLAN, message_id=message_id)
            gated = await self._architecture_gate(plan, message_id)
            if gated is None:
                return
            plan = gated
        await self._move(T.SIMPLE, message_id=message_id)
        error = await self._hand_over(plan)
        if error is not None:
            await self.turns.show_failure(error)
            self.work.reporting = False
            await self._move(T.FAILED, message_id=message_id, reason=error.message)
            return
        await self.turns.say(f"Scheduled:\n{render_plan(plan)}")
        await self._move(T.SCHEDULED, message_id=message_id)
        self._execution_continues(new_tasks=True)

    async def _architecture_gate(self, plan: TaskPlan, message_id: str) -> TaskPlan | None:
        """ARCHITECTURE_DESIGNING (SDD §19.4, IMPL-ARCH-2): ``silent_continue`` returns the plan
        to schedule; ``requires_user_confirmation`` shows it for confirmation; ``requires_replan``
        re-plans once with the designer's finding and shows that plan; ``reject_or_escalate``
        tells the person why and schedules nothing. None: the plan is not scheduled now."""
        impact, reviewed = await self.plans.review(plan)
        if impact.result_class == "reject_or_escalate" or isinstance(reviewed, TurnResult):
            reason = await self.plans.refused(impact, reviewed)
            self.work.reporting = False
            await self._move(T.FAILED, message_id=message_id, reason=reason)
            return None
        if impact.result_class == "silent_continue":
            return reviewed
        await self._show_for_confirmation(reviewed, message_id, impact)
        return None

    async def _show_for_confirmation(
        self,
        plan: TaskPlan,
        message_id: str | None,
        impact: ArchitectureImpact | None = None,
    ) -> None:
        self._pending = plan
        review = "" if impact is None else f"Architecture review: {impact.summary}\n\n"
        await self.turns.say(f"{review}{render_plan(plan)}\n\nRun this plan? Reply yes or no.")
        await self._move(T.PLAN_SHOWN, message_id=message_id)

    async def _hand_over(self, plan: TaskPlan) -> AirError | None:
        try:
            await self.scheduler.create_tasks(with_task_model(plan.tasks, self.task_model))
        except AirException as exc:
            return exc.error
        for task in plan.tasks:
            self.work.planned(task.id, task.title)
        return None

    async def _confirm(self, confirmed: bool, message_id: str | None) -> None:
        plan, self._pending = self._pending, None
        if not confirmed or plan is None:
            if self.execution.running or self.execution.last_result is not None:
                await self.turns.say("Plan dropped; the running work continues.")
                await self._move(T.RESUME, message_id=message_id, reason="revision rejected")
                await self._resumed(new_tasks=False)
            else:
                await self.turns.say("Plan dropped.")
                self.work.reporting = False
                await self._move(T.REJECT, message_id=message_id)
            return
        error = await self._hand_over(plan)
        if error is not None:
            await self.turns.show_failure(error)
            self.work.reporting = False
            await self._move(T.FAILED, message_id=message_id, reason=error.message)
            return
        await self._move(T.CONFIRM, message_id=message_id)
        await self._resumed(new_tasks=True)

    # -- execution -------------------------------------------------------------------------
    def _execution_continues(self, *, new_tasks: bool) -> None:
        self.execution.start(self._nursery, new_tasks=new_tasks)

    async def _resumed(self, *, new_tasks: bool) -> None:
        """Back in EXECUTING: rerun for new tasks, or summarise a run that ended meanwhile."""
        if self.execution.running or new_tasks:
            self._execution_continues(new_tasks=new_tasks)
        else:
            await self._summarize()

    async def _run_ended(self) -> None:
        if self._state is S.EXECUTING:
            await self._summarize()

    async def _requirement_changed(self, message: str, message_id: str) -> None:
        await self._move(T.REQUIREMENT_CHANGE, message_id=message_id)
        running = self.work.unfinished()
        listing = ", ".join(f"{t} ({self.work.titles.get(t, '')})" for t in running) or "none"
        turn = await self.turns.hidden(
            self.turns.request(
                f"{self.role_prompt}\n\n{_CHANGE.format(tasks=listing)}{CONTRADICTS}",
                await self._model_messages(),
            )
        )
        if turn.status == "interrupted":
            await self._move(T.RESUME, message_id=message_id, reason="interrupted")
            await self._resumed(new_tasks=False)
            return
        answer = turn.text if turn.status == "complete" else ""
        change, impacted = parse_change(answer, running)
        contradicted = contradicted_tasks(answer, running)
        requirement_id = new_id("req")
        await self.turns.record(
            "requirement.changed",
            {
                "requirement_id": requirement_id,
                "description": message,
                "change_class": change,
                "impacted_task_ids": impacted,
                "origin_message_id": message_id,
            },
        )
        if change == "execution" and not contradicted:
            await deliver(
                self.turns,
                self.steering,
                session_id=self.session_id,
                requirement_id=requirement_id,
                text=message,
            )
            await self._move(T.EXEC_ONLY, message_id=message_id)
            await self._resumed(new_tasks=False)
            return
        await self._cancel_contradicted(contradicted)
        await self._move(T.DESIGN_CHANGE, message_id=message_id)
        plan = await self.plans.make()
        if isinstance(plan, TurnResult):
            if plan.status == "failed":
                await self.turns.show_failure(turn_error(plan))
            await self._move(T.RESUME, message_id=message_id, reason=plan.status)
            await self._resumed(new_tasks=False)
            return
        impact, reviewed = await self.plans.review(plan)
        if impact.result_class == "reject_or_escalate" or isinstance(reviewed, TurnResult):
            reason = await self.plans.refused(impact, reviewed)
            await self._move(T.RESUME, message_id=message_id, reason=reason)
            await self._resumed(new_tasks=False)
            return
        await self._show_for_confirmation(reviewed, message_id, impact)

    async def switch_model(self, ref: str) -> None:
        """``/model PROVIDER/MODEL``: the Main Agent's next turns and the tasks made from now on
        use it (``air.agents.model_switch``; a bad ``ref`` raises its ``config_error``)."""
        chosen = await switch_model(self.turns, self.session_id, ref)
        self.task_model = f"{chosen.provider_id}/{chosen.model_id}"
        self.context_budget = conversation_budget(chosen)

    async def _cancel_contradicted(self, task_ids: list[str]) -> None:
        """Cancel the running tasks a correction contradicts; the new plan replaces them."""
        for task_id in task_ids:
            await self.scheduler.cancel_task(task_id, "contradicted by the person's correction")
        if task_ids:
            await self.turns.say(
                f"Cancelled {', '.join(task_ids)}: the correction contradicts them; planning again."
            )

    async def _summarize(self) -> None:
        await self._move(T.ALL_DONE)
        await self.turns.say(self.summary_text())
        self.work.reporting = False
        self.execution.forget()
        await self._move(T.SUMMARIZED)

    def summary_text(self) -> str:
        """The closing summary of the last run (statuses, blockers)."""
        return self.work.summary_text(self.execution.last_result, self.execution.last_error)

    # -- progress and blockers -------------------------------------------------------------
    async def observe(self, event: RuntimeEvent) -> None:
        """Follow the session's task events (subscribe it to the bus, ``type_prefix="task."``)."""
        await self.work.observe(event)

    async def present_progress(self) -> None:
        """Tell the person how far the work is (SDD §14.1)."""
        await self.work.present_progress()

    async def present_blocker(self, blocker: BlockerReport | str, *, task_id: str) -> None:
        """Show a blocked task's report (SDD §14.1)."""
        await self.work.present_blocker(blocker, task_id=task_id)

    # -- direct mode -----------------------------------------------------------------------
    async def _direct_turn(self, message_id: str) -> None:
        if self.direct is None:
            await self.turns.say("Direct mode has no tools in this session. /done leaves it.")
            return
        reply = await self.direct.handle(self.role_prompt, await self._model_messages(), message_id)
        if reply.status == "complete":
            self.conversation.append(
                ConversationEntry(reply.message_id or new_id("msg"), "assistant", reply.text)
            )

    # -- helpers ---------------------------------------------------------------------------
    async def _model_messages(self) -> list[CanonicalMessage]:
        """The conversation of the next request: compacted first when it is due (one
        compaction, not one per turn), then the summary and the messages after it."""
        if self.compactor is None:
            return window_messages(self.conversation, None, self.context_budget)
        try:
            await self.compactor.compact_if_due(
                self.context_budget,
                "the Main Agent's next request passes the compaction threshold of its budget",
            )
        except AirException as exc:  # recorded context.compaction.failed; the window still fits
            log.warning("compaction failed: %s", exc.error.message)
        return window_messages(self.conversation, self.compactor.view(), self.context_budget)
