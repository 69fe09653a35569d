"""Plan making: the Main Agent's request turned into a TaskPlan the Scheduler can run.

Owns ``PlanMaker``: the plan prompt (a TaskPlan by its JSON schema), one repair round with the
validation errors, then a clear failure (SDD §14.1); the architecture review of a plan by the
ArchitectureDesigner (SDD §19.4, IMPL-ARCH-2), re-planned once with the designer's finding for
``requires_replan``; and telling the person why a refused plan is not scheduled. The state
machine that decides when to plan stays with ``air.agents.main.MainAgent``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Protocol

from air.agents.architecture import ArchitectureChange, ArchitectureDesigner, ArchitectureImpact
from air.agents.plan import TaskPlan, parse_plan, plan_schema_text
from air.agents.turns import TurnResult, TurnRunner, turn_error
from air.contracts.error import ErrorKind, Retryability, make_air_error
from air.contracts.provider import CanonicalMessage, TextBlock
from air.contracts.task import TaskSpec

__all__ = ["AgentFiles", "PlanMaker"]


class AgentFiles(Protocol):
    """The named agent files a planned task may name (``air.nursery.task_agents.TaskAgents``,
    injected: the Main Agent reads no project file itself; IMPL-AGENTFILE-1)."""

    def note(self) -> str:
        """The agents the plan prompt lists (read now; empty: none)."""
        ...

    def apply(self, specs: Sequence[TaskSpec]) -> tuple[list[TaskSpec], list[str]]:
        """The specs with their files applied, or the error lines of the repair round."""
        ...


_PLAN = (
    "Turn the person's request into worker tasks. Reply with one JSON object only, matching "
    "this JSON schema (a TaskPlan; each task a TaskSpec with a new unique id such as "
    '"t_<short-name>"): {schema}\nSet needs_plan to true only for an architecture-level '
    "change (public interfaces, schemas, package boundaries, security, runtime semantics). "
    "A task may change AGENTS.md, CLAUDE.md or a .git* file (.gitignore, .github/...) only "
    "when its scope.write_area names that file or directory."
)


class PlanMaker:
    """Makes and reviews the plans of one Main Agent.

    Args:
        turns: the agent's TurnRunner (hidden model turns, messages to the person).
        architect: the ArchitectureDesigner that reviews architecture-level plans.
        role_prompt: the Main Agent's role prompt (the plan prompt follows it).
        messages: the conversation of the next request (compacted when due).
        known_tasks: the ids of the session's tasks so far (a new plan's ids must be new).
    """

    def __init__(
        self,
        turns: TurnRunner,
        architect: ArchitectureDesigner,
        *,
        role_prompt: str,
        messages: Callable[[], Awaitable[list[CanonicalMessage]]],
        known_tasks: Collection[str],
        agent_files: AgentFiles | None = None,
    ) -> None:
        self._agent_files = agent_files
        self._turns = turns
        self._architect = architect
        self._role_prompt = role_prompt
        self._messages = messages
        self._known_tasks = known_tasks

    async def make(self, feedback: ArchitectureImpact | None = None) -> TaskPlan | TurnResult:
        """A valid plan, or the failed/interrupted turn (one repair round with the errors);
        ``feedback``: the architecture review the new plan must answer."""
        system = f"{self._role_prompt}\n\n{_PLAN.format(schema=plan_schema_text())}"
        if self._agent_files is not None and (agents := self._agent_files.note()):
            system = f"{system}\n\n{agents}"  # read now: a file added mid-session is offered
        messages = await self._messages()
        if feedback is not None:
            note = f"The architecture review requires a new plan: {feedback.summary}"
            messages = [*messages, CanonicalMessage(role="user", content=[TextBlock(text=note)])]
        errors: list[str] = []
        for attempt in (1, 2):
            turn = await self._turns.hidden(self._turns.request(system, messages))
            if turn.status != "complete":
                return turn
            plan, errors = parse_plan(turn.text, self._known_tasks)
            if plan is not None and self._agent_files is not None:
                tasks, errors = self._agent_files.apply(plan.tasks)  # IMPL-AGENTFILE-1
                plan = plan.model_copy(update={"tasks": tasks}) if not errors else None
            if plan is not None:
                return plan
            if attempt == 1:
                messages = [
                    *messages,
                    CanonicalMessage(role="assistant", content=[TextBlock(text=turn.text or "{}")]),
                    CanonicalMessage(
                        role="user",
                        content=[
                            TextBlock(
                                text="The plan is invalid:\n- "
                                + "\n- ".join(errors)
                                + "\nReply with the corrected JSON object only."
                            )
                        ],
                    ),
                ]
        return TurnResult(
            status="failed",
            error=make_air_error(
                kind=ErrorKind.VALIDATION_ERROR,
                message="the model's task plan was invalid twice (after one repair round)",
                detail="\n".join(errors),
                retryability=Retryability.AFTER_CHANGE,
                user_action=(
                    "Rephrase the request more concretely, split it, or use /direct to make the "
                    "change yourself."
                ),
            ),
        )

    async def review(self, plan: TaskPlan) -> tuple[ArchitectureImpact, TaskPlan | TurnResult]:
        """The designer's class of a plan, and the plan to go on with (re-planned once with
        the finding for ``requires_replan``)."""
        impact = await self._architect.assess_impact(
            ArchitectureChange.of_plan(plan.summary, plan.tasks)
        )
        if impact.result_class == "requires_replan":
            return impact, await self.make(feedback=impact)
        return impact, plan

    async def refused(self, impact: ArchitectureImpact, reviewed: TaskPlan | TurnResult) -> str:
        """Tell the person why nothing is scheduled; returns the transition's reason."""
        if isinstance(reviewed, TurnResult):
            if reviewed.status == "failed":
                await self._turns.show_failure(turn_error(reviewed))
            return f"replan {reviewed.status}"
        await self._turns.say(f"The architecture review rejected this plan: {impact.summary}")
        return impact.result_class
