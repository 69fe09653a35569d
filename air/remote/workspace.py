"""The executor beside a remote workspace, the parent's half (issue #27 item 4; IMPL-REMOTE-5).

Owns ``RemoteTarget`` (a task's host and its remote worktree), ``RoutingWorkspaceExecutor`` (the
session registry's ``WorkspaceExecutor``: a call of a task attached to a host goes there, every
other call to the local executor) and ``execute_remote`` (one decided call sent to the task's
``air.remote.executor`` through a kept session, ``air.remote.session``, its lines replayed
through the parent's ``ToolRun``: events recorded, progress streamed, artifacts stored — each
through the parent's redactor — and the remote stand-in artifact ids replaced by the stored
ones). On a slurm host the session is one more step in the worker's job (``srun --jobid
--overlap``): the calls run on the worker's compute node, never on this login node
(IMPL-SLURM-3).

A task attached to a host never runs a tool on the parent's disk: a tool the remote end does
not have is refused (``policy_error``), never run locally.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from air.contracts.error import AirError, AirException, ErrorKind
from air.contracts.ids import JsonObject
from air.remote.artifacts import RemoteArtifacts
from air.remote.hosts import HostConfig
from air.remote.session import SessionPool
from air.tools.executor import LocalWorkspaceExecutor, WorkspaceExecutor, WorkspaceToolFn

if TYPE_CHECKING:
    from air.tools.run import ToolRun

__all__ = ["RemoteTarget", "RoutingWorkspaceExecutor", "execute_remote"]


class RemoteTarget(NamedTuple):
    host: HostConfig
    worktree: str
    """The task's worktree on the host (``air.remote.sync.push_base``)."""
    job: Callable[[], int | None] | None = None
    """A slurm host: the running job of the task's worker (``SrunLauncher.job_id``)."""


class RoutingWorkspaceExecutor:
    """Local calls in process; the calls of a task attached to a host, on that host."""

    def __init__(self, local: WorkspaceExecutor | None = None) -> None:
        self.local: WorkspaceExecutor = local or LocalWorkspaceExecutor()
        self.remote: dict[str, RemoteTarget | None] = {}
        """task id → where its calls run (``None``: a remote task whose worktree is not there
        yet or no longer: its calls are refused)."""
        self.sessions = SessionPool()
        """The kept executor sessions of remote tasks (IMPL-REMOTE-7)."""
        self._remote_names: frozenset[str] | None = None

    def install(self, name: str, fn: WorkspaceToolFn) -> None:
        self.local.install(name, fn)

    def attach(self, task_id: str, target: RemoteTarget | None) -> None:
        self.remote[task_id] = target

    async def close(self, task_id: str) -> None:
        """The task's attempt ended: end its executor sessions on the host (none survives)."""
        await self.sessions.close(task_id)

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
        return await execute_remote(target, name, input, run, self.sessions)


def _failed(host: HostConfig, message: str) -> AirException:
    return AirException.of(
        kind=ErrorKind.TOOL_ERROR,
        message=f"{message} on {host.name}",
        user_action=f"Check the host with `air doctor --host {host.name}`.",
    )


_EVENTS: dict[str, bool] = {
    "command.started": True,
    "command.completed": True,
    "command.failed": True,
    "diagnostic.created": True,
    "evidence.created": True,
    "command.stdout.delta": False,
    "command.stderr.delta": False,
}
"""What a tool run records (``True``: durable) or streams, so all a host's executor may send
(IMPL-REMOTE-5): the session's other facts are never a host's word — a host that sent
``user.message.created`` put words in the user's mouth in the Main Agent's conversation."""
_STREAMS = frozenset({"stdout", "stderr"})
_ARTIFACT_LINES = frozenset(
    {"artifact", "artifact.open", "artifact.part", "artifact.commit", "artifact.discard"}
)


