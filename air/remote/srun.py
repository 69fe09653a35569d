"""Workers through Slurm: ``SrunLauncher`` behind the Launcher seam (issue #27 item 3).

Owns: ``srun_argv`` (``srun -N1 -n1 --kill-on-bad-exit --export=NONE`` with the job name
``air-<agent id>``, the time limit from the task's deadline, the host's partition, gres and extra
options, then ``env -i`` with air's explicit environment and ``air.remote.guard run`` around the
worker), ``time_limit`` (seconds as Slurm's ``M:SS``), ``client_environment`` (what the local srun
client sees: no API key, no ``SLURM_*`` of an enclosing allocation), ``scancel`` and
``scancel_jobs`` (the sweeper, by job name or id: cancel the jobs of given attempts, Slurm's kill
window ends every process of their steps), ``job_id_of`` (a job's id by its name, from ``squeue``),
``step_argv`` (one more step in a worker's allocation, ``srun --jobid=JOB --overlap``: where a
batch task's decided tool calls run, beside the worker on its compute node; IMPL-SLURM-3),
``SrunHandle`` (the local srun client as the worker's handle: kill = signal the client, then
``scancel``) and ``SrunLauncher``. The allocation is its own phase: ``launch`` returns only once
the step runs (the guard's first line, ``air-remote {identity}``, came) and its worker connected
back (``air.remote.sidechannel``: the worker's lines never go through srun's stdio, IMPL-SLURM-5),
so the handshake timeout counts from there; while Slurm reports the job queued, the spec's
``progress`` hears ``QUEUED_FOR_ALLOCATION``, and how long it waited once it runs. Whatever srun
prints before the step runs (a bad partition, an unknown option) becomes one non-retried
``protocol.error`` quoting it. The worker runs as the user who runs air (``--uid`` needs root;
IMPL-SLURM-2).
"""

from __future__ import annotations

import math
import os
import pwd
import re
import socket
import subprocess
from collections.abc import Sequence
from typing import Any

import trio

from air.contracts.error import ErrorKind, make_air_error
from air.ipc.launcher import Launched, LaunchSpec, close_pipes
from air.ipc.procs import MARKER_ENV, ProcessIdentity, kill_tree, read_identity
from air.ipc.protocol import LineEncoder
from air.remote.bounded import run_bounded
from air.remote.guard import IDENTITY_PREFIX, parse_identity
from air.remote.hosts import HostConfig
from air.remote.sidechannel import SideChannel
from air.remote.ssh import REMOTE_PATH, _remote_worker, forged_identity

__all__ = [
    "QUEUED_FOR_ALLOCATION",
    "SrunHandle",
    "SrunLauncher",
    "callback_address",
    "client_environment",
    "connect_back",
    "job_id_of",
    "job_name",
    "scancel",
    "scancel_jobs",
    "srun_argv",
    "step_argv",
    "time_limit",
]

QUEUED_FOR_ALLOCATION = "queued for a Slurm allocation"
"""The ``task.progress`` message of a task whose job waits for resources."""
CLIENT_ENV = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ", "SLURM_CONF")
QUEUED_LINE = re.compile(rb"srun: job (\d+) queued and waiting for resources")
FIRST_LINE_MAX = 4096
SIDE_CHANNEL_WAIT_S = 30.0
"""From the step running to its worker connecting back (an interpreter start on the node)."""
QUOTE_BYTES = 300
STDERR_DRAIN_S = 2.0
"""How long what srun wrote on stderr is read on after its stdout ended without the guard's line
(it says why: an unknown partition, a refused allocation)."""


def callback_address(host: HostConfig) -> str:
    """The address of this machine the step connects back to: the host's ``callback_address``,
    else what this machine's name resolves to."""
    if host.callback_address:
        return host.callback_address
    return socket.gethostbyname(socket.gethostname())


def job_name(agent_id: str) -> str:
    """The Slurm job name of one attempt (what ``scancel`` finds it by)."""
    return f"air-{agent_id}"


def time_limit(seconds: float) -> str:
    """``seconds`` (rounded up, at least one) as Slurm's ``minutes:seconds``."""
    whole = max(1, math.ceil(seconds))
    return f"{whole // 60}:{whole % 60:02d}"


def client_environment() -> dict[str, str]:
    """The local srun client's environment: an allowlist of ``os.environ`` (never an API key,
    never the ``SLURM_JOB_ID`` of an allocation air itself runs in)."""
    return {k: os.environ[k] for k in CLIENT_ENV if k in os.environ}


