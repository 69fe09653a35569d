"""The frozen snapshot of the console's projection (SDD §13.1).

Owns ``build_snapshot(state, revision)``: the pure conversion of ``ViewState``'s mutable records
and its fold into a ``ProjectionSnapshot`` (tasks and waves, totals, agents, tool and command
runs with the statuses the fold derives). ``ProjectionStore.snapshot`` calls it at most once per
revision.
"""

from __future__ import annotations

from typing import Any

from air.contracts.ui import (
    AgentProjection,
    CommandRunProjection,
    MainAgentProjection,
    MessageProjection,
    ProjectionSnapshot,
    ToolRunProjection,
    TotalsProjection,
    UsagePart,
    WaveProjection,
)
from air.events.fold_state import CommandRunFact
from air.events.usage_ledger import PURPOSES
from air.projection.records import ViewState

__all__ = ["build_snapshot"]


def build_snapshot(s: ViewState, revision: int) -> ProjectionSnapshot:
    """The frozen projection of ``s`` at ``revision``: tasks and their waves, totals, the
    session with the fold's status, agents with their last heartbeat, tool and command runs
    with the fold's statuses, and the records as they are."""
    fold = s.fold.state
    tasks = s.tasks.projections(fold, s.usage)
    waves: dict[int, list[str]] = {}
    for t in tasks:
        waves.setdefault(t.wave, []).append(t.task_id)
    status_of = {t.task_id: t.status for t in tasks}
    wave_list = []
    for index in sorted(waves):
        statuses = {status_of[t] for t in waves[index]}
        state = (
            "running" if "running" in statuses else "pending" if "pending" in statuses else "done"
        )
        wave_list.append(WaveProjection(index=index, task_ids=waves[index], status=state))
    totals = TotalsProjection(
        tasks=len(tasks),
        running=sum(t.status == "running" for t in tasks),
        completed=sum(t.status == "completed" for t in tasks),
        failed=sum(t.status == "failed" for t in tasks),
        blocked=sum(t.status == "blocked" for t in tasks),
        cancelled=sum(t.status in ("cancelled", "interrupted") for t in tasks),
        turns=sum(t.turns for t in tasks),
        tokens=s.usage.total.tokens,
        cost_usd=s.usage.total.cost_usd,
        cache_read_tokens=s.usage.total.cache_read_tokens,
        cache_write_tokens=s.usage.total.cache_write_tokens,
        calls=s.usage.total.calls,
        parts=[
            UsagePart(
                purpose=purpose,
                calls=part.calls,
                tokens=part.tokens,
                cache_read_tokens=part.cache_read_tokens,
                cache_write_tokens=part.cache_write_tokens,
                cost_usd=part.cost_usd,
            )
            for purpose in PURPOSES
            if (part := s.usage.by_purpose.get(purpose)) is not None
        ],
    )
    session = s.session
    if session is not None and fold.session is not None:
        session = session.model_copy(update={"status": fold.session.status})
    agents = []
    for a in fold.agents.values():
        live = s.agent_live.get(a.agent_id)
        agents.append(
            AgentProjection(
                agent_id=a.agent_id,
                agent_type=a.agent_type.value,
                status=a.status,
                task_id=a.task_id,
                turn=live[0] if live else None,
                tokens=live[1] if live else None,
                state=live[2] if live else None,
            )
        )
    tools = []
    for run in s.tool_runs.values():
        fact = fold.tool_runs.get(run["tool_run_id"])
        status = fact.status if fact is not None else run["status"]
        tools.append(ToolRunProjection.model_validate({**run, "status": status}))
    commands = []
    for cmd in s.commands.values():
        row: dict[str, Any] = {**cmd.__dict__, "status": "unknown"}
        cfact = fold.command_runs.get(cmd.command_run_id)
        if cfact is not None:
            row["status"] = _command_status(cfact)
            row["exit_code"] = cfact.exit_code
        commands.append(CommandRunProjection.model_validate(row))
    return ProjectionSnapshot(
        revision=revision,
        session=session,
        main_agent=MainAgentProjection(state=s.main_state, direct_mode=s.direct_mode),
        messages=[MessageProjection.model_validate(m.__dict__) for m in s.messages.values()],
        tasks=tasks,
        waves=wave_list,
        agents=agents,
        tool_runs=tools,
        command_runs=commands,
        artifacts=list(s.artifacts.values()),
        diffs=list(s.diffs.values()),
        evidence=list(s.evidence.values()),
        permission_prompts=list(s.prompts.values()),
        blockers=list(s.blockers.values()),
        totals=totals,
        last_event_at=s.last_event_at,
    )


def _command_status(fact: CommandRunFact) -> str:
    """The derived status of a command run (SDD §4.4: ``command_runs`` has no status)."""
    if not fact.ended:
        return "running"
    if fact.cancelled:
        return "cancelled"
    if fact.exit_code is None:
        return "unknown"
    return "ok" if fact.exit_code == 0 else "error"
