"""FakeLauncher: workers as in-process Trio tasks over memory streams (issue #11 item 3).

Owns: ``FakeLauncher`` (an ``air.ipc.launcher.Launcher``: each launch starts a fake worker task
in the launcher's nursery, wired to the parent by Trio memory streams — stdin, stdout, stderr —
so the real ``WorkerManager`` supervises it byte for byte as it would a subprocess, and runs
under ``trio.testing.MockClock(autojump_threshold=0)`` in milliseconds), ``FakeHandle`` (the
worker's "process group": ``kill_tree`` is SIGTERM — the worker task is cancelled unless it
ignores SIGTERM — then, after the grace period, SIGKILL; exit codes ``-15`` / ``-9`` as a
subprocess reports them), ``FakeIO`` (the worker's end: JSON lines in and out, the controls it
received with their virtual times) and ``scripted`` (a worker that follows the step language of
``tests/workers/scripted_worker.py`` plus timing steps). The fake worker writes plain JSON, as
the stdlib misbehaving workers do: everything the parent believes it checks itself.
"""

from __future__ import annotations

import itertools
import json
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import trio
import trio.testing

from air.ipc.launcher import Launched, LaunchSpec
from air.ipc.procs import ProcessIdentity

__all__ = ["FAKE_BOOT_ID", "FakeHandle", "FakeIO", "FakeLauncher", "FakeWorker", "scripted"]

FAKE_BOOT_ID = "air-fake-launcher"
"""The boot id of every fake worker: never this machine's, so recovery never signals its pid."""

_PIDS = itertools.count(4_000_000)


class FakeIO:
    """The fake worker's end of the pipe."""

    def __init__(
        self,
        spec: LaunchSpec,
        stdin: trio.abc.ReceiveStream,
        stdout: trio.abc.SendStream,
        stderr: trio.abc.SendStream,
    ) -> None:
        self.spec = spec
        self._stdin = stdin
        self._stdout = stdout
        self._stderr = stderr
        self._buf = b""
        self.session_id = ""
        self.agent_id = spec.agent_id
        self.start: dict[str, Any] = {}
        self.controls: list[tuple[float, dict[str, Any]]] = []
        """Every control received, with the (virtual) time it arrived."""

    async def read(self) -> dict[str, Any] | None:
        """The next message from the parent (controls are also kept in ``controls``)."""
        while b"\n" not in self._buf:
            chunk = await self._stdin.receive_some(65536)
            if not chunk:
                return None
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        msg = json.loads(line)
        assert isinstance(msg, dict)
        if msg.get("kind") == "control":
            self.controls.append((trio.current_time(), dict(msg["payload"])))
        return msg

    async def read_until(self, control_type: str) -> dict[str, Any] | None:
        """Read until a control of ``control_type`` arrives (None at end of stream)."""
        while (msg := await self.read()) is not None:
            if msg.get("kind") == "control" and msg["payload"].get("type") == control_type:
                return msg
        return None

    async def send(
        self,
        kind: str,
        payload: dict[str, Any],
        *,
        correlation_id: str | None = None,
        id: str | None = None,
    ) -> None:
        env: dict[str, Any] = {
            "v": 1,
            "id": id or "msg_" + uuid.uuid4().hex,
            "kind": kind,
            "ts": "2026-01-01T00:00:00.000000Z",
            "session_id": self.session_id,
            "agent_id": self.agent_id,
            "payload": payload,
        }
        if correlation_id:
            env["correlation_id"] = correlation_id
        await self.write(json.dumps(env).encode() + b"\n")

    async def write(self, data: bytes) -> None:
        try:
            await self._stdout.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the parent stopped reading: a real worker would get EPIPE

    async def log_stderr(self, text: str) -> None:
        try:
            await self._stderr.send_all(text.encode())
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    async def handshake(self, protocol_version: int = 1) -> dict[str, Any]:
        """Read ``agent.start`` and answer ``worker.ready``; the start payload."""
        msg = await self.read()
        assert msg is not None, "the parent closed the pipe before agent.start"
        self.session_id = str(msg["session_id"])
        self.agent_id = str(msg["agent_id"])
        self.start = dict(msg["payload"])
        ready = {"protocol_version": protocol_version, "worker_version": "fake"}
        await self.send("event", {"type": "worker.ready", "version": 1, "payload": ready})
        return self.start

    async def drain(self) -> None:
        """Read until the parent closes stdin."""
        while await self.read() is not None:
            pass


