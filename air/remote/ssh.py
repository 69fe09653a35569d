"""Workers over OpenSSH: ``SshLauncher`` behind the Launcher seam (issue #27 item 2; IMPL-REMOTE-3).

Owns: ``ssh_argv`` (the ssh client's command line: no pty, batch mode, strict host keys against
the host's ``known_hosts``, keepalives, a connect timeout, no agent/X11/port forwarding, the
host's identity only), ``open_ssh_master`` (an optional ControlMaster connection owned and
closed by air), ``remote_command`` (the one shell line the remote runs: into the host's work
directory, then ``exec env -i`` with an explicit environment — never the parent's — and
``air.remote.guard run`` around the worker), ``client_environment`` (what the local ssh client
itself sees: no API key, no token), ``NoiseGuard`` (bytes on stdout before the worker's first
line — a login script's output — become one non-retried ``protocol.error`` quoting them),
``LeaseSender`` (the worker's stdin, renewing its lease with an empty line when the parent has
been silent for a third of the lease), ``SshHandle`` (the local ssh client as the worker's
handle: killing it closes the connection, so the remote guard ends the worker's tree; then a
sweep over a fresh connection; ssh's own messages go to a log of their own, ``-E``),
``module_argv`` and ``run_remote`` (one air module run on the host over a fresh connection),
``classify_ssh_failure`` (ssh's message as a cause and a fix), ``forged_identity`` (a guard's
line air cannot read, as a cause and a fix) and ``sweep_remote`` (the
sweeper: after every kill, before a launch when an earlier sweep could not reach the host, and
``SshLauncher.sweep`` at session end). The run marker travels in the remote environment, as
locally.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import trio

from air.contracts.error import ErrorKind, make_air_error
from air.ipc.launcher import Launched, LaunchSpec, close_pipes, worker_command
from air.ipc.procs import MARKER_ENV, ProcessIdentity, kill_tree, read_identity
from air.ipc.protocol import LineEncoder
from air.remote.bounded import run_bounded
from air.remote.guard import IDENTITY_PREFIX, SSH_FAILED, parse_identity
from air.remote.hosts import HostConfig

__all__ = [
    "REMOTE_PATH",
    "LeaseSender",
    "NoiseGuard",
    "SshHandle",
    "SshLauncher",
    "classify_ssh_failure",
    "client_environment",
    "forged_identity",
    "log_text",
    "module_argv",
    "open_ssh_master",
    "remote_command",
    "run_remote",
    "ssh_argv",
    "sweep_remote",
    "unlinked_log",
]

REMOTE_PATH = "/usr/local/bin:/usr/bin:/bin"
CLIENT_ENV = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ", "SSH_AUTH_SOCK")
"""The ssh client's own environment: enough to find its config and (locally) an agent; the
agent is never forwarded (``ForwardAgent=no``) and nothing is sent (``SendEnv`` is cleared)."""
NOISE_QUOTE_BYTES = 120


def ssh_argv(host: HostConfig, *, control_path: str | None = None) -> list[str]:
    """The ssh client's options for ``host`` (the destination and command follow)."""
    argv = [
        "ssh",
        "-T",
        "-o", "BatchMode=yes",
        "-o", "StrictHostKeyChecking=yes",
        "-o", f"ServerAliveInterval={host.keepalive_s}",
        "-o", "ServerAliveCountMax=3",
        "-o", f"ConnectTimeout={host.connect_timeout_s}",
        "-o", "ForwardAgent=no",
        "-o", "ForwardX11=no",
        "-o", "ClearAllForwardings=yes",
        "-o", "SendEnv=-*",
        "-o", "RequestTTY=no",
        "-o", "LogLevel=ERROR",
        "-p", str(host.port),
    ]  # fmt: skip
    if host.known_hosts:
        argv += ["-o", f"UserKnownHostsFile={host.known_hosts}"]
    if host.identity:
        argv += ["-o", "IdentitiesOnly=yes", "-i", host.identity]
    if control_path:  # a master air owns (open_ssh_master): never become one
        argv += ["-o", "ControlMaster=no", "-o", f"ControlPath={control_path}"]
    return argv


