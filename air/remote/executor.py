"""The executor beside a remote workspace, its remote end: ``python -P -m air.remote.executor``
(issue #27 item 4; IMPL-REMOTE-5).

Owns the remote half of a task's decided tool calls. One process serves the calls of one remote
session (``air.remote.session``, IMPL-REMOTE-7), one at a time: the parent's ToolRegistry has
already checked, decided, prompted and recorded ``tool.started``; it sends one JSON request line
on stdin per call (its ``id``, the tool, its input, the call's context with the workspace root
rewritten to the run's remote worktree, the task's read-before-edit hashes) and this process
runs the same built-in executors as a local call (``air.tools``: fs with its ``O_NOFOLLOW`` walk
against the remote root, git, shell.run under this host's bwrap) against a ``ToolRun`` whose
services only write lines to stdout, each carrying the call's ``id``: every event, progress
item and artifact the tool makes, then ``done`` (output, attached artifacts, hashes) or
``error``. The parent records them through its own redactor and stores. Nothing of the
parent's — keys, permissions, event log — is here; this side's redactor knows only the built-in
patterns. Stdin closing (the parent or the link went) ends this process at once, mid-call too;
so does ``--idle S`` seconds without a request between calls. The guard around it
(``air.remote.guard``) then kills what it left.
"""

from __future__ import annotations

import base64
import json
import os
import queue
import sys
import threading
import time
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
from air.remote.artifacts import PART_BYTES
from air.remote.guard import EXECUTOR_INPUT_ENDED
from air.security.redact import SecretRedactor
from air.tools.executor import LocalWorkspaceExecutor
from air.tools.run import ArtifactSink, EventRecorder, ToolRun

__all__ = ["RemoteServices", "main", "provisional_ref", "remote_tool_names", "remote_tools"]


_EMITTING = threading.Lock()
"""One line at a time: a command's log is written from a worker thread (``air.tools.output``)
while the loop sends its progress."""


def _emit(call_id: int, line: dict[str, Any]) -> None:
    text = json.dumps({"id": call_id, **line}, separators=(",", ":")) + "\n"
    with _EMITTING:
        sys.stdout.write(text)
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
    """An artifact sent as it is written: ``artifact.open``, its bytes in ``artifact.part``
    lines of at most ``PART_BYTES``, then ``artifact.commit`` (or ``artifact.discard``); the
    parent stores each piece as it comes (``air.remote.artifacts``), neither side holds it
    whole."""

    def __init__(self, services: RemoteServices, data: ArtifactCreateInput, ctx: ArtifactContext):
        services.count += 1
        self.services, self.type = services, str(data.type)
        self.artifact_id = f"art_remote{os.getpid()}x{services.count}"
        self.size = 0
        opened = {"t": "artifact.open", "id": self.artifact_id, "type": self.type}
        opened |= {"slug": data.slug, "extension": data.extension}
        _emit(services.call_id, {**opened, "command_run_id": ctx.command_run_id})
        self.write(data.content)

    def write(self, content: bytes) -> None:
        for at in range(0, len(content), PART_BYTES):
            piece = base64.b64encode(content[at : at + PART_BYTES]).decode()
            _emit(
                self.services.call_id,
                {"t": "artifact.part", "id": self.artifact_id, "content": piece},
            )
        self.size += len(content)

    def close(self) -> None:
        return None

    def commit(self) -> ArtifactRef:
        _emit(self.services.call_id, {"t": "artifact.commit", "id": self.artifact_id})
        return provisional_ref(self.type, self.artifact_id, self.size)

    def discard(self) -> None:
        _emit(self.services.call_id, {"t": "artifact.discard", "id": self.artifact_id})


