"""The executor beside a remote workspace, the parent's half (issue #27 item 4; IMPL-REMOTE-5).

Owns ``RemoteTarget`` (a task's host and its remote worktree), ``RoutingWorkspaceExecutor`` (the
session registry's ``WorkspaceExecutor``: a call of a task attached to a host goes there, every
other call to the local executor) and ``execute_remote`` (one decided call over ssh to
``air.remote.executor`` under the host's guard, its lines replayed through the parent's
``ToolRun``: events recorded, progress streamed, artifacts stored — each through the parent's
redactor — and the remote stand-in artifact ids replaced by the stored ones).

A task attached to a host never runs a tool on the parent's disk: a tool the remote end does
not have is refused (``policy_error``), never run locally.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import subprocess
from typing import TYPE_CHECKING, Any, NamedTuple

import trio

from air.contracts.artifact import ArtifactType
from air.contracts.error import AirError, AirException, ErrorKind
from air.contracts.ids import JsonObject
from air.remote.hosts import HostConfig
from air.remote.ssh import client_environment, remote_command, ssh_argv, sweep_remote
from air.tools.executor import LocalWorkspaceExecutor, WorkspaceExecutor, WorkspaceToolFn

if TYPE_CHECKING:
    from air.contracts.artifact_records import ArtifactRef
    from air.tools.run import ToolRun

__all__ = ["RemoteTarget", "RoutingWorkspaceExecutor", "execute_remote"]


class RemoteTarget(NamedTuple):
    host: HostConfig
    worktree: str
    """The task's worktree on the host (``air.remote.sync.push_base``)."""


class RoutingWorkspaceExecutor:
    """Local calls in process; the calls of a task attached to a host, on that host."""

    def __init__(self, local: WorkspaceExecutor | None = None) -> None:
        self.local: WorkspaceExecutor = local or LocalWorkspaceExecutor()
        self.remote: dict[str, RemoteTarget | None] = {}
        """task id → where its calls run (``None``: a remote task whose worktree is not there
        yet or no longer: its calls are refused)."""
        self._remote_names: frozenset[str] | None = None

    def install(self, name: str, fn: WorkspaceToolFn) -> None:
        self.local.install(name, fn)

    def attach(self, task_id: str, target: RemoteTarget | None) -> None:
        self.remote[task_id] = target

    async def execute(self, name: str, input: JsonObject, run: ToolRun) -> Any:
        task_id = run.context.task_id
        if task_id is None or task_id not in self.remote:
            return await self.local.execute(name, input, run)
        target = self.remote[task_id]
        if self._remote_names is None:
            from air.remote.executor import remote_tool_names

            self._remote_names = remote_tool_names()
        if target is None or name not in self._remote_names:
            where = target.host.name if target else "its host"
            raise AirException.of(
                kind=ErrorKind.POLICY_ERROR,
                message=(
                    f"{name} cannot run for task {task_id}: the task runs on {where}, and "
                    "no tool of a remote task runs on this machine"
                ),
                user_action="Use the fs.*, git.* and shell.run tools, which run on the host.",
            )
        return await execute_remote(target, name, input, run)


def _failed(host: HostConfig, message: str) -> AirException:
    return AirException.of(
        kind=ErrorKind.TOOL_ERROR,
        message=f"{message} on {host.name}",
        user_action=f"Check the host with `air doctor --host {host.name}`.",
    )


class _Replay:
    """The remote end's lines, through the parent's ``ToolRun``."""

    def __init__(self, run: ToolRun) -> None:
        self.run = run
        self.refs: dict[str, ArtifactRef] = {}
        self.swaps: list[tuple[str, str]] = []

    def mapped(self, value: Any) -> Any:
        if not self.swaps:
            return value
        text = json.dumps(value)
        for old, new in self.swaps:
            text = text.replace(old, new)
        return json.loads(text)

    async def line(self, item: dict[str, Any]) -> dict[str, Any] | None:
        kind = item.get("t")
        run = self.run
        if kind == "event":
            payload = self.mapped(item["payload"])
            if item["durable"]:
                await run.record(item["type"], payload)
            else:
                await run.emit(item["type"], payload)
        elif kind == "stream":
            await run.stream(item["kind"], self.mapped(item["data"]))
        elif kind == "artifact":
            self._store(item)
        elif kind in {"done", "error", "oserror"}:
            return item
        return None

    def _store(self, item: dict[str, Any]) -> None:
        from air.contracts.artifact_records import ArtifactContext, ArtifactCreateInput

        run = self.run
        ref = run.registry.artifacts.create(
            ArtifactCreateInput(
                type=ArtifactType(item["type"]),
                slug=item["slug"],
                extension=item["extension"],
                content=run.redactor.redact_bytes(base64.b64decode(item["content"])),
            ),
            ArtifactContext(
                session_id=run.context.session_id,
                task_id=run.context.task_id,
                agent_id=run.context.agent_id,
                tool_run_id=run.tool_run_id,
                command_run_id=item.get("command_run_id"),
            ),
        )
        old = item["id"]
        self.refs[old] = ref
        self.swaps += [
            (f"air-remote-artifact://{old}", ref.uri),
            (f"air-remote-artifact/{old}", ref.path),
            (old, ref.artifact_id),
        ]