FakeWorker = Callable[[FakeIO], Awaitable[int]]
"""A fake worker body: returns its exit code."""


@dataclass
class FakeHandle:
    """One fake worker's process: ``kill_tree`` / ``wait`` as for a real process group."""

    identity: ProcessIdentity
    ignore_sigterm: bool = False
    signals: list[tuple[float, str]] = field(default_factory=list)
    """The signals sent, with their virtual times."""
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    done: trio.Event = field(default_factory=trio.Event)
    code: int | None = None
    kill_code: int = -15
    sweep_s: float = 0.0
    """What a sweep of the worker's host takes after the kill (a remote worker's handle sweeps
    its marker over a fresh connection: up to ``grace_s`` + 10 s to a black-holed host)."""
    closed: bool = False
    """The parent closed what it holds of the worker (``WorkerHandle.aclose``)."""

    @property
    def returncode(self) -> int | None:
        return self.code

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()
        self.closed = True

    async def kill_tree(self, grace_s: float) -> bool:
        if not self.done.is_set():
            self.signals.append((trio.current_time(), "SIGTERM"))
            if not self.ignore_sigterm:
                self.scope.cancel()
            with trio.move_on_after(grace_s):
                await self.done.wait()
        if not self.done.is_set():
            self.signals.append((trio.current_time(), "SIGKILL"))
            self.kill_code = -9
            self.scope.cancel()
            await self.done.wait()
        await trio.sleep(self.sweep_s)
        return True

    async def wait(self) -> int:
        await self.done.wait()
        assert self.code is not None
        return self.code


class FakeLauncher:
    """Starts fake workers in ``nursery``.

    Args:
        worker: the body every launch runs.
        ignore_sigterm: the workers survive SIGTERM (only SIGKILL after the grace ends them).
        fail: every launch raises this ``OSError`` (a worker that cannot start).
        sweep_s: each kill then sweeps the worker's host for this long (``FakeHandle.sweep_s``).
        keep: keep every launch in ``launches``; False for a long run measuring the parent's
            memory (the fake workers' own state is no part of it).
    """

    def __init__(
        self,
        nursery: trio.Nursery,
        worker: FakeWorker,
        *,
        ignore_sigterm: bool = False,
        fail: OSError | None = None,
        keep: bool = True,
        sweep_s: float = 0.0,
    ) -> None:
        self._nursery = nursery
        self.sweep_s = sweep_s
        self._keep = keep
        self._worker = worker
        self.fail = fail
        self.ignore_sigterm = ignore_sigterm
        self.launches: list[tuple[LaunchSpec, FakeHandle, FakeIO]] = []

    async def launch(self, spec: LaunchSpec) -> Launched:
        await trio.lowlevel.checkpoint()
        if self.fail is not None:
            raise self.fail
        to_worker, worker_in = trio.testing.memory_stream_one_way_pair()
        worker_out, from_worker = trio.testing.memory_stream_one_way_pair()
        worker_err, from_worker_err = trio.testing.memory_stream_one_way_pair()
        io = FakeIO(spec, worker_in, worker_out, worker_err)
        handle = FakeHandle(
            identity=ProcessIdentity(pid=next(_PIDS), start_time=None, boot_id=FAKE_BOOT_ID),
            ignore_sigterm=self.ignore_sigterm,
            sweep_s=self.sweep_s,
        )
        self._nursery.start_soon(
            _run, self._worker, io, handle, (worker_in, worker_out, worker_err)
        )
        if self._keep:
            self.launches.append((spec, handle, io))
        return Launched(
            send=to_worker,
            receive=from_worker,
            stderr=from_worker_err,
            handle=handle,
            marker=spec.marker,
        )