class RemoteServices:
    """What a ``ToolRun`` needs of a registry, as lines to the parent."""

    def __init__(self, observations: dict[tuple[str, str], str], call_id: int = 0) -> None:
        self.call_id = call_id
        self.recorder: EventRecorder = self
        self.artifacts: ArtifactSink = self
        self.redactor = SecretRedactor()
        self.read_observations = observations
        self.count = 0

    async def ingest(self, event: RuntimeEvent) -> None:
        line = {"t": "event", "durable": True, "type": event.type, "payload": event.payload}
        _emit(self.call_id, line)

    async def ingest_ephemeral(self, event: RuntimeEvent) -> None:
        line = {"t": "event", "durable": False, "type": event.type, "payload": event.payload}
        _emit(self.call_id, line)

    def create(self, data: ArtifactCreateInput, ctx: ArtifactContext) -> ArtifactRef:
        return _Writer(self, data, ctx).commit()

    def open_writer(self, data: ArtifactCreateInput, ctx: ArtifactContext) -> _Writer:
        return _Writer(self, data, ctx)

    def read(self, artifact_id: str, *, max_bytes: int | None = None) -> ArtifactReadResult:
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


class _Lease:
    """The parent's lease on a running call: every byte from it renews the lease; ``ttl_s``
    without one while a call runs ends this process (exit 4; the guard kills the rest)."""

    def __init__(self, ttl_s: float) -> None:
        self.ttl_s = ttl_s
        self.last = time.monotonic()
        self.busy = False

    def begin(self) -> None:
        self.last = time.monotonic()
        self.busy = True

    def watch(self) -> None:
        """(A thread.)"""
        while True:
            time.sleep(min(0.25, self.ttl_s / 4))
            if self.busy and time.monotonic() - self.last > self.ttl_s:
                sys.stderr.write(f"air.remote.executor: parent silent for {self.ttl_s} s\n")
                os._exit(4)


def _read_requests(requests: queue.Queue[bytes], lease: _Lease) -> None:
    """(A thread.) Request lines into ``requests``; empty lines only renew the lease. End of
    stdin (the parent closed the pipe or the link dropped) ends the process now, mid-call too."""
    try:
        for line in sys.stdin.buffer:
            lease.last = time.monotonic()
            if line.strip():
                requests.put(line)
    except OSError:
        pass
    os._exit(EXECUTOR_INPUT_ENDED)


async def _call(request: dict[str, Any]) -> None:
    call_id = int(request["id"])
    observations = {(o, p): h for o, p, h in request.get("observations", [])}
    services = RemoteServices(observations, call_id)
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
            _emit(call_id, {"t": "stream", "kind": item.kind, "data": item.data})
    outcome = result[0]
    if isinstance(outcome, AirException):
        _emit(call_id, {"t": "error", "error": outcome.error.model_dump(mode="json")})
    elif isinstance(outcome, OSError):
        _emit(call_id, {"t": "oserror", "errno": outcome.errno or 0, "message": str(outcome)})
    else:
        _emit(
            call_id,
            {
                "t": "done",
                "output": outcome,
                "attached": [a.artifact_id for a in run.artifacts],
                "observations": [[o, p, h] for (o, p), h in observations.items()],
            },
        )


def serve(idle_s: float, lease_s: float) -> int:
    """Run the requests on stdin one after another until stdin ends (exit 3), ``idle_s``
    seconds pass between calls without one (exit 0) or a call's lease runs out (exit 4)."""
    requests: queue.Queue[bytes] = queue.Queue()
    lease = _Lease(lease_s)
    threading.Thread(target=_read_requests, args=(requests, lease), daemon=True).start()
    threading.Thread(target=lease.watch, daemon=True).start()
    while True:
        try:
            line = requests.get(timeout=idle_s)
        except queue.Empty:
            return 0
        try:
            request = json.loads(line)
            int(request["id"])
        except (ValueError, KeyError, TypeError):
            sys.stderr.write("air.remote.executor: a request line is not a call\n")
            return 2
        lease.begin()
        trio.run(_call, request)
        lease.busy = False


def main(argv: list[str]) -> int:
    if len(argv) == 5 and argv[0] == "serve" and argv[1] == "--idle" and argv[3] == "--lease":
        try:
            return serve(float(argv[2]), float(argv[4]))
        except ValueError:
            pass
    sys.stderr.write("usage: python -m air.remote.executor serve --idle SECONDS --lease SECONDS\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
