"""The WorkspaceExecutor seam: the registry decides in the parent, the executor only does.

A recording executor (the local one underneath, so the tools really run) shows that every
allowed call — fs, shell, git — goes through the seam with the decided input, and that a call
the PermissionEngine refuses, or whose input fails the schema, never reaches it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from air.contracts.ids import JsonObject
from air.tools import ToolRegistry, register_builtin_tools
from air.tools.executor import LocalWorkspaceExecutor, WorkspaceToolFn
from air.tools.run import ToolRun
from tests.tools.conftest import Env


class Recording:
    def __init__(self) -> None:
        self.local = LocalWorkspaceExecutor()
        self.installed: list[str] = []
        self.calls: list[tuple[str, JsonObject, str]] = []

    def install(self, name: str, fn: WorkspaceToolFn) -> None:
        self.installed.append(name)
        self.local.install(name, fn)

    async def execute(self, name: str, input: JsonObject, run: ToolRun) -> Any:
        self.calls.append((name, dict(input), run.tool_run_id))
        return await self.local.execute(name, input, run)


def _registry(env: Env, executor: Recording) -> ToolRegistry:
    registry = ToolRegistry(
        engine=env.engine,
        recorder=env.session.ingestor,
        artifacts=env.session.artifacts,
        redactor=env.redactor,
        workspace=executor,
    )
    register_builtin_tools(registry)
    return registry


async def test_allowed_calls_go_through_the_workspace_executor(env: Env) -> None:
    executor = Recording()
    registry = _registry(env, executor)
    assert {"fs.read", "fs.write", "shell.run", "git.status"} <= set(executor.installed)
    ctx = env.ctx()
    read = await registry.call("fs.read", {"path": "src/app.py"}, ctx)
    assert read.status == "ok"
    wrote = await registry.call("fs.write", {"path": "src/new.py", "content": "X = 1\n"}, ctx)
    assert wrote.status == "ok"
    assert (Path(env.root) / "src" / "new.py").read_text() == "X = 1\n"
    status = await registry.call("git.status", {}, ctx)
    assert status.status == "ok"
    assert [name for name, _, _ in executor.calls] == ["fs.read", "fs.write", "git.status"]
    assert executor.calls[1][2] == wrote.tool_run_id


async def test_refused_and_invalid_calls_never_reach_the_executor(env: Env) -> None:
    executor = Recording()
    registry = _registry(env, executor)
    outside = str(env.outside / "victim.txt")
    denied = await registry.call("fs.write", {"path": outside, "content": "pwned"}, env.ctx())
    assert denied.status in ("denied", "blocked", "error")
    reviewer = await registry.call(
        "fs.write", {"path": "src/n.py", "content": "x"}, env.ctx(permission_template="reviewer")
    )
    assert reviewer.status != "ok"
    invalid = await registry.call("fs.read", {"path": 3}, env.ctx())
    assert invalid.status == "error"
    assert executor.calls == []
    assert (env.outside / "victim.txt").read_text() == "untouched\n"
    assert not (Path(env.root) / "src" / "n.py").exists()


async def test_the_default_registry_executes_locally(env: Env) -> None:
    assert isinstance(env.registry.workspace, LocalWorkspaceExecutor)
    read = await env.registry.call("fs.read", {"path": "src/app.py"}, env.ctx())
    assert read.status == "ok"