def _request(target: RemoteTarget, name: str, input: JsonObject, run: ToolRun) -> bytes:
    observer = run.context.task_id or run.context.session_id
    seen = run.registry.read_observations
    context = run.context.model_copy(
        update={"workspace_root": target.worktree, "project_root": target.worktree}
    )
    request = {
        "tool_run_id": run.tool_run_id,
        "definition": run.definition.model_dump(mode="json"),
        "context": context.model_dump(mode="json"),
        "input": input,
        "observations": [[o, p, h] for (o, p), h in seen.items() if o == observer],
    }
    return json.dumps(request).encode() + b"\n"


async def execute_remote(target: RemoteTarget, name: str, input: JsonObject, run: ToolRun) -> Any:
    """Run one decided call on ``target``'s host, in its worktree.

    Raises:
        AirException: the tool's own failure, as the remote end reported it; ``tool_error``
            when the host could not be reached or answered nothing.
        OSError: the tool's own ``OSError`` there.
    """
    host = target.host
    marker = f"exec_{run.tool_run_id}_{os.urandom(4).hex()}"
    command = [host.python, "-P", "-m", "air.remote.executor"]
    # under the host's lease, renewed below: a silent link ends the command there (IMPL-REMOTE-8)
    line = remote_command(
        host, marker, command, {}, lease_ttl_s=host.lease_ttl_s, cwd=target.worktree
    )
    argv = [*ssh_argv(host), "--", host.destination(), line]
    replay = _Replay(run)
    final: dict[str, Any] | None = None
    process = await trio.lowlevel.open_process(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        env=client_environment(),
    )
    assert process.stdin is not None
    assert process.stdout is not None
    assert process.stderr is not None
    errors = bytearray()
    try:
        async with trio.open_nursery() as nursery:

            async def drain() -> None:
                assert process.stderr is not None
                async for chunk in process.stderr:
                    errors.extend(chunk[: max(0, 4096 - len(errors))])

            nursery.start_soon(drain)
            await process.stdin.send_all(_request(target, name, input, run))
            renewal = trio.CancelScope()
            nursery.start_soon(_renew, process.stdin, host.lease_ttl_s / 3, renewal)
            buffer = b""
            async for chunk in process.stdout:
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for raw in lines:
                    if not raw.strip() or raw.startswith(b"air-remote "):
                        continue  # the guard's identity line
                    final = await replay.line(json.loads(raw)) or final
            renewal.cancel()
            await process.stdin.aclose()
        await process.wait()
    except BaseException:
        process.kill()
        with trio.move_on_after(15, shield=True):
            # why shielded: a cancelled call must not leave its command running there
            await process.wait()
            await sweep_remote(host, [marker], timeout_s=10)
        raise
    if final is None:
        detail = errors.decode("utf-8", "replace").strip()[-500:]
        raise _failed(host, f"{name} ended without a result (exit {process.returncode}): {detail}")
    return _finish(replay, final, run)


async def _renew(stdin: trio.abc.SendStream, every_s: float, scope: trio.CancelScope) -> None:
    """Renew the executor's lease: an empty line (which it ignores) every ``every_s``."""
    with scope, contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        while True:
            await trio.sleep(every_s)
            await stdin.send_all(b"\n")


def _finish(replay: _Replay, final: dict[str, Any], run: ToolRun) -> Any:
    if final["t"] == "error":
        raise AirException(AirError.model_validate(replay.mapped(final["error"])))
    if final["t"] == "oserror":
        raise OSError(int(final["errno"]), str(final["message"]))
    for old in final["attached"]:
        if old in replay.refs:
            run.attach(replay.refs[old])
    seen = run.registry.read_observations
    for observer, path, digest in final["observations"]:
        seen[(observer, path)] = digest
    return replay.mapped(final["output"])