def srun_argv(
    host: HostConfig,
    marker: str,
    agent_id: str,
    command: Sequence[str],
    env: dict[str, str],
    *,
    time_s: float | None = None,
    cwd: str | None = None,
) -> list[str]:
    """The whole local command line of one worker step on ``host`` (in ``cwd``: a task's
    worktree in the host's work directory; default the work directory)."""
    argv = [
        "srun", "-N1", "-n1", "--kill-on-bad-exit=1", "--export=NONE",
        f"--job-name={job_name(agent_id)}",
        f"--chdir={cwd or host.workdir}",
    ]  # fmt: skip
    if time_s is not None:
        argv.append(f"--time={time_limit(time_s)}")
    elif host.time_limit:
        argv.append(f"--time={host.time_limit}")
    if host.partition:
        argv.append(f"--partition={host.partition}")
    if host.gres:
        argv.append(f"--gres={host.gres}")
    argv += host.srun_options
    return [*argv, *_guarded(host, marker, command, env)]


def connect_back(host: HostConfig, command: Sequence[str]) -> list[str]:
    """``command`` with its stdin and stdout on a side channel back to the parent
    (``air.remote.sidechannel``: what a step writes never goes through srun's stdio)."""
    return [host.python, "-P", "-m", "air.remote.sidechannel", "connect", "--", *command]


def step_argv(
    host: HostConfig, job_id: int, marker: str, command: Sequence[str], cwd: str
) -> list[str]:
    """One more step in the running job ``job_id``, sharing its resources (``--overlap``: the
    worker's step holds them), in ``cwd``, under the guard with air's explicit environment."""
    argv = [
        "srun", f"--jobid={job_id}", "--overlap", "-N1", "-n1", "--kill-on-bad-exit=1",
        "--export=NONE", f"--chdir={cwd}", "--quiet",
    ]  # fmt: skip
    return [*argv, *_guarded(host, marker, command, {})]


def _guarded(
    host: HostConfig, marker: str, command: Sequence[str], env: dict[str, str]
) -> list[str]:
    """``env -i`` with air's explicit environment, then the guard around ``command``."""
    home = pwd.getpwuid(os.getuid())
    variables = {
        "HOME": home.pw_dir,
        "USER": home.pw_name,
        "LOGNAME": home.pw_name,
        "PATH": REMOTE_PATH,
        "LANG": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
        **env,
        MARKER_ENV: marker,
    }
    guard = [host.python, "-P", "-m", "air.remote.guard", "run", "--", *command]
    return ["/usr/bin/env", "-i", *(f"{k}={v}" for k, v in variables.items()), *guard]


async def job_id_of(name: str, *, timeout_s: float = 15.0) -> int | None:
    """The id of this user's live job called ``name`` (``squeue``), or None."""
    argv = ["squeue", "-h", f"--user={pwd.getpwuid(os.getuid()).pw_name}", f"--name={name}"]
    done = await run_bounded([*argv, "-o", "%i"], env=client_environment(), timeout_s=timeout_s)
    ids = done.stdout.split() if done is not None else []
    if done is not None and done.returncode == 0 and len(ids) == 1 and ids[0].isdigit():
        return int(ids[0])
    return None


async def scancel(names: list[str], *, timeout_s: float = 15.0) -> bool:
    """Cancel this user's jobs called ``names`` (Slurm signals their steps, then kills what is
    left after its ``KillWait``); False when Slurm could not be asked."""
    if not names:
        return True
    argv = ["scancel", "--quiet", f"--user={pwd.getpwuid(os.getuid()).pw_name}"]
    argv.append("--name=" + ",".join(names))
    done = await run_bounded(argv, env=client_environment(), timeout_s=timeout_s)
    return done is not None and done.returncode == 0


async def scancel_jobs(ids: list[int], *, timeout_s: float = 15.0) -> bool:
    """Cancel this user's jobs ``ids`` (queued or running); False when Slurm could not be
    asked."""
    if not ids:
        return True
    argv = ["scancel", "--quiet", f"--user={pwd.getpwuid(os.getuid()).pw_name}"]
    done = await run_bounded([*argv, *map(str, ids)], env=client_environment(), timeout_s=timeout_s)
    return done is not None and done.returncode == 0


class SrunHandle:
    """The local srun client of one worker step."""

    def __init__(self, process: trio.Process, host: HostConfig, marker: str, name: str) -> None:
        self.process = process
        self.host = host
        self.marker = marker
        self.job_name = name
        self.identity: ProcessIdentity = read_identity(process.pid)
        self.job_id: int | None = None
        """Known when srun said the job was queued or allocated."""
        self.remote: dict[str, Any] | None = None
        """The guard's identity once the step runs (``air.remote.guard``)."""
        self.queued = False
        self.sweep_failed = False
        """``scancel`` after a kill could not reach Slurm: the next launch cancels first."""

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    async def kill_tree(self, grace_s: float) -> bool:
        """Signal the srun client (srun passes SIGTERM to the step and ends it; SIGKILL after
        ``grace_s``), then ``scancel`` the job: the sweeper for a client that could not."""
        killed = await kill_tree(self.identity, marker=None, grace_s=grace_s)
        self.sweep_failed = not await scancel([self.job_name], timeout_s=grace_s + 10)
        return killed

    async def wait(self) -> int:
        return await self.process.wait()

    async def aclose(self) -> None:
        """Close the local client's pipes (the handle stays, for a later sweep by marker)."""
        await close_pipes(self.process)


