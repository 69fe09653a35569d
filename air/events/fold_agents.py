"""The fold's steps for what agents do: agents, their tool and command runs, their workspaces.

Owns the steps of ``agent.*``, ``tool.*``, ``command.*`` and ``workspace.*`` over
``SessionState`` (``AGENT_STEPS``, which ``air.events.fold.apply`` dispatches to), the events
an agent's evidence is read from (``EVIDENCE_TYPES``) and ``agent_of``, which agent such an
event belongs to. Statuses move only along ``air.events.transitions``.
"""

from __future__ import annotations

from sys import intern
from typing import TYPE_CHECKING, Any

from air.contracts.event import RuntimeEvent
from air.events.fold_state import (
    AgentFact,
    CommandRunFact,
    FoldStep,
    SessionState,
    ToolRunFact,
    WorkspaceFact,
    fold_error,
)
from air.events.transitions import AGENT_FROM, TOOL_FROM, WORKSPACE_FROM

if TYPE_CHECKING:
    from air.events.payloads.start import AgentStartedPayload, WorkspaceCreatedPayload
    from air.events.payloads.tools import CommandStartedPayload, ToolStartedPayload

__all__ = ["AGENT_STEPS", "EVIDENCE_TYPES", "agent_of"]

_AGENT_END = {
    "agent.completed": "completed",
    "agent.failed": "failed",
    "agent.lost": "lost",
    "agent.cancelled": "cancelled",
}
_TOOL_END = {"tool.completed": "ok", "tool.failed": "error", "tool.cancelled": "cancelled"}
_WORKSPACE_TO = {
    "workspace.merge.started": "active",
    "workspace.merge.completed": "merged",
    "workspace.merge.conflicted": "conflicted",
    "workspace.abandoned": "abandoned",
    "workspace.cleaned": "cleaned",
}
EVIDENCE_TYPES = frozenset(
    {
        "tool.started",
        "command.started",
        "command.completed",
        "command.failed",
        "artifact.created",
        "evidence.created",
        "diagnostic.created",
    }
)
"""The events an agent's evidence is read from (``air.artifacts.evidence``)."""


def _agent_started(
    state: SessionState, event: RuntimeEvent, x: AgentStartedPayload
) -> SessionState:
    existing = state.agents.get(x.agent_id)
    if existing is not None:
        # the running-phase re-emission of an agent recorded as ``starting`` (SDD §5.4)
        if existing.status != "starting" or x.status != "running":
            raise fold_error(event, f"agent {x.agent_id} already exists as {existing.status}")
        fact = existing._replace(
            status="running",
            pid=x.pid,
            pid_start_time=x.pid_start_time,
            boot_id=x.boot_id,
        )
    else:
        fact = AgentFact(
            agent_id=intern(x.agent_id),  # one object for the key and every fact naming it
            task_id=None if x.task_id is None else intern(x.task_id),
            agent_type=x.agent_type,
            status=intern(x.status),
            pid=x.pid,
            pid_start_time=x.pid_start_time,
            boot_id=None if x.boot_id is None else intern(x.boot_id),
        )
    return state._replace(agents=state.agents.set(fact.agent_id, fact))


def _agent_end(state: SessionState, event: RuntimeEvent, x: Any) -> SessionState:
    agent = state.agents.get(x.agent_id)
    if agent is None:
        raise fold_error(event, f"agent {x.agent_id} does not exist")
    if agent.status not in AGENT_FROM:
        raise fold_error(
            event, f"agent {x.agent_id} is {agent.status}, expected starting or running"
        )
    fact = agent._replace(
        status=_AGENT_END[event.type],
        exit_code=getattr(x, "exit_code", None),
        error=getattr(x, "error", None),
    )
    return state._replace(agents=state.agents.set(agent.agent_id, fact))


def _tool_started(state: SessionState, event: RuntimeEvent, x: ToolStartedPayload) -> SessionState:
    if x.tool_run_id in state.tool_runs:
        raise fold_error(event, f"tool run {x.tool_run_id} already exists")
    fact = ToolRunFact(x.tool_run_id, x.tool_name, x.task_id, x.agent_id)
    return state._replace(tool_runs=state.tool_runs.set(x.tool_run_id, fact))


def _tool_end(state: SessionState, event: RuntimeEvent, x: Any) -> SessionState:
    run = state.tool_runs.get(x.tool_run_id)
    if run is None:
        raise fold_error(event, f"tool run {x.tool_run_id} does not exist")
    if run.status not in TOOL_FROM:
        raise fold_error(event, f"tool run {x.tool_run_id} is {run.status}, expected running")
    if state.forgets_run_of(run.task_id, run.agent_id):  # its attempt ended (IMPL-MEM-1)
        return state._replace(tool_runs=state.tool_runs.delete(x.tool_run_id))
    fact = run._replace(
        status=_TOOL_END[event.type],
        duration_ms=x.duration_ms,
        error=getattr(x, "error", None),
    )
    return state._replace(tool_runs=state.tool_runs.set(x.tool_run_id, fact))


