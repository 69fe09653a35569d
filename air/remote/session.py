"""A remote task's decided calls over kept sessions (issue #27 item 4; IMPL-REMOTE-7).

Owns ``ExecutorSession`` (one ``air.remote.executor serve`` in the task's remote worktree under the
host's guard, behind one ssh connection — on a slurm host, one more step of the worker's job,
``srun --jobid --overlap``, so the calls run on its compute node: IMPL-SLURM-3, its lines on a
side channel of its own, never srun's stdio, which holds every reply over 1 KiB ~40 ms:
IMPL-SLURM-6 — serving one call at a time: a request line out, the call's lines back until its
``done``/``error``) and
``SessionPool`` (a task's sessions: a call takes an idle one or opens one, so the calls of a task
pay ssh's connection and the remote interpreters' start once, not per call; concurrent calls get
sessions of their own).

A session is never left behind. A call that is cancelled or fails mid-way kills its session (the
ssh client, then a sweep of its marker over a fresh connection; a step's srun client is signalled,
and srun passes the signal to the step's guard, which sweeps) — never reused after an unclean end;
``SessionPool.close`` (the task's attempt ended) ends every session of the task, sweeping any that
did not end cleanly; the parent's death closes the pipe (a step's socket), so the remote end
exits and its guard sweeps; while a call runs the parent renews the host's lease (an empty line
every third of ``lease_ttl_s``), so a black-holed link ends the call's tree there at the lease; a
session idle on the host for ``idle_s`` ends itself there, and the parent never sends to one idle
for half of that.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from air.ipc.procs import ProcessIdentity, kill_tree, read_identity
from air.remote import srun
from air.remote.guard import EXECUTOR_INPUT_ENDED, IDENTITY_PREFIX, parse_identity
from air.remote.hosts import HostConfig
from air.remote.sidechannel import SideChannel
from air.remote.ssh import (
    client_environment,
    log_text,
    remote_command,
    ssh_argv,
    sweep_remote,
    unlinked_log,
)

__all__ = ["ExecutorSession", "SessionPool", "idle_seconds"]

LINE_MAX = 64 * 1024 * 1024
"""The longest line a host's executor may send: its lines are events, progress and 512 KiB
pieces of artifacts (an executor from before the pieces sent an artifact whole, in one line)."""
CLOSE_WAIT_S = 5.0
"""How long a closing session may take to end on its own before it is killed and swept."""


def idle_seconds(host: HostConfig) -> float:
    """How long a session waits on the host for its next call before ending itself."""
    return float(4 * host.lease_ttl_s)


class ExecutorSession:
    """One remote executor behind one ssh connection (module docstring)."""

    def __init__(self, host: HostConfig, worktree: str, job: int | None = None) -> None:
        self.host = host
        self.worktree = worktree
        self.job = job
        """A slurm host: the worker's running job the session is a step of."""
        self.identity: ProcessIdentity | None = None
        """The local client (ssh or srun) once started."""
        self.marker = f"exec_{os.urandom(8).hex()}"
        """The run marker of the remote executor's tree (what a sweep kills)."""
        self.process: trio.Process | None = None
        self.send: trio.abc.SendStream | None = None
        self.receive: trio.abc.ReceiveStream | None = None
        """The executor's stdin and stdout: the ssh client's pipes, or a step's side channel
        (srun's stdout then carries the guard's identity line and nothing else)."""
        self.buffer: bytes | bytearray = b""
        self.at = 0
        """Where the unread part of ``buffer`` (the last chunk read) starts."""
        self.next_id = 0
        self.last_used = trio.current_time()
        self.remote: dict[str, Any] | None = None
        """The guard's identity line (host, pid, ...), once read."""
        self.log = -1
        """The ssh client's and the remote end's stderr: a descriptor of an unlinked local
        file (``unlinked_log``), -1 when closed."""

    async def open(self) -> None:
        command = [self.host.python, "-P", "-m", "air.remote.executor", "serve"]
        command += ["--idle", str(idle_seconds(self.host)), "--lease", str(self.host.lease_ttl_s)]
        side: SideChannel | None = None
        if self.host.launcher == "slurm":
            assert self.job is not None
            side = SideChannel(srun.callback_address(self.host))
            await side.open()
            command = srun.connect_back(self.host, command)
            argv = srun.step_argv(self.host, self.job, self.marker, command, self.worktree)
            env = srun.client_environment()
        else:
            line = remote_command(self.host, self.marker, command, {}, cwd=self.worktree)
            argv = [*ssh_argv(self.host), "--", self.host.destination(), line]
            env = client_environment()
        self.log = unlinked_log()
        try:
            self.process = await trio.lowlevel.open_process(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.log,
                start_new_session=True,
                env=env,
            )
            self.identity = read_identity(self.process.pid)
        except BaseException:
            if side is not None:
                side.close()
            if self.process is None:  # nothing ran: its log goes (close needs a process)
                os.close(self.log)
                self.log = -1
            raise
        if side is None:
            self.send, self.receive = self.process.stdin, self.process.stdout
        else:
            await self._connect(side)

    async def _connect(self, side: SideChannel) -> None:
        """A step: the guard's identity line on srun's stdout, then the side channel; when
        either does not come, the session has no streams (its first call fails, and ends it)
        and the reason is in its log."""
        assert self.process is not None
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        try:
            out = b""
            with trio.move_on_after(srun.SIDE_CHANNEL_WAIT_S):
                while b"\n" not in out and len(out) <= srun.FIRST_LINE_MAX:
                    chunk = await self.process.stdout.receive_some(srun.FIRST_LINE_MAX)
                    if not chunk:
                        break
                    out += chunk
            first, nl, _ = out.partition(b"\n")
            if nl:
                self.remote = parse_identity(first)
            if self.remote is None:
                reason = "the step did not start"
            elif streams := await side.hand_over(self.process.stdin, srun.SIDE_CHANNEL_WAIT_S):
                self.send, self.receive = streams
                return
            else:
                reason = f"the step did not connect back to {side.address}"
        finally:
            side.close()
        self._note(f"air: {reason} (IMPL-SLURM-5)\n")

    def _note(self, text: str) -> None:
        os.write(self.log, text.encode())  # at the offset the process's stderr shares

    def errors(self) -> str:
        """The tail of the session's stderr."""
        return log_text(self.log, 500, tail=True).strip() if self.log >= 0 else ""

    async def call(
        self, request: dict[str, Any], line: Callable[[dict[str, Any]], Awaitable[bool]]
    ) -> bool:
        """Send one call; hand each of its lines to ``line`` until it returns true (the call's
        last line). False: the session ended first (the link, the host or the executor)."""
        if self.send is None or self.receive is None:
            return False
        self.next_id += 1
        call_id = self.next_id
        data = json.dumps({**request, "id": call_id}).encode() + b"\n"
        try:
            await self.send.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return False
        failed: Exception | None = None
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._renew, self.send)
            try:
                return await self._lines(call_id, line, self.receive)
            except Exception as exc:  # raised below, outside the nursery: as it is, no group
                failed = exc
            finally:
                nursery.cancel_scope.cancel()
        assert failed is not None
        raise failed

    async def _renew(self, send: trio.abc.SendStream) -> None:
        """The host's lease on the running call: an empty line every third of it."""
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            while True:
                await trio.sleep(self.host.lease_ttl_s / 3)
                await send.send_all(b"\n")

    async def _lines(
        self,
        call_id: int,
        line: Callable[[dict[str, Any]], Awaitable[bool]],
        receive: trio.abc.ReceiveStream,
    ) -> bool:
        while True:
            raw = await self._line(receive)
            if raw is None:
                return False
            if raw.startswith(IDENTITY_PREFIX):  # the guard's identity line, first
                self.remote = parse_identity(raw)
                if self.remote is None:
                    raise ValueError("not the identity air's guard names")
                continue
            if not raw.strip():
                continue
            item = json.loads(raw)
            if item.pop("id", None) == call_id and await line(item):
                self.last_used = trio.current_time()
                return True

    async def _line(self, receive: trio.abc.ReceiveStream) -> bytes | None:
        """The next line without its newline; None when the stream ends first. Each byte is
        scanned and copied once (a line of a large artifact, 1 MiB per read, was joined and
        scanned again at every read: 80 MB of output took 49 s of the Trio thread)."""
        at = self.buffer.find(b"\n", self.at)
        if at >= 0:
            raw, self.at = bytes(self.buffer[self.at : at]), at + 1
            return raw
        parts: list[bytes | bytearray] = [self.buffer[self.at :]]
        size = len(parts[0])
        self.buffer, self.at = b"", 0
        while True:
            chunk = await receive.receive_some(1 << 20)
            if not chunk:
                self.buffer = b"".join(parts)
                return None
            at = chunk.find(b"\n")
            if at >= 0:
                parts.append(chunk[:at])
                self.buffer, self.at = chunk, at + 1
                return b"".join(parts)
            parts.append(chunk)
            size += len(chunk)
            if size > LINE_MAX:  # no executor's line is: a host that never ends one
                raise ValueError(f"a line of over {LINE_MAX} bytes")

    async def close(self, *, clean: bool) -> None:
        """End the session: its stdin closes (the remote executor exits, its guard sweeps);
        after an unclean end, or when it does not end within ``CLOSE_WAIT_S``, the ssh client
        is killed and the marker swept over a fresh connection. Shielded: it always runs."""
        process = self.process
        if process is None:
            return
        with trio.CancelScope(shield=True):
            ended = False
            if clean:
                for send in {self.send, process.stdin} - {None}:
                    assert send is not None
                    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                        await send.aclose()
                with trio.move_on_after(CLOSE_WAIT_S):
                    # the executor exits on its stdin's end; its guard swept its marker
                    ended = await process.wait() in (0, EXECUTOR_INPUT_ENDED)
            if not ended and self.host.launcher == "slurm":
                # srun passes SIGTERM to the step's guard, which sweeps the marker there
                with trio.move_on_after(15):
                    await kill_tree(self.identity, marker=None, grace_s=3.0)
                    await process.wait()
            elif not ended:
                if process.returncode is None:
                    process.kill()
                with trio.move_on_after(CLOSE_WAIT_S):
                    await process.wait()
                with trio.move_on_after(15):
                    await sweep_remote(self.host, [self.marker], timeout_s=10)
            streams = [self.send, self.receive, process.stdin, process.stdout]
            for stream in dict.fromkeys(s for s in streams if s is not None):
                await stream.aclose()
        if self.log >= 0:
            os.close(self.log)
            self.log = -1


