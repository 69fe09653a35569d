"""The worker behind ``python -m air.roles``: validate ``agent.start`` and build the role before
``worker.ready`` (``prepare_worker``), then build the runtime and run the role (``run_worker``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import trio
from pydantic import ValidationError

from air.contracts.ipc import AgentStartControl, IpcEnvelope
from air.contracts.tool_runs import ToolResultEnvelope
from air.contracts.worker_result import WorkerResult
from air.ipc.runtime import WorkerRuntime, stdio_streams
from air.roles.loop import AgentLoopRole, role_for

__all__ = ["Prepared", "prepare_worker", "run_worker", "warm_models"]


@dataclass(frozen=True)
class Prepared:
    """A validated ``agent.start`` and the role that serves it."""

    start: AgentStartControl
    role: AgentLoopRole


def warm_models() -> None:
    """Build the validators the first turn uses (contracts defer them, IMPL-008) before stdin
    is read: a spare worker does it while the parent is still loading."""
    for model in (AgentStartControl, IpcEnvelope, ToolResultEnvelope, WorkerResult):
        model.model_rebuild(force=True)


def prepare_worker(payload: dict[str, Any]) -> Prepared | str:
    """Validate ``agent.start`` and build its role (and the models the first turn needs), or
    return why not. Runs before ``worker.ready``."""
    try:
        start = AgentStartControl.model_validate(payload)
        role = role_for(start)
    except (ValidationError, ValueError, KeyError) as exc:
        return f"invalid agent.start: {exc}"
    workspace = start.runtime.worktree_path
    if workspace and os.path.isdir(workspace):
        os.chdir(workspace)  # a spare worker was started in the project root
    return Prepared(start, role)


def run_worker(prepared: Prepared, session_id: str, agent_id: str, leftover: bytes) -> int:
    start, role = prepared.start, prepared.role

    async def main() -> int:
        rx, tx = stdio_streams()
        runtime = WorkerRuntime(
            start,
            session_id=session_id,
            agent_id=agent_id,
            agent_type=role.agent_type,
            receive=rx,
            send=tx,
            leftover=leftover,
        )

        async def body(rt: WorkerRuntime) -> WorkerResult:
            return await role.run(start.task_spec, start.context_pack, rt)

        return await runtime.run(body)

    return trio.run(main)