async def _run(
    body: FakeWorker, io: FakeIO, handle: FakeHandle, streams: Sequence[trio.abc.AsyncResource]
) -> None:
    code: int | None = None
    with handle.scope:
        code = await body(io)
    handle.code = code if code is not None else handle.kill_code
    for stream in streams:  # the process is gone: its pipes close
        await trio.aclose_forcefully(stream)
    handle.done.set()


def scripted(
    steps: Sequence[dict[str, Any]],
    *,
    ready: bool = True,
    protocol_version: int = 1,
    answer_probes: bool = True,
) -> FakeWorker:
    """A worker following ``steps`` after the handshake, then reading until stdin closes.

    Steps (those of ``tests/workers/scripted_worker.py``, plus timing): ``{"call": name,
    "input": {...}}`` (a ``tool.call``, waiting for its ``tool.result``; ``"into": a_list``
    keeps every message that answers it, its ``tool.stream`` ones and the result), ``{"event": type,
    "payload": {...}}``, ``{"log": text}``, ``{"stderr": text}``, ``{"exit": code}``,
    ``{"result": {...}}`` (``task_id`` / ``agent_id`` / ``agent_type`` default to the start
    message's), ``{"sleep": seconds}`` (virtual time), ``{"until": control_type}`` (read until
    that control arrives; ``agent.get_state`` probes are answered with a heartbeat while
    ``answer_probes``), ``{"silent": True}`` (read to end of stream answering nothing),
    ``{"hang": True}`` (neither read nor write again: only a signal ends it).
    ``ready=False``: never answer ``agent.start``.
    """

    async def body(io: FakeIO) -> int:
        if not ready:
            await io.drain()
            return 0
        start = await io.handshake(protocol_version)
        for step in steps:
            code = await _step(io, start, step, answer_probes)
            if code is not None:
                return code
        await io.drain()
        return 0

    return body


async def _heartbeat(io: FakeIO) -> None:
    spec = io.start.get("task_spec") or {}
    payload = {"agent_id": io.agent_id, "task_id": spec.get("id"), "state": "running"}
    await io.send("event", {"type": "agent.heartbeat", "version": 1, "payload": payload})


async def _step(
    io: FakeIO, start: dict[str, Any], step: dict[str, Any], answer_probes: bool
) -> int | None:
    if "call" in step:
        call_id = "msg_" + uuid.uuid4().hex
        await io.send(
            "tool.call", {"name": step["call"], "input": step.get("input") or {}}, id=call_id
        )
        while (msg := await io.read()) is not None:
            if msg.get("correlation_id") != call_id:
                continue
            if "into" in step:  # a list the test reads: every message answering the call
                step["into"].append(msg)
            if msg.get("kind") == "tool.result":
                return None
        return 1
    if "until" in step:
        while (msg := await io.read()) is not None:
            if msg.get("kind") != "control":
                continue
            kind = msg["payload"].get("type")
            if kind == step["until"]:
                return None
            if kind == "agent.get_state" and answer_probes:
                await _heartbeat(io)
        return 1
    if "sleep" in step:
        await trio.sleep(float(step["sleep"]))
    elif "silent" in step:
        await io.drain()
    elif "hang" in step:
        await trio.sleep_forever()
    elif "event" in step:
        await io.send(
            "event",
            {
                "type": step["event"],
                "version": step.get("version", 1),
                "payload": step.get("payload") or {},
            },
        )
    elif "log" in step:
        await io.send("log", {"level": "info", "message": step["log"]})
    elif "stderr" in step:
        await io.log_stderr(str(step["stderr"]))
    elif "exit" in step:
        return int(step["exit"])
    elif "result" in step:
        spec, runtime = start["task_spec"], start["runtime"]
        agent_type = {"execute": "executor", "review": "reviewer", "debug": "debugger"}.get(
            spec["type"], "executor"
        )
        result = {
            "task_id": spec["id"],
            "agent_id": runtime["agent_id"],
            "agent_type": agent_type,
            **step["result"],
        }
        await io.send("worker.result", result)
    return None
