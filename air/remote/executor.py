"""The executor beside a remote workspace, its remote end: ``python -P -m air.remote.executor``
(issue #27 item 4; IMPL-REMOTE-5).

Owns the remote half of one decided tool call. The parent's ToolRegistry has already checked,
decided, prompted and recorded ``tool.started``; it sends one JSON request on stdin (the tool,
its input, the call's context with the workspace root rewritten to the run's remote worktree,
the task's read-before-edit hashes) and this process runs the same built-in executors as a local
call (``air.tools``: fs with its ``O_NOFOLLOW`` walk against the remote root, git, shell.run
under this host's bwrap) against a ``ToolRun`` whose services only write lines to stdout: every
event, progress item and artifact the tool makes, then ``done`` (output, attached artifacts,
hashes) or ``error``. The parent records them through its own redactor and stores. Nothing of
the parent's — keys, permissions, event log — is here; this side's redactor knows only the
built-in patterns. Stdin closing (the parent or the link went) ends this process at once; the
guard around it (``air.remote.guard``) then kills what it left.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import threading
from typing import Any

import trio

from air.contracts.artifact_records import (
    ArtifactContext,
    ArtifactCreateInput,
    ArtifactReadResult,
    ArtifactRef,
)
from air.contracts.error import AirException, ErrorKind
from air.contracts.event import RuntimeEvent
from air.contracts.tool import ToolDefinition
from air.contracts.tool_runs import ToolExecutionContext
from air.security.redact import SecretRedactor
from air.tools.executor import LocalWorkspaceExecutor
from air.tools.run import ArtifactSink, EventRecorder, ToolRun

__all__ = ["RemoteServices", "main", "provisional_ref", "remote_tool_names", "remote_tools"]


def _emit(line: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(line, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def provisional_ref(type: str, artifact_id: str, size: int) -> ArtifactRef:
    """This side's stand-in for an artifact the parent stores (its id, uri and path are
    replaced by the parent's own wherever they appear)."""
    return ArtifactRef.model_validate(
        {
            "artifact_id": artifact_id,
            "uri": f"air-remote-artifact://{artifact_id}",
            "path": f"air-remote-artifact/{artifact_id}",
            "type": type,
            "size_bytes": size,
        }
    )


class _Writer:
    """An artifact written in pieces; sent whole on ``commit``."""

    def __init__(self, services: RemoteServices, data: ArtifactCreateInput, ctx: ArtifactContext):
        self.services, self.data, self.ctx = services, data, ctx
        self.parts: list[bytes] = []
        self.size = 0

    def write(self, content: bytes) -> None:
        self.parts.append(content)
        self.size += len(content)

    def close(self) -> None:
        return None

    def commit(self) -> ArtifactRef:
        data = self.data.model_copy(update={"content": b"".join(self.parts)})
        return self.services.create(data, self.ctx)

    def discard(self) -> None:
        self.parts = []


class RemoteServices:
    """What a ``ToolRun`` needs of a registry, as lines to the parent."""

    def __init__(self, observations: dict[tuple[str, str], str]) -> None:
        self.recorder: EventRecorder = self
        self.artifacts: ArtifactSink = self
        self.redactor = SecretRedactor()
        self.read_observations = observations
        self.count = 0

    async def ingest(self, event: RuntimeEvent) -> None:
        _emit({"t": "event", "durable": True, "type": event.type, "payload": event.payload})

    async def ingest_ephemeral(self, event: RuntimeEvent) -> None:
        _emit({"t": "event", "durable": False, "type": event.type, "payload": event.payload})

    def create(self, data: ArtifactCreateInput, ctx: ArtifactContext) -> ArtifactRef:
        self.count += 1
        artifact_id = f"art_remote{os.getpid()}x{self.count}"
        _emit(
            {
                "t": "artifact",
                "id": artifact_id,
                "type": str(data.type),
                "slug": data.slug,
                "extension": data.extension,
                "command_run_id": ctx.command_run_id,
                "content": base64.b64encode(data.content).decode(),
            }
        )
        return provisional_ref(str(data.type), artifact_id, len(data.content))

    def open_writer(self, data: ArtifactCreateInput, ctx: ArtifactContext) -> _Writer:
        return _Writer(self, data, ctx)

    def read(self, artifact_id: str) -> ArtifactReadResult:
        raise AirException.of(
            kind=ErrorKind.TOOL_ERROR,
            message="artifacts are read in the parent, not beside a remote workspace",
            user_action="Read the artifact with artifact.read.",
        )


def remote_tools() -> LocalWorkspaceExecutor:
    """The built-in workspace tools, installed as the parent's registry installs them."""
    from air.security.engine import PermissionEngine
    from air.tools import register_builtin_tools
    from air.tools.registry import ToolRegistry

    executor = LocalWorkspaceExecutor()
    # only to install the executors: no call goes through this registry
    registry = ToolRegistry(
        engine=PermissionEngine(),
        recorder=RemoteServices({}),
        artifacts=RemoteServices({}),
        workspace=executor,
    )
    register_builtin_tools(registry)
    return executor


def remote_tool_names() -> frozenset[str]:
    """The tools a remote workspace runs (every other tool of a remote task is refused)."""
    return frozenset(remote_tools().names())


def _watch_stdin() -> None:
    """(A thread.) The parent closed the pipe or the link dropped: end now."""
    try:
        while os.read(0, 4096):
            pass
    except OSError:
        pass
    os._exit(3)


async def _call(request: dict[str, Any]) -> None:
    observations = {(o, p): h for o, p, h in request.get("observations", [])}
    services = RemoteServices(observations)
    definition = ToolDefinition.model_validate(request["definition"])
    context = ToolExecutionContext.model_validate(request["context"])
    run = ToolRun(
        tool_run_id=request["tool_run_id"],
        definition=definition,
        context=context,
        registry=services,
    )
    executor = remote_tools()
    send, receive = trio.open_memory_channel[Any](64)
    run.events = send
    result: list[Any] = []

    async def work() -> None:
        try:
            result.append(await executor.execute(definition.name, request["input"], run))
        except (AirException, OSError) as exc:
            result.append(exc)
        finally:
            await send.aclose()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(work)
        async for item in receive:
            _emit({"t": "stream", "kind": item.kind, "data": item.data})
    outcome = result[0]
    if isinstance(outcome, AirException):
        _emit({"t": "error", "error": outcome.error.model_dump(mode="json")})
    elif isinstance(outcome, OSError):
        _emit({"t": "oserror", "errno": outcome.errno or 0, "message": str(outcome)})
    else:
        _emit(
            {
                "t": "done",
                "output": outcome,
                "attached": [a.artifact_id for a in run.artifacts],
                "observations": [[o, p, h] for (o, p), h in observations.items()],
            }
        )


def main() -> int:
    line = sys.stdin.buffer.readline()
    try:
        request = json.loads(line)
    except ValueError:
        sys.stderr.write("air.remote.executor: expected one JSON request on stdin\n")
        return 2
    threading.Thread(target=_watch_stdin, daemon=True).start()
    trio.run(_call, request)
    return 0


if __name__ == "__main__":
    sys.exit(main())
