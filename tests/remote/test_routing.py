"""The parent's half of the executor beside a remote workspace (IMPL-REMOTE-5): a call of a
task attached to a host never runs on this machine — while its worktree is not there, and for a
tool the host does not run, it is refused; other tasks' calls stay local."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from air.contracts.error import AirException
from air.contracts.ids import JsonObject
from air.contracts.tool import ToolCategory, ToolDefinition
from air.contracts.tool_runs import ToolExecutionContext
from air.remote.hosts import HostConfig
from air.remote.workspace import RemoteTarget, RoutingWorkspaceExecutor
from air.tools.run import ToolRun


def _run(task_id: str, root: Path, name: str = "x.local") -> ToolRun:
    return ToolRun(
        tool_run_id="tr_1",
        definition=ToolDefinition(
            name=name, description="d", category=ToolCategory.FILESYSTEM, input_schema={}
        ),
        context=ToolExecutionContext(
            session_id="ses_1", task_id=task_id, project_root=str(root), workspace_root=str(root)
        ),
        registry=None,  # type: ignore[arg-type]  # these calls record nothing
    )


@pytest.fixture
def routing() -> tuple[RoutingWorkspaceExecutor, list[str]]:
    ran: list[str] = []
    executor = RoutingWorkspaceExecutor()

    async def local(input: JsonObject, run: ToolRun) -> Any:
        ran.append(str(run.context.task_id))
        return "here"

    executor.install("x.local", local)
    return executor, ran


async def test_a_remote_tasks_calls_never_run_here(
    routing: tuple[RoutingWorkspaceExecutor, list[str]], tmp_path: Path
) -> None:
    executor, ran = routing
    assert await executor.execute("x.local", {}, _run("task_here", tmp_path)) == "here"
    executor.attach("task_there", None)  # its worktree is not on the host (yet, or any more)
    with pytest.raises(AirException) as info:
        await executor.execute("x.local", {}, _run("task_there", tmp_path))
    assert info.value.kind == "policy_error"
    assert "no tool of a remote task runs on this machine" in info.value.error.message
    host = HostConfig(name="box", source="t", host="127.0.0.1")
    executor.attach("task_there", RemoteTarget(host, "/nowhere"))
    with pytest.raises(AirException) as info:  # a tool the host's executor does not have
        await executor.execute("x.local", {}, _run("task_there", tmp_path))
    assert info.value.kind == "policy_error"
    assert ran == ["task_here"]
