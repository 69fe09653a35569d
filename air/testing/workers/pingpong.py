"""A well-behaved worker for benchmarks: after the handshake it makes N ``noop`` tool calls
through the real ``WorkerRuntime`` (the task description is ``N`` or ``N:SIZE``, SIZE characters
of padding in each call), then returns a result."""

from __future__ import annotations

import trio

from air.contracts.ipc import AgentStartControl
from air.contracts.runtime import AgentType
from air.contracts.worker_result import WorkerResult, WorkerStatus
from air.ipc.runtime import WorkerRuntime, stdio_streams
from air.testing.workers import _proto


def main() -> int:
    payload = _proto.handshake()
    start = AgentStartControl.model_validate(payload)
    leftover: bytes = _proto._state["buf"]

    async def run() -> int:
        rx, tx = stdio_streams()
        runtime = WorkerRuntime(
            start,
            session_id=_proto._state["session_id"],
            agent_id=_proto._state["agent_id"],
            agent_type=AgentType.REVIEWER,
            receive=rx,
            send=tx,
            leftover=leftover,
        )

        async def body(rt: WorkerRuntime) -> WorkerResult:
            n, _, size = start.task_spec.description.partition(":")
            pad = "x" * int(size or 0)
            for i in range(int(n)):
                env = await rt.call_tool("noop", {"i": i, "pad": pad} if pad else {"i": i})
                assert env.output == i
            return WorkerResult(
                task_id=rt.task_id,
                agent_id=rt.agent_id,
                agent_type=AgentType.REVIEWER,
                status=WorkerStatus.COMPLETED,
                summary=f"{int(n)} round trips",
                result={"verdict": "approved", "findings": []},
            )

        return await runtime.run(body)

    return trio.run(run)


if __name__ == "__main__":
    raise SystemExit(main())
