"""The worker after the handshake: validate ``agent.start``, build the runtime, run the role.

Owns ``run_worker`` (called by ``python -m air.roles``).
"""

from __future__ import annotations

import sys
from typing import Any

import trio
from pydantic import ValidationError

from air.contracts.ipc import AgentStartControl
from air.contracts.worker_result import WorkerResult
from air.ipc.runtime import EXIT_PROTOCOL, WorkerRuntime, stdio_streams
from air.roles.loop import role_for

__all__ = ["run_worker"]


def run_worker(payload: dict[str, Any], session_id: str, agent_id: str, leftover: bytes) -> int:
    try:
        start = AgentStartControl.model_validate(payload)
    except ValidationError as exc:
        sys.stderr.write(f"air worker: invalid agent.start: {exc}\n")
        return EXIT_PROTOCOL
    role = role_for(start)

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
