"""The agent files the Main Agent's tasks name (IMPL-AGENTFILE-1): what the plan prompt lists
and how a planned task takes its file.

Owns ``agents_note`` (the named agents as the plan prompt lists them, read at each plan, so a
file added mid-session is offered) and ``apply_agents`` (every task that names an agent takes
the file's fields under its own explicit ones, its persona and its tools, checked against its
role; what the model wrote into ``agent`` besides the name is replaced by the file's). A
problem (no such file, an untrusted project, a tool the role lacks) is one line per task, sent
back to the model in the plan's repair round like any other invalid plan.
"""

from __future__ import annotations

from collections.abc import Sequence

from air.contracts.error import AirException
from air.contracts.task import TaskConstraints, TaskSpec
from air.nursery.agent_tools import check_agent_tools
from air.session.agent_files import agent_overlay, find_agent, scan_agents

__all__ = ["TaskAgents", "agents_note", "apply_agents"]


class TaskAgents:
    """The Main Agent's ``AgentFiles`` port over one project (``air.agents.planning``)."""

    def __init__(self, project_root: str) -> None:
        self.project_root = project_root

    def note(self) -> str:
        return agents_note(self.project_root)

    def apply(self, specs: Sequence[TaskSpec]) -> tuple[list[TaskSpec], list[str]]:
        return apply_agents(specs, self.project_root)


def agents_note(project_root: str) -> str:
    """The named agents a task may run as (empty when there is none)."""
    catalog = scan_agents(project_root)
    if not catalog.agents:
        return ""
    lines = [
        f"- {name} ({agent.front.role.value if agent.front.role else 'any role'}): "
        f"{agent.front.description or 'no description'}"
        for name, agent in sorted(catalog.agents.items())
    ]
    return (
        'Named agents: a task may run as one by setting "agent": {"name": NAME} (its persona, '
        "tools and budgets apply; the task's own fields win):\n" + "\n".join(lines)
    )


def apply_agents(specs: Sequence[TaskSpec], project_root: str) -> tuple[list[TaskSpec], list[str]]:
    """The specs with their named agent files applied, and one error line per task that could
    not take its file (then the specs are not to be used)."""
    out: list[TaskSpec] = []
    errors: list[str] = []
    for spec in specs:
        if spec.agent is None:
            out.append(spec)
            continue
        try:
            agent, _skipped = find_agent(spec.agent.name, project_root)
            explicit = spec.constraints.model_dump(exclude_unset=True)
            constraints = {**agent_overlay(agent)["constraints"], **explicit}
            applied = spec.model_copy(
                update={
                    "constraints": TaskConstraints.model_validate(constraints),
                    "agent": agent.task_agent(),
                }
            )
            check_agent_tools(applied, agent.path)
        except AirException as exc:
            errors.append(f"tasks.{spec.id}.agent: {exc.error.message}")
            continue
        except ValueError as exc:  # the file's values do not make TaskConstraints
            errors.append(f"tasks.{spec.id}.agent: {exc}")
            continue
        out.append(applied)
    return out, errors
