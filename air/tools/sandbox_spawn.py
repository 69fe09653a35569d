"""Starting a sandboxed command: what it holds on the host, the spawn, the running process.

Owns ``CommandSpace`` (one command's limits, pids cgroup, the credential files it may not see,
for a task without a write area the read-only view of ``air.tools.task_view``, for cpp.test
its build dir behind a scratch overlay, and for a command granted the network its
``air.tools.sandbox_net.NetworkLink``), ``open_sandboxed``
(the synchronous spawn: the generated files and the seccomp filter in memfds, the pinned git
metadata as O_PATH fds, and this process's life pipe: ``life_fd``; a granted command's network
connected before it starts) and ``SandboxProcess`` with
``start_sandboxed`` (the running command with its output streams, spawned on the thread that
runs the Trio loop so that ``--die-with-parent`` lasts as long as air and not as long as an idle
worker thread; IMPL-SBX-2).
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping
from typing import IO

import trio

from air.tools.build_dirs import pin_build_dirs
from air.tools.limits import PidsCgroup, ResourceLimits
from air.tools.sandbox import SandboxRunner, pin_protected
from air.tools.sandbox_net import NetworkLink
from air.tools.seccomp import seccomp_program
from air.tools.task_view import check_view_available, view_argv

__all__ = ["CommandSpace", "SandboxProcess", "life_fd", "open_sandboxed", "start_sandboxed"]

_life: tuple[int, int] | None = None


def life_fd() -> int:
    """The read end of this process's life pipe, whose write end no other process ever holds
    (both ends are non-inheritable; only the read end is passed, to each sandbox), so it reads
    EOF exactly when this process is gone. A sandbox checks it once bwrap armed its
    parent-death signal (``SandboxRunner.argv``): a runtime killed between forking bwrap and
    bwrap's own ``prctl`` (a few ms; the remote executor on a dropped link) no longer leaves
    the command running on, unmarked, until recovery (IMPL-SBX-2)."""
    global _life
    if _life is None:
        _life = os.pipe()
    return _life[0]


class CommandSpace:
    """What one sandboxed command holds on the host, released by ``close`` once it has ended.

    Args:
        limits: the command's resource limits (IMPL-SBX-8).
        view_dir: the task has no write area: the command sees the workspace through an overlay
            whose writes land in this ``task_view_dir`` (IMPL-SBX-3), so builds work, later
            commands of the task see their outputs, and nothing reaches the project.

    Raises:
        AirException: ``environment_error`` when the read-only view needs ``unshare`` or
            ``mount`` (util-linux) and they are missing.
    """

    def __init__(self, limits: ResourceLimits, *, view_dir: str | None = None) -> None:
        self.limits = limits
        self.view_dir = view_dir
        self.scratch: tuple[str, str] | None = None
        """(``scratch_dir``, a directory in the workspace): the command sees that directory under
        an overlay whose writes land in the scratch dir, never in it (``cover``)."""
        self.hidden: tuple[str, ...] = ()
        """The credential files and directories the command may not see (IMPL-SBX-3)."""
        self.network: NetworkLink | None = None
        """A granted command's network (``open_sandboxed`` makes it; IMPL-SBX-9)."""
        self.guard_build_dirs = False
        """Not a cpp tool's command: the cpp tools' build dirs are read-only (IMPL-CPP-5)."""
        self._unshare: str | None = None
        if view_dir is not None:
            self._unshare = check_view_available()
        self.cgroup = PidsCgroup.create(limits.processes)

    @property
    def read_only(self) -> bool:
        return self.view_dir is not None

    def cover(self, scratch: str, target: str) -> None:
        """Run the command with ``target`` behind an overlay whose writes land in ``scratch``
        (a ``scratch_dir``): cpp.test's tests never change the build dir (IMPL-CPP-5).

        Raises:
            AirException: ``environment_error`` when an overlay cannot be mounted here.
        """
        self._unshare = check_view_available()
        self.scratch = (scratch, target)

    def wrap(self, argv: list[str], workspace: str) -> list[str]:
        """``argv`` (a bwrap command line) behind the view's mounts and the cgroup's join."""
        if self._unshare is not None and self.view_dir is not None:
            argv = view_argv(self._unshare, self.view_dir, workspace, argv)
        elif self._unshare is not None and self.scratch is not None:
            argv = view_argv(self._unshare, *self.scratch, argv)
        if self.cgroup is not None:
            argv = self.cgroup.join_argv(argv)
        return argv

    def close(self) -> None:
        """End the command's slirp4netns; remove the cgroup, killing what is left in it."""
        if self.network is not None:
            self.network.close()
            self.network = None
        if self.cgroup is not None:
            self.cgroup.close()
            self.cgroup = None

    def __enter__(self) -> CommandSpace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_sandboxed(
    runner: SandboxRunner,
    command: str,
    *,
    workspace: str,
    cwd: str,
    network: bool,
    env: Mapping[str, str],
    stdout: int | IO[bytes] | None,
    stderr: int | IO[bytes] | None,
    stdin: int | IO[bytes] | None = subprocess.DEVNULL,
    space: CommandSpace | None = None,
) -> subprocess.Popen[bytes]:
    """Spawn ``command`` in the sandbox on the CALLING thread (synchronous, a few ms).

    ``space`` holds the command's limits, pids cgroup and read-only view (None: the default
    limits' rlimits only, the workspace writable; the caller closes it after the command), and
    with ``network`` (which needs a ``space``) the command's ``NetworkLink``: this call returns
    once slirp4netns has connected the sandbox's namespace and the command runs.
    bwrap's ``--die-with-parent`` (PR_SET_PDEATHSIG) fires when the thread that forked bwrap
    exits, so the caller's thread must live as long as the command should (IMPL-SBX-2).
    The generated files and the seccomp filter travel in memfds, the protected workspace
    entries as O_PATH fds (``pin_protected``); all are closed here once bwrap has them.

    Raises:
        AirException: ``environment_error`` when bubblewrap is missing, or with ``network``
            when slirp4netns is missing or cannot connect the sandbox (the command never ran).
        OSError: when bwrap cannot be started.
    """
    opened: list[int] = []
    link: NetworkLink | None = None
    if network:
        if space is None:
            raise ValueError("a command granted the network needs a CommandSpace")
        link = space.network = NetworkLink()

    def memfd(content: bytes) -> int:
        fd = os.memfd_create("air-sandbox")
        opened.append(fd)
        os.write(fd, content)
        os.lseek(fd, 0, os.SEEK_SET)
        return fd

    try:
        pinned = pin_protected(os.path.realpath(workspace))
        opened += pinned.values()
        guarded = space is not None and space.guard_build_dirs and not space.read_only
        build_dirs = pin_build_dirs(workspace) if guarded else []
        opened += [fd for _path, fd, _ro in build_dirs]
        files = runner.generated_files(network)
        data_fds = {dest: memfd(content) for dest, content in files.items()}
        seccomp_fd = memfd(seccomp_program())
        argv = runner.argv(
            command,
            workspace=workspace,
            cwd=cwd,
            network=network,
            pinned=pinned,
            data_fds=data_fds,
            seccomp_fd=seccomp_fd,
            limits=space.limits if space is not None else None,
            read_only=space is not None and space.read_only,
            hidden=space.hidden if space is not None else (),
            life_fd=life_fd(),
            network_fds=link.sandbox_fds if link is not None else None,
            build_dirs=build_dirs,
        )
        if space is not None:
            argv = space.wrap(argv, os.path.realpath(workspace))
        popen = subprocess.Popen(
            argv,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            env=dict(env),
            start_new_session=True,
            pass_fds=(*opened, life_fd(), *(link.sandbox_fds if link is not None else ())),
        )
    finally:
        for fd in opened:
            os.close(fd)
    if link is not None:
        link.spawned()
        try:
            link.connect()
        except BaseException:
            os.killpg(popen.pid, signal.SIGKILL)
            popen.wait()
            raise
    return popen