class _Replay:
    """The remote end's lines, through the parent's ``ToolRun``. A line no executor sends —
    an event no tool records, a field missing or of another type — raises ``ValueError``,
    ``KeyError`` or ``TypeError``; ``execute_remote`` ends the call and its session on it."""

    def __init__(self, run: ToolRun) -> None:
        self.run = run
        self.artifacts = RemoteArtifacts(run)
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
            etype, durable, payload = item["type"], item["durable"], item["payload"]
            if type(etype) is not str or _EVENTS.get(etype) is not durable:
                raise ValueError(f"an event no tool records: {str(etype)[:60]!r}")
            if type(payload) is not dict:
                raise TypeError(f"a {etype} event's payload is no object")
            if durable:
                await run.record(etype, self.mapped(payload))
            else:
                await run.emit(etype, self.mapped(payload))
        elif kind == "stream":
            if item["kind"] not in _STREAMS:
                raise ValueError(f"a stream no tool has: {str(item['kind'])[:60]!r}")
            await run.stream(item["kind"], self.mapped(item["data"]))
        elif kind in _ARTIFACT_LINES:
            ref = await self.artifacts.line(kind, item)
            if ref is not None:
                old = item["id"]
                self.swaps += [
                    (f"air-remote-artifact://{old}", ref.uri),
                    (f"air-remote-artifact/{old}", ref.path),
                    (old, ref.artifact_id),
                ]
        elif kind in {"done", "error", "oserror"}:
            return item
        return None


def _request(target: RemoteTarget, input: JsonObject, run: ToolRun) -> dict[str, Any]:
    observer = run.context.task_id or run.context.session_id
    seen = run.registry.read_observations
    context = run.context.model_copy(
        update={"workspace_root": target.worktree, "project_root": target.worktree}
    )
    return {
        "tool_run_id": run.tool_run_id,
        "definition": run.definition.model_dump(mode="json"),
        "context": context.model_dump(mode="json"),
        "input": input,
        "observations": [[o, p, h] for (o, p), h in seen.items() if o == observer],
    }


async def execute_remote(
    target: RemoteTarget, name: str, input: JsonObject, run: ToolRun, sessions: SessionPool
) -> Any:
    """Run one decided call on ``target``'s host, in its worktree, through a session of the
    task's (a cancelled or broken call ends its session: killed and swept).

    Raises:
        AirException: the tool's own failure, as the remote end reported it; ``tool_error``
            when the host could not be reached or answered nothing.
        OSError: the tool's own ``OSError`` there.
    """
    host = target.host
    task_id = run.context.task_id or run.context.session_id
    job: int | None = None
    if host.launcher == "slurm":
        job = target.job() if target.job is not None else None
        if job is None:
            raise _failed(host, f"{name} has no running Slurm job of its worker to run in")
    replay = _Replay(run)
    final: list[dict[str, Any]] = []

    async def line(item: dict[str, Any]) -> bool:
        done = await replay.line(item)
        if done is not None:
            final.append(done)
        return done is not None

    session = await sessions.take(task_id, host, target.worktree, job)
    ended, detail = False, ""
    try:
        ended = await session.call(_request(target, input, run), line)
        if final:
            return _finish(replay, final[0], run)
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        # what no executor of air's sends: the host is not what it was (its session is killed)
        ended = False
        what = f"{type(exc).__name__}: {str(exc)[:200]}"
        raise _failed(
            host, f"{name}: the host's executor sent a line no executor sends ({what})"
        ) from None
    finally:
        replay.artifacts.discard_open()
        if not ended:
            detail = session.errors()
        await sessions.give_back(task_id, session, clean=ended)
    code = session.process.returncode if session.process else None
    raise _failed(host, f"{name} ended without a result (exit {code}): {detail[-500:]}")


def _finish(replay: _Replay, final: dict[str, Any], run: ToolRun) -> Any:
    if final["t"] == "error":
        raise AirException(AirError.model_validate(replay.mapped(final["error"])))
    if final["t"] == "oserror":
        raise OSError(int(final["errno"]), str(final["message"]))
    for old in final["attached"]:
        if old in replay.artifacts.stored:
            run.attach(replay.artifacts.stored[old])
    seen = run.registry.read_observations
    mine = run.context.task_id or run.context.session_id
    for observer, path, digest in final["observations"]:
        if observer == mine and type(path) is str and type(digest) is str:
            seen[(observer, path)] = digest  # this task's reads only: never another's
    return replay.mapped(final["output"])
