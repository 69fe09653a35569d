"""Supervision under the virtual clock: the real WorkerManager driving fake workers
(``air.testing.launcher.FakeLauncher``) over memory streams, with file-backed sinks."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trio

from air.contracts.ids import new_id
from air.contracts.task import TaskConstraints, TaskSpec, TaskType, WorkspaceRef
from air.contracts.tool_runs import ToolExecutionContext, ToolResultEnvelope
from air.supervision.seams import SuperviseRequest
from air.supervision.worker_manager import SupervisionConfig, WorkerManager
from air.testing.launcher import FakeLauncher, FakeWorker
from air.testing.workers.harness import DirArtifacts, RecordingEvents


@asynccontextmanager
async def bounded_nursery() -> AsyncIterator[trio.Nursery]:
    """A nursery under an hour of (virtual) time: a deadline the code under test fails to set
    makes the test fail at once instead of hanging the autojump clock forever."""
    with trio.fail_after(3600):
        async with trio.open_nursery() as nursery:
            yield nursery


async def echo_tool(
    name: str, input: dict[str, Any], ctx: ToolExecutionContext
) -> ToolResultEnvelope:
    return ToolResultEnvelope(tool_run_id=new_id("tr"), tool_name=name, status="ok", output=input)


class NoProvider:
    def complete(self, request: Any) -> Any:
        raise AssertionError("these fake workers make no model calls")


@dataclass
class Rig:
    tmp: Path
    events: RecordingEvents
    artifacts: DirArtifacts

    def manager(
        self, nursery: trio.Nursery, worker: FakeWorker, *, ignore_sigterm: bool = False, **cfg: Any
    ) -> tuple[WorkerManager, FakeLauncher]:
        launcher = FakeLauncher(nursery, worker, ignore_sigterm=ignore_sigterm)
        manager = WorkerManager(
            tools=echo_tool,
            provider=NoProvider(),
            events=self.events,
            artifacts=self.artifacts,
            config=SupervisionConfig(**cfg),
            state_dir=str(self.tmp / "runs"),
            launcher=launcher,
        )
        return manager, launcher

    def request(self, type: TaskType = TaskType.REVIEW, **constraints: Any) -> SuperviseRequest:
        root = self.tmp / "proj"
        root.mkdir(exist_ok=True)
        return SuperviseRequest(
            session_id="ses_sup",
            project_id="proj_sup",
            project_root=str(root),
            task_spec=TaskSpec(
                id=new_id("task"),
                type=type,
                title="t",
                description="d",
                constraints=TaskConstraints(**constraints),
            ),
            agent_id=new_id("agt"),
            attempt_index=0,
            workspace=WorkspaceRef(workspace_id="ws", strategy="main", path=str(root)),
        )

    def types(self) -> list[str]:
        return [e.type for _, e in self.events.events]

    def event(self, type: str) -> dict[str, Any]:
        found = [e.payload for _, e in self.events.events if e.type == type]
        assert len(found) == 1, (type, self.types())
        return dict(found[0])


@pytest.fixture
def rig(tmp_path: Path) -> Rig:
    return Rig(tmp_path, RecordingEvents(), DirArtifacts(str(tmp_path / "artifacts")))


REVIEWED = {
    "result": {
        "status": "completed",
        "summary": "ok",
        "result": {"verdict": "approved", "findings": []},
    }
}
"""A reviewer's ``worker.result`` step that passes the parent's checks."""


def tool_result(answer: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``tool.result`` payload that ended ``answer`` (the messages answering one call)."""
    assert answer, "the call was never answered"
    assert answer[-1]["kind"] == "tool.result", answer
    payload: dict[str, Any] = answer[-1]["payload"]
    return payload


class Tools:
    """A tool router that answers each call with ``outputs[name]`` and keeps what it ran."""

    def __init__(self, outputs: dict[str, Any] | None = None) -> None:
        self.outputs = outputs or {}
        self.ran: list[str] = []
        self.inputs: list[dict[str, Any]] = []
        self.contexts: list[ToolExecutionContext] = []

    async def __call__(
        self, name: str, input: dict[str, Any], ctx: ToolExecutionContext
    ) -> ToolResultEnvelope:
        self.ran.append(name)
        self.inputs.append(input)
        self.contexts.append(ctx)
        return ToolResultEnvelope(
            tool_run_id=new_id("tr"), tool_name=name, status="ok", output=self.outputs.get(name)
        )