def _place(spec: LaunchSpec, handle: SrunHandle) -> None:
    """Tell the run record where the worker is: its job (also while queued), then the guard."""
    if spec.placed is not None:
        spec.placed(
            handle.host.placement(handle.remote, job_id=handle.job_id, job_name=handle.job_name)
        )


class Prefixed(trio.abc.ReceiveStream):
    """A stream whose first bytes were already read (by the allocation phase)."""

    def __init__(self, stream: trio.abc.ReceiveStream, prefix: bytes) -> None:
        self.stream = stream
        self.prefix = prefix

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        if self.prefix:
            data, self.prefix = self.prefix, b""
            return data
        return await self.stream.receive_some(max_bytes)

    async def aclose(self) -> None:
        await self.stream.aclose()


async def _tell(spec: LaunchSpec, message: str) -> None:
    """Report the allocation phase (shielded: a message half-ingested helps nobody)."""
    if spec.progress is not None:
        with trio.CancelScope(shield=True):
            await spec.progress(message)


class SrunLauncher:
    """Workers as Slurm job steps through the local ``srun`` client (IMPL-SLURM-2)."""

    def __init__(self, host: HostConfig, cwd: str | None = None) -> None:
        self.host = host
        self.cwd = cwd
        """The workers' directory (a task's worktree in the host's work directory, which the
        compute nodes share; default the work directory)."""
        self.handles: list[SrunHandle] = []
        """Every worker this launcher started (``sweep`` cancels their jobs)."""

    def job_id(self) -> int | None:
        """The job of the latest worker while its step runs (its tool calls run there)."""
        if not self.handles:
            return None
        handle = self.handles[-1]
        return handle.job_id if handle.remote is not None and handle.returncode is None else None

    async def sweep(self, *, timeout_s: float = 30.0) -> bool:
        """Cancel every job of a worker this launcher started (at session end)."""
        return await scancel([h.job_name for h in self.handles], timeout_s=timeout_s)

    def argv(self, spec: LaunchSpec) -> list[str]:
        command = connect_back(self.host, _remote_worker(self.host, spec.command))
        return srun_argv(
            self.host, spec.marker, spec.agent_id, command, dict(spec.env or {}),
            time_s=spec.time_s, cwd=self.cwd,
        )  # fmt: skip

    async def launch(self, spec: LaunchSpec) -> Launched:
        """Start the step and wait for it to run (the allocation phase); cancelled meanwhile
        (the task's deadline, a cancel), the srun client is killed and the job cancelled."""
        unswept = [h for h in self.handles if h.sweep_failed]
        if unswept:  # a task never has two live workers: an earlier cancel must land first
            if not await scancel([h.job_name for h in unswept]):
                raise OSError(f"cannot cancel earlier jobs on {self.host.name} before a relaunch")
            for h in unswept:
                h.sweep_failed = False
        side = SideChannel(callback_address(self.host))
        await side.open()
        process = await trio.lowlevel.open_process(
            self.argv(spec),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            env=client_environment(),
        )
        assert process.stdin is not None
        assert process.stdout is not None
        assert process.stderr is not None
        handle = SrunHandle(process, self.host, spec.marker, job_name(spec.agent_id))
        self.handles.append(handle)
        try:
            out, err = await self._allocation(handle, process.stdout, process.stderr, spec)
            if handle.job_id is None and handle.remote is not None:  # allocated at once
                handle.job_id = await job_id_of(handle.job_name)
            if handle.remote is not None:
                _place(spec, handle)
            send, receive = await self._side_channel(handle, side, process.stdin, spec.agent_id)
        except BaseException:
            side.close()
            with trio.CancelScope(shield=True):
                await handle.kill_tree(1.0)
                await handle.wait()
            raise
        if receive is None:  # srun failed, or the worker did not connect back: one error
            out = out if handle.remote is None else self._unconnected(side, spec.agent_id)
            receive = process.stdout
        else:  # the worker's lines come on the side channel; srun's stdout carries none
            out = b""
        return Launched(
            send=send,
            receive=Prefixed(receive, out),
            stderr=Prefixed(process.stderr, err),
            handle=handle,
            marker=spec.marker,
        )

    async def _side_channel(
        self, handle: SrunHandle, side: SideChannel, stdin: trio.abc.SendStream, agent_id: str
    ) -> tuple[trio.abc.SendStream, trio.abc.ReceiveStream | None]:
        """The step runs: offer the side channel on its stdin and take its connection (the
        worker's stdin and stdout); ``None`` when srun failed or nothing connected in time."""
        if handle.remote is None:
            side.close()
            return stdin, None
        streams = await side.hand_over(stdin, SIDE_CHANNEL_WAIT_S)
        return streams if streams is not None else (stdin, None)

    def _unconnected(self, side: SideChannel, agent_id: str) -> bytes:
        host = self.host
        error = make_air_error(
            kind=ErrorKind.ENVIRONMENT_ERROR,
            message=(
                f"the worker on {host.name} did not connect back to {side.address} within "
                f"{SIDE_CHANNEL_WAIT_S:.0f} s ({side.refused} connection(s) without the token)"
            ),
            retryability="never",
            user_action=f"Set `callback_address` of {host.name} in {host.source} to an address "
            "of this machine that the compute nodes reach (IMPL-SLURM-5).",
        )
        encoder = LineEncoder(session_id="", agent_id=agent_id)
        return encoder.line("protocol.error", {"error": error.model_dump(mode="json")})

    async def _allocation(
        self,
        handle: SrunHandle,
        stdout: trio.abc.ReceiveStream,
        stderr: trio.abc.ReceiveStream,
        spec: LaunchSpec,
    ) -> tuple[bytes, bytes]:
        """Read srun's stderr (queued / allocated) until the guard's first line on stdout;
        returns what the worker's stdout and stderr hold after it. A first line that is not
        the guard's (srun failed) becomes a ``protocol.error`` line."""
        err = bytearray()
        out = bytearray()
        since = trio.current_time()
        stderr_ended = trio.Event()

        async def watch_stderr() -> None:
            # the id srun prints is never taken: once the step runs its stderr is this stream
            # too, and a node's forged line would have recovery cancel another job by that id;
            # squeue names the job by its name (this user's, air's name for the agent)
            while data := await stderr.receive_some(65536):
                err.extend(data)
                if QUEUED_LINE.search(err) and not handle.queued:
                    handle.queued = True
                    handle.job_id = await job_id_of(handle.job_name)
                    _place(spec, handle)  # a parent killed while queued: scancel by the record
                    job = "" if handle.job_id is None else f" (job {handle.job_id})"
                    await _tell(spec, QUEUED_FOR_ALLOCATION + job)
            stderr_ended.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(watch_stderr)
            while b"\n" not in out and len(out) <= FIRST_LINE_MAX:
                data = await stdout.receive_some(65536)
                if not data:
                    # srun ended first: what it wrote on stderr says why (read to its end)
                    with trio.move_on_after(STDERR_DRAIN_S):
                        await stderr_ended.wait()
                    break
                out.extend(data)
            nursery.cancel_scope.cancel()
        line, nl, rest = bytes(out).partition(b"\n")
        if nl:
            handle.remote = parse_identity(line)
            if handle.remote is not None:
                if handle.queued:  # the task view stops showing it queued
                    waited = trio.current_time() - since
                    await _tell(spec, f"got a Slurm allocation after {waited:.1f} s")
                return rest, bytes(err)
        return self._failed(handle, spec.agent_id, bytes(out), bytes(err)), bytes(err)

    def _failed(self, handle: SrunHandle, agent_id: str, out: bytes, err: bytes) -> bytes:
        """One ``protocol.error`` (never retried) quoting what srun or the step wrote instead
        of the guard's line (a guard's line air cannot read: that line)."""
        host = self.host
        if out.startswith(IDENTITY_PREFIX):
            problem, action = forged_identity(host, out.partition(b"\n")[0][:QUOTE_BYTES])
            error = make_air_error(
                kind=ErrorKind.ENVIRONMENT_ERROR,
                message=problem,
                retryability="never",
                user_action=action,
            )
        else:
            said = (err or out)[:QUOTE_BYTES].decode("utf-8", "replace").strip()
            error = make_air_error(
                kind=ErrorKind.ENVIRONMENT_ERROR,
                message=f"srun on {host.name} did not start the worker: {said or 'no output'!r}",
                retryability="never",
                user_action=f"Check `partition`, `gres`, `time_limit`, `srun_options` and "
                f"`python` of {host.name} in {host.source}; try `srun -N1 -n1 {host.python} -V` "
                "by hand.",
            )
        encoder = LineEncoder(session_id="", agent_id=agent_id)
        return encoder.line("protocol.error", {"error": error.model_dump(mode="json")})
