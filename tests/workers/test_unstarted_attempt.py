"""An attempt that fails before its worker was launched (here: no file descriptor left while its
context is read) records no ``agent.*`` event: the log holds no agent to end, and an
``agent.failed`` of an agent never started was refused by the projection, so the run ended as a
``system_error`` instead of the machine's limit."""

from __future__ import annotations

import errno

import pytest

from air.contracts.runtime import ContextPack
from air.contracts.task import TaskType
from air.supervision.seams import SuperviseRequest
from air.supervision.worker_manager import SupervisionConfig, WorkerManager
from air.testing.workers import command_for
from tests.workers.conftest import Env


async def test_an_attempt_that_never_launched_records_no_agent_event(env: Env) -> None:
    async def no_files_left(request: SuperviseRequest) -> ContextPack:
        raise OSError(errno.EMFILE, "Too many open files")

    manager = WorkerManager(
        tools=env.registry.call,
        provider=object(),  # type: ignore[arg-type]  # never called: nothing is launched
        events=env.events,
        artifacts=env.artifacts,
        config=SupervisionConfig(command=command_for("pingpong")),
        state_dir=env.state_dir,
        context=no_files_left,
    )
    request = env.request(type=TaskType.REVIEW)
    with pytest.raises(OSError, match="Too many open files"):
        await manager.supervise(request)
    assert [e.type for e in env.events.durable() if e.type.startswith("agent.")] == []