def _command_started(
    state: SessionState, event: RuntimeEvent, x: CommandStartedPayload
) -> SessionState:
    if x.command_run_id in state.command_runs:
        raise fold_error(event, f"command run {x.command_run_id} already exists")
    fact = CommandRunFact(x.command_run_id, x.command, x.cwd, x.task_id, x.agent_id, x.tool_run_id)
    return state._replace(command_runs=state.command_runs.set(x.command_run_id, fact))


def _command_end(state: SessionState, event: RuntimeEvent, x: Any) -> SessionState:
    run = state.command_runs.get(x.command_run_id)
    if run is None:
        raise fold_error(event, f"command run {x.command_run_id} does not exist")
    if run.ended:
        raise fold_error(event, f"command run {x.command_run_id} already ended")
    if state.forgets_run_of(run.task_id, run.agent_id):  # its attempt ended (IMPL-MEM-1)
        return state._replace(command_runs=state.command_runs.delete(x.command_run_id))
    fact = run._replace(
        ended=True,
        exit_code=x.exit_code,
        cancelled=bool(getattr(x, "cancelled", False)),
        error=getattr(x, "error", None),
    )
    return state._replace(command_runs=state.command_runs.set(x.command_run_id, fact))


def _workspace_created(
    state: SessionState, event: RuntimeEvent, x: WorkspaceCreatedPayload
) -> SessionState:
    if x.workspace_id in state.workspaces:
        raise fold_error(event, f"workspace {x.workspace_id} already exists")
    fact = WorkspaceFact(
        workspace_id=x.workspace_id,
        task_id=x.task_id,
        agent_id=x.agent_id,
        strategy=x.strategy.value,
        status="active",
        path=x.path,
        branch=x.branch,
        base_commit=x.base_commit,
    )
    return state._replace(workspaces=state.workspaces.set(x.workspace_id, fact))


def _workspace_step(state: SessionState, event: RuntimeEvent, x: Any) -> SessionState:
    ws = state.workspaces.get(x.workspace_id)
    if ws is None:
        raise fold_error(event, f"workspace {x.workspace_id} does not exist")
    allowed = WORKSPACE_FROM[event.type]
    if ws.status not in allowed:
        raise fold_error(
            event, f"workspace {x.workspace_id} is {ws.status}, expected one of {allowed}"
        )
    fact = ws._replace(status=_WORKSPACE_TO[event.type])
    from air.events.payloads.ends import (  # loaded: x is one of its (all steps but created)
        WorkspaceAbandonedPayload,
        WorkspaceMergeCompletedPayload,
        WorkspaceMergeConflictedPayload,
    )

    if isinstance(x, WorkspaceMergeCompletedPayload):
        fact = fact._replace(merge_commit=x.merge_commit)
    elif isinstance(x, WorkspaceMergeConflictedPayload):
        fact = fact._replace(conflicted_paths=tuple(x.conflicted_paths), kept_branch=x.kept_branch)
    elif isinstance(x, WorkspaceAbandonedPayload) and x.kept_branch is not None:
        fact = fact._replace(kept_branch=x.kept_branch)
    return state._replace(workspaces=state.workspaces.set(x.workspace_id, fact))


def agent_of(state: SessionState, event: RuntimeEvent, x: Any) -> str | None:
    """The agent whose evidence ``event`` belongs to (None: no agent's)."""
    agent_id: str | None = getattr(x, "agent_id", None)
    if agent_id is not None:
        return agent_id
    run_id: str | None = None
    if event.type in ("command.completed", "command.failed"):
        run_id = x.command_run_id
    elif event.type == "diagnostic.created":
        run_id = x.command_run_id
    elif event.type == "evidence.created" and x.entity_type.value == "command_run":
        run_id = x.entity_id
    run = state.command_runs.get(run_id) if run_id is not None else None
    return run.agent_id if run is not None else None


AGENT_STEPS: dict[str, FoldStep] = {
    "agent.started": _agent_started,
    **dict.fromkeys(_AGENT_END, _agent_end),
    "tool.started": _tool_started,
    **dict.fromkeys(_TOOL_END, _tool_end),
    "command.started": _command_started,
    "command.completed": _command_end,
    "command.failed": _command_end,
    "workspace.created": _workspace_created,
    **dict.fromkeys(WORKSPACE_FROM, _workspace_step),
}
"""The step per event type of agents, tool runs, command runs and workspaces."""