class SandboxProcess:
    """A running sandboxed command: its pid, output streams and an async ``wait``."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        stdout: trio.lowlevel.FdStream,
        stderr: trio.lowlevel.FdStream,
    ) -> None:
        self._popen = popen
        self.stdout = stdout
        self.stderr = stderr
        self._pidfd: int | None
        try:
            self._pidfd = os.pidfd_open(popen.pid)
        except (OSError, AttributeError):  # pragma: no cover - kernels older than 5.3
            self._pidfd = None

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        return self._popen.returncode

    async def wait(self) -> int:
        """Wait for bwrap to exit (pidfd readable), reap it and return its exit code."""
        while self._popen.poll() is None:
            if self._pidfd is not None:
                await trio.lowlevel.wait_readable(self._pidfd)
            else:  # pragma: no cover - no pidfd: poll
                await trio.sleep(0.05)
        return self._popen.returncode

    def close(self) -> None:
        """Close the output streams and the pidfd (synchronous: safe in a cancelled finally)."""
        for stream in (self.stdout, self.stderr):
            stream.close()
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None


def start_sandboxed(
    runner: SandboxRunner,
    command: str,
    *,
    workspace: str,
    cwd: str,
    network: bool,
    env: Mapping[str, str],
    space: CommandSpace | None = None,
) -> SandboxProcess:
    """Start ``command`` from the thread running the Trio loop, with piped stdout/stderr.

    Synchronous on purpose: spawning in a Trio worker thread would tie ``--die-with-parent``
    to that thread, which Trio ends after 10 s idle, killing the command (issue 9, item 3).
    The loop's thread lives as long as air, so the command lives until its own timeout and
    still dies with air.

    Raises:
        AirException: ``environment_error`` when bubblewrap is missing.
        OSError: when bwrap cannot be started.
    """
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        popen = open_sandboxed(
            runner,
            command,
            workspace=workspace,
            cwd=cwd,
            network=network,
            env=env,
            stdout=out_w,
            stderr=err_w,
            space=space,
        )
    except BaseException:
        os.close(out_r)
        os.close(err_r)
        raise
    finally:
        os.close(out_w)
        os.close(err_w)
    return SandboxProcess(popen, trio.lowlevel.FdStream(out_r), trio.lowlevel.FdStream(err_r))