@asynccontextmanager
async def open_ssh_master(host: HostConfig, *, timeout_s: float = 30.0) -> AsyncIterator[str]:
    """A ControlMaster connection to ``host`` owned by air: yields its control path (for
    ``SshLauncher(host, control_path=...)``), and at the end asks it to exit and kills it.

    Raises:
        OSError: the master did not come up within ``timeout_s``.
    """
    where = tempfile.mkdtemp(prefix="air-cm-")
    path = os.path.join(where, "master")
    base = ssh_argv(host)
    master = await trio.lowlevel.open_process(
        [*base, "-M", "-N", "-o", f"ControlPath={path}", "-o", "ControlPersist=no", "--",
         host.destination()],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env=client_environment(),
    )  # fmt: skip
    check = [*base, "-o", f"ControlPath={path}", "-O", "check", "--", host.destination()]
    try:
        with trio.move_on_after(timeout_s) as waited:
            while master.returncode is None:
                done = await trio.run_process(
                    check, capture_stdout=True, capture_stderr=True, check=False
                )
                if done.returncode == 0:
                    break
                await trio.sleep(0.05)
        if waited.cancelled_caught or master.returncode is not None:
            raise OSError(f"the ssh master connection to {host.name} did not come up")
        yield path
    finally:
        with trio.move_on_after(5, shield=True):  # shielded: the master must not outlive air
            exit_argv = [*base, "-o", f"ControlPath={path}", "-O", "exit", "--", host.destination()]
            await trio.run_process(exit_argv, capture_stdout=True, capture_stderr=True, check=False)
        if master.returncode is None:
            master.kill()
        with trio.move_on_after(5, shield=True):
            await master.wait()
        shutil.rmtree(where, ignore_errors=True)


def remote_command(
    host: HostConfig,
    marker: str,
    command: Sequence[str],
    env: dict[str, str],
    *,
    lease_ttl_s: float = 0.0,
    cwd: str | None = None,
) -> str:
    """The shell line the remote runs: ``cd`` into the work directory (or ``cwd``: a task's
    remote worktree), then ``exec env -i`` with only ``HOME``, ``USER``, ``PATH``, the locale,
    the run marker and ``env``, running the guard around ``command``."""
    variables = {
        "PATH": REMOTE_PATH,
        "LANG": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
        **env,
        MARKER_ENV: marker,
    }
    assigns = " ".join(f"{k}={shlex.quote(v)}" for k, v in variables.items())
    lease = ["--lease", str(lease_ttl_s)] if lease_ttl_s > 0 else []
    guard = [host.python, "-P", "-m", "air.remote.guard", "run", *lease, "--", *command]
    workdir = shlex.quote(host.workdir)
    where = shlex.quote(cwd) if cwd else workdir
    return (
        f"mkdir -p -- {workdir} && cd -- {where} && "
        f'exec env -i HOME="$HOME" USER="$USER" LOGNAME="$USER" {assigns} '
        + " ".join(shlex.quote(a) for a in guard)
    )


def classify_ssh_failure(host: HostConfig, stderr: str) -> tuple[str, str]:
    """The ssh client's failure (exit 255) as what went wrong and what to do."""
    text = stderr.strip().splitlines()[-1] if stderr.strip() else "no message"
    dest = f"{host.destination()} port {host.port}"
    if "Host key verification failed" in stderr or "REMOTE HOST IDENTIFICATION" in stderr:
        return (
            f"the host key of {dest} is not in {host.known_hosts or '~/.ssh/known_hosts'}: {text}",
            "Check the host's key fingerprint out of band, then add it to that known_hosts file "
            "(air never accepts an unknown key).",
        )
    if "Permission denied" in stderr:
        return (
            f"{dest} refused the login: {text}",
            f"Authorize the public key of {host.identity or 'your ssh identity'} for "
            f"{host.user or 'the user'} there (~/.ssh/authorized_keys).",
        )
    return (
        f"cannot connect to {dest}: {text}",
        "Check that the host is up, sshd listens on that port, and `host`/`port` in "
        f"{host.source} are right.",
    )


def forged_identity(host: HostConfig, line: bytes) -> tuple[str, str]:
    """A guard's first line that ``parse_identity`` refused, as what went wrong and what to do."""
    quoted = line.decode("utf-8", "replace")
    return (
        f"the guard on {host.name} named itself in a way air's guard never does: {quoted!r}",
        f"Reinstall air for {host.python} on {host.name} and check the host with "
        f"`air doctor --host {host.name}`.",
    )