class SessionPool:
    """The executor sessions of remote tasks: task id → its idle sessions."""

    def __init__(self) -> None:
        self.idle: dict[str, list[ExecutorSession]] = {}
        self.busy: dict[str, set[ExecutorSession]] = {}
        self.opened = 0
        """Sessions opened so far (each is one ssh connection and one remote executor)."""

    async def take(
        self, task_id: str, host: HostConfig, worktree: str, job: int | None = None
    ) -> ExecutorSession:
        """An idle session of the task in ``worktree`` (and ``job``), or a new one."""
        idle = self.idle.setdefault(task_id, [])
        while idle:
            session = idle.pop()
            fresh = trio.current_time() - session.last_used < idle_seconds(host) / 2
            alive = session.process is not None and session.process.returncode is None
            same = (session.worktree, session.host, session.job) == (worktree, host, job)
            if fresh and alive and same:
                self.busy.setdefault(task_id, set()).add(session)
                return session
            await session.close(clean=alive)  # one that ended while idle: swept
        session = ExecutorSession(host, worktree, job)
        self.busy.setdefault(task_id, set()).add(session)
        self.opened += 1
        try:
            await session.open()
        except BaseException:
            self.busy[task_id].discard(session)
            await session.close(clean=False)
            raise
        return session

    async def give_back(self, task_id: str, session: ExecutorSession, *, clean: bool) -> None:
        """After a call: a clean session waits for the task's next call; any other ends now
        (and so does any when the task's sessions were closed meanwhile)."""
        busy = self.busy.get(task_id)
        if busy is None or session not in busy:
            await session.close(clean=clean)
            return
        busy.discard(session)
        if clean:
            self.idle.setdefault(task_id, []).append(session)
        else:
            await session.close(clean=False)

    async def close(self, task_id: str) -> None:
        """End every session of the task (its attempt ended); calls still running close
        theirs when they return."""
        idle = self.idle.pop(task_id, [])
        self.busy.pop(task_id, None)
        for session in idle:
            await session.close(clean=True)