def client_environment() -> dict[str, str]:
    """The environment of the local ssh client (an allowlist of ``os.environ``)."""
    return {k: os.environ[k] for k in CLIENT_ENV if k in os.environ}


def _remote_worker(host: HostConfig, command: Sequence[str] | None) -> list[str]:
    """The worker command on the remote interpreter: the local ``sys.executable`` (the standard
    worker, or a test's worker module) becomes the host's ``python``."""
    argv = list(command or worker_command())
    if argv and argv[0] == sys.executable:
        argv[0] = host.python
    return argv


class NoiseGuard(trio.abc.ReceiveStream):
    """The worker's stdout as the parent reads it, checked until the guard's identity line
    (kept as ``SshHandle.remote``). Anything else first: the remote shell printed something
    before the worker started, which becomes one ``protocol.error`` quoting the first bytes.
    End of stream before any byte with the ssh client's exit 255: the connection failed, which
    becomes one ``protocol.error`` with ssh's own message. Neither is retried (IMPL-REMOTE-3)."""

    def __init__(
        self,
        stream: trio.abc.ReceiveStream,
        handle: SshHandle,
        agent_id: str,
        placed: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.stream = stream
        self.handle = handle
        self.agent_id = agent_id
        self.placed = placed
        self.checked = False

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        if self.checked:
            return await self.stream.receive_some(max_bytes)
        buf = bytearray()
        while True:
            data = await self.stream.receive_some(max_bytes)
            if not data:
                self.checked = True
                return await self._ended() if not buf else self._noise(buf)
            buf += data
            if buf.startswith(b"{"):  # a guard that names nobody: the worker's own first line
                self.checked = True
                return buf
            if not IDENTITY_PREFIX.startswith(bytes(buf[: len(IDENTITY_PREFIX)])):
                self.checked = True
                return self._noise(buf)
            line, nl, rest = bytes(buf).partition(b"\n")
            if not nl:
                if len(buf) > 4096:
                    self.checked = True
                    return self._noise(buf)
                continue
            self.checked = True
            self.handle.remote = parse_identity(line)
            if self.handle.remote is None:
                return self._forged(line)
            if self.placed is not None:  # the run record: recovery sweeps the marker there
                self.placed(self.handle.host.placement(self.handle.remote))
            return rest or await self.stream.receive_some(max_bytes)

    async def _ended(self) -> bytes:
        """End of stream before the worker's first line: the ssh client's own exit 255 is one
        error with its message; the worker's exit is left to supervision."""
        with trio.move_on_after(10):
            await self.handle.wait()
        if self.handle.returncode != SSH_FAILED:
            return b""
        problem, action = classify_ssh_failure(self.handle.host, self.handle.ssh_error)
        return self._error(f"ssh exit 255, not the worker's: {problem}", action)

    def _noise(self, data: bytes | bytearray) -> bytes:
        host = self.handle.host
        quoted = bytes(data[:NOISE_QUOTE_BYTES]).decode("utf-8", "replace")
        return self._error(
            f"the remote shell on {host.name} wrote to stdout before the worker started: "
            f"{quoted!r}",
            f"Make the login scripts of {host.destination()} (~/.bashrc, ~/.profile) print "
            f"nothing when stdin is not a terminal; check with `air doctor --host {host.name}`.",
        )

    def _forged(self, line: bytes) -> bytes:
        return self._error(*forged_identity(self.handle.host, line[:NOISE_QUOTE_BYTES]))

    def _error(self, message: str, user_action: str) -> bytes:
        error = make_air_error(
            kind=ErrorKind.ENVIRONMENT_ERROR,
            message=message,
            retryability="never",
            user_action=user_action,
        )
        encoder = LineEncoder(session_id="", agent_id=self.agent_id)
        return encoder.line("protocol.error", {"error": error.model_dump(mode="json")})

    async def aclose(self) -> None:
        await self.stream.aclose()


class SshHandle:
    """The local ssh client of one remote worker."""

    def __init__(self, process: trio.Process, host: HostConfig, marker: str, log: int) -> None:
        self.process = process
        self.host = host
        self.marker = marker
        self.log = log
        """The ssh client's own messages (``-E``), apart from the worker's stderr: a descriptor
        of an unlinked file (``unlinked_log``), -1 once read."""
        self.ssh_error = ""
        self.identity: ProcessIdentity = read_identity(process.pid)
        self.swept: list[int] | None = None
        """PIDs the last remote sweep signalled (``None``: none ran or it failed)."""
        self.sweep_failed = False
        """The sweep after a kill could not reach the host: the next launch sweeps first."""
        self.remote: dict[str, Any] | None = None
        """The remote guard's identity once its first line came: host, boot_id, pid,
        start_time, python, air (``air.remote.guard``)."""

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    async def kill_tree(self, grace_s: float) -> bool:
        """End the ssh client (the connection closes, the remote guard sweeps the worker's
        tree), then sweep the marker over a fresh connection: what a dropped or black-holed
        link left behind."""
        killed = await kill_tree(self.identity, marker=None, grace_s=grace_s)
        self.swept = await sweep_remote(self.host, [self.marker], timeout_s=grace_s + 10)
        self.sweep_failed = self.swept is None
        return killed or bool(self.swept)

    async def wait(self) -> int:
        code = await self.process.wait()
        if self.log >= 0:
            self.ssh_error = log_text(self.log, 4096, tail=False)
            os.close(self.log)
            self.log = -1
        return code

    async def aclose(self) -> None:
        """Close the local client's pipes (the handle stays, for a later sweep by marker)."""
        await close_pipes(self.process)


def unlinked_log() -> int:
    """A read-write descriptor of a new local file that no name leads to: a client's stderr or
    log, which nothing outlives (a killed air leaves no file behind in the temporary directory).
    Another program opens it by ``/proc/AIR_PID/fd/N`` while air runs."""
    fd, path = tempfile.mkstemp(prefix="air-log-")
    os.unlink(path)
    return fd


def log_text(fd: int, limit: int, *, tail: bool) -> str:
    """The first (or, with ``tail``, the last) ``limit`` bytes of ``fd``'s file, as text."""
    try:
        start = max(0, os.fstat(fd).st_size - limit) if tail else 0
        return os.pread(fd, limit, start).decode("utf-8", "replace")
    except OSError:
        return ""


def module_argv(host: HostConfig, module: str, *args: str) -> list[str]:
    """The ssh client's argv running ``python -P -m MODULE ARGS`` on ``host`` over a fresh
    connection, with air's explicit environment only."""
    line = " ".join(shlex.quote(a) for a in [host.python, "-P", "-m", module, *args])
    remote = f'exec env -i HOME="$HOME" PATH={REMOTE_PATH} LANG=C.UTF-8 {line}'
    return [*ssh_argv(host), "--", host.destination(), remote]


async def run_remote(
    host: HostConfig, module: str, *args: str, timeout_s: float = 60.0
) -> subprocess.CompletedProcess[bytes] | None:
    """``module_argv`` run, its output bounded (``air.remote.bounded``); ``None`` when it did
    not end within ``timeout_s``."""
    argv = module_argv(host, module, *args)
    return await run_bounded(argv, env=client_environment(), timeout_s=timeout_s)


async def sweep_remote(
    host: HostConfig, markers: list[str], *, timeout_s: float = 15.0
) -> list[int] | None:
    """Kill every process of ``markers`` on ``host`` over a fresh connection; the PIDs
    signalled, or ``None`` when the host could not be reached in ``timeout_s``."""
    done = await run_remote(host, "air.remote.guard", "sweep", *markers, timeout_s=timeout_s)
    if done is None or done.returncode != 0:
        return None
    try:
        pids = json.loads(done.stdout.decode().strip().splitlines()[-1])["signalled"]
    except (ValueError, KeyError, IndexError, TypeError, RecursionError):
        return None
    if not isinstance(pids, list) or not all(type(p) is int and 0 < p < 1 << 22 for p in pids):
        return None  # not what air's guard reports: as if the host could not be reached
    return pids


class LeaseSender(trio.abc.SendStream):
    """The worker's stdin as the parent writes it, shared with the lease renewal: an empty line
    (which the worker's line decoder skips) whenever ``every_s`` passed without a write."""

    def __init__(self, stream: trio.abc.SendStream, every_s: float) -> None:
        self.stream = stream
        self.every_s = every_s
        self.lock = trio.Lock()
        self.last = trio.current_time()
        self.started = False
        """Only after the first line (``agent.start``): the worker's first read is that line."""

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        async with self.lock:
            await self.stream.send_all(data)
            self.last = trio.current_time()
            self.started = True

    async def wait_send_all_might_not_block(self) -> None:
        await self.stream.wait_send_all_might_not_block()

    async def aclose(self) -> None:
        await self.stream.aclose()

    async def renew(self, handle: SshHandle) -> None:
        """Keep the lease while the ssh client lives and the pipe is open."""
        try:
            while handle.returncode is None:
                await trio.sleep_until(self.last + self.every_s)
                if self.started and trio.current_time() >= self.last + self.every_s:
                    await self.send_all(b"\n")
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return


class SshLauncher:
    """Workers on ``host`` over ``ssh -T`` (IMPL-REMOTE-3); ``control_path``: through a master
    connection air opened (``open_ssh_master``); ``nursery``: the parent renews each worker's
    lease there (``host.lease_ttl_s``), without one the remote tree ends only with the link."""

    def __init__(
        self,
        host: HostConfig,
        control_path: str | None = None,
        nursery: trio.Nursery | None = None,
        cwd: str | None = None,
    ) -> None:
        self.host = host
        self.cwd = cwd
        """The workers' directory on the host (a task's remote worktree; default the host's
        work directory). Never the launch spec's: that is a path on this machine."""
        self.control_path = control_path
        self.nursery = nursery
        self.handles: list[SshHandle] = []
        """Every worker this launcher started (their markers are what ``sweep`` kills)."""

    async def sweep(self, *, timeout_s: float = 30.0) -> list[int] | None:
        """Kill every process left on the host by a worker this launcher started, over a fresh
        connection (at session end; a dropped link and a stopped guard leave such trees).

        Returns:
            The PIDs signalled, or ``None`` when the host could not be reached.
        """
        markers = [h.marker for h in self.handles]
        if not markers:
            return []
        return await sweep_remote(self.host, markers, timeout_s=timeout_s)

    async def _sweep_unswept(self) -> None:
        """Before a launch: a tree whose sweep failed is swept first, so a task never has two
        live workers on the host (the relaunch waits for the sweep or fails)."""
        unswept = [h for h in self.handles if h.sweep_failed]
        if not unswept:
            return
        swept = await sweep_remote(self.host, [h.marker for h in unswept])
        if swept is None:
            raise OSError(f"cannot sweep earlier workers on {self.host.name} before a relaunch")
        for handle in unswept:
            handle.swept, handle.sweep_failed = swept, False

    def argv(self, spec: LaunchSpec) -> list[str]:
        """The whole local command line of one launch."""
        env = dict(spec.env or {})
        command = _remote_worker(self.host, spec.command)
        ttl = self.host.lease_ttl_s if self.nursery is not None else 0.0
        line = remote_command(self.host, spec.marker, command, env, lease_ttl_s=ttl, cwd=self.cwd)
        base = ssh_argv(self.host, control_path=self.control_path)
        return [*base, "--", self.host.destination(), line]

    async def launch(self, spec: LaunchSpec) -> Launched:
        await self._sweep_unswept()
        argv = self.argv(spec)
        log = unlinked_log()
        try:
            process = await trio.lowlevel.open_process(
                # ssh closes every inherited descriptor past stderr at its start: it opens
                # air's own, which lives as long as air does
                [argv[0], "-E", f"/proc/{os.getpid()}/fd/{log}", *argv[1:]],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                env=client_environment(),
            )
        except BaseException:
            os.close(log)
            raise
        assert process.stdin is not None
        assert process.stdout is not None
        handle = SshHandle(process, self.host, spec.marker, log)
        self.handles.append(handle)
        send: trio.abc.SendStream = process.stdin
        if self.nursery is not None:
            sender = LeaseSender(process.stdin, self.host.lease_ttl_s / 3)
            self.nursery.start_soon(sender.renew, handle)
            send = sender
        return Launched(
            send=send,
            receive=NoiseGuard(process.stdout, handle, spec.agent_id, spec.placed),
            stderr=process.stderr,
            handle=handle,
            marker=spec.marker,
        )
