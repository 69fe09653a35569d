"""The network of a sandboxed command granted it: its own namespace, joined to the world by
slirp4netns (IMPL-SBX-9).

Owns ``NetworkLink``: the pipes between air and one such sandbox, and the ``slirp4netns`` that
gives the sandbox's own, otherwise empty, network namespace a tap device routed through
sockets air's user opens on the host. The command reaches what any program of that user
reaches through the host's interfaces, but not the host's 127.0.0.1 (``--disable-host-loopback``)
nor its abstract Unix sockets (they belong to a network namespace), nor the cloud's metadata
services (``air.tools.sandbox_net_block``: a helper, started with the link so that its
interpreter's start-up overlaps bwrap's, blocks them before the command goes).
``missing_slirp4netns`` is the error when it is not installed: a granted command is then
refused, never given the host's network.

The order matters. bwrap sets up the namespace's loopback itself, and fails if slirp4netns
brought ``lo`` up first, so slirp4netns starts only once the sandbox has said, on ``hello``,
that bwrap's setup is over (its command's script writes it); the command then waits on ``go``
until slirp4netns has configured the tap. slirp4netns joins the namespace by the fds of the
network namespace and of the user namespace that owns it (``NS_GET_USERNS``): bwrap's init
has by then moved on to a nested user namespace with no power over the network one.
slirp4netns ends when its ``--exit-fd`` reads EOF: the write end is air's alone, closed by
``close`` after the command, or by the kernel when air dies.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import subprocess
import sys
import time

from air.contracts.error import AirException, ErrorKind
from air.search_path import installed
from air.tools import sandbox_net_block

__all__ = ["SANDBOX_RESOLV_CONF", "NetworkLink", "missing_slirp4netns"]

SANDBOX_RESOLV_CONF = b"nameserver 10.0.2.3\n"
"""slirp4netns's DNS forwarder, which asks the host's own resolvers (a host resolver on
127.0.0.53 is out of the sandbox's reach)."""

_ending: list[subprocess.Popen[bytes]] = []
"""slirp4netns and helper processes killed, not yet reaped (a zombie at most; never waited
for)."""
_CONNECT_S = 10.0
"""How long bwrap's setup plus slirp4netns's may take before the command is refused."""


def missing_slirp4netns() -> AirException:
    return AirException.of(
        kind=ErrorKind.ENVIRONMENT_ERROR,
        message=(
            "slirp4netns is not installed: a command granted the network runs in a network "
            "namespace of its own that slirp4netns connects, never in the host's"
        ),
        user_action="Install slirp4netns (apt-get install slirp4netns, dnf install slirp4netns).",
    )


class NetworkLink:
    """The network of one granted command: the pipes its sandbox shares with air, the helper
    that blocks the metadata services in it and, once ``connect`` ran, its slirp4netns.

    Raises:
        AirException: ``environment_error`` when slirp4netns is not installed.
    """

    def __init__(self) -> None:
        slirp = installed("slirp4netns")
        if slirp is None:
            raise missing_slirp4netns()
        self._slirp_path = slirp
        self._info_r, self.info_w = os.pipe()
        self._hello_r, self.hello_w = os.pipe()
        self.go_r, self._go_w = os.pipe()
        self._exit_r, self._exit_w = os.pipe()
        self._slirp: subprocess.Popen[bytes] | None = None
        self._block_errors = os.memfd_create("air-net-block", os.MFD_CLOEXEC)
        pid_r, self._pid_w = os.pipe()
        self._blocked_r, blocked_w = os.pipe()
        try:
            self._block = subprocess.Popen(
                [
                    sys.executable,
                    "-I",
                    "-S",
                    sandbox_net_block.__file__,
                    *sandbox_net_block.BLOCKED,
                ],
                stdin=pid_r,
                stdout=blocked_w,
                stderr=self._block_errors,
                start_new_session=True,
            )
        finally:
            os.close(pid_r)
            os.close(blocked_w)

    @property
    def sandbox_fds(self) -> tuple[int, int, int]:
        """bwrap's ``--info-fd``, and the script's ``hello`` (write) and ``go`` (read) fds."""
        return (self.info_w, self.hello_w, self.go_r)

    def spawned(self) -> None:
        """bwrap holds its ends now: close air's copies, so bwrap's end reads as EOF."""
        for fd in self.sandbox_fds:
            os.close(fd)
        self.info_w = self.hello_w = self.go_r = -1

    def connect(self) -> None:
        """Once bwrap's setup is over, start slirp4netns in the sandbox's namespace and have
        the helper block the metadata services there, then let the command go. A sandbox that
        ended before its command (bwrap's own error) needs nothing: it returns at once.

        Raises:
            AirException: ``environment_error`` when slirp4netns or the helper fails or either
                takes longer than ``_CONNECT_S``; the command never starts (its ``go`` reads
                EOF).
        """
        deadline = time.monotonic() + _CONNECT_S
        if not _read_byte(self._hello_r, deadline):
            return
        info = json.loads(_read_all(self._info_r))
        pid = int(info["child-pid"])
        os.write(self._pid_w, b"%d\n" % pid)
        net = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        ready_r, ready_w = os.pipe()
        errors = os.memfd_create("air-slirp4netns", os.MFD_CLOEXEC)
        try:
            user = fcntl.ioctl(net, sandbox_net_block.NS_GET_USERNS)
            try:
                self._slirp = subprocess.Popen(
                    [
                        self._slirp_path,
                        "--configure",
                        "--mtu=65520",
                        "--disable-host-loopback",
                        *_sandboxing(),
                        f"--ready-fd={ready_w}",
                        f"--exit-fd={self._exit_r}",
                        "--netns-type=path",
                        f"--userns-path=/proc/self/fd/{user}",
                        f"/proc/self/fd/{net}",
                        "tap0",
                    ],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=errors,
                    pass_fds=(ready_w, self._exit_r, net, user),
                    start_new_session=True,
                )
            finally:
                os.close(user)
            os.close(ready_w)
            ready_w = -1
            if not _read_byte(ready_r, deadline):
                said = _said(errors)
                raise _failed(f"slirp4netns ended before the network was up: {said}")
        finally:
            for fd in (net, ready_r, ready_w, errors):
                if fd != -1:
                    os.close(fd)
        if not _read_byte(self._blocked_r, deadline):
            raise _failed(_said(self._block_errors))
        os.write(self._go_w, b"1")

    def close(self) -> None:
        """Close air's ends (its exit fd's EOF ends slirp4netns if air dies before this) and
        kill slirp4netns; reap those killed before that have ended."""
        for fd in (
            self._info_r,
            self._hello_r,
            self._go_w,
            self._exit_r,
            self._exit_w,
            self._pid_w,
            self._blocked_r,
            self._block_errors,
            *self.sandbox_fds,
        ):
            if fd != -1:
                os.close(fd)
        self._info_r = self._hello_r = self._go_w = self._exit_r = self._exit_w = -1
        self._pid_w = self._blocked_r = self._block_errors = -1
        self.info_w = self.hello_w = self.go_r = -1
        # the helper has ended, or reads EOF now; slirp4netns's exit tears its tap down, which
        # takes the kernel ~20-30 ms: both reaped later
        for ending in (self._slirp, self._block):
            if ending is not None and ending.poll() is None:
                ending.kill()
                _ending.append(ending)
        self._slirp = None
        _ending[:] = [process for process in _ending if process.poll() is None]


def _sandboxing() -> list[str]:
    """slirp4netns's own seccomp filter; as root also its sandbox (a mount namespace of its
    own, every capability but CAP_NET_BIND_SERVICE dropped). Not as another user: its sandbox
    then needs uid 0 mapped in the sandbox's user namespace, which bwrap never maps, and such a
    slirp4netns holds no privilege to drop."""
    return ["--enable-seccomp", *(["--enable-sandbox"] if os.geteuid() == 0 else [])]


def _failed(message: str) -> AirException:
    return AirException.of(
        kind=ErrorKind.ENVIRONMENT_ERROR,
        message=f"the command's network could not be set up: {message}",
        user_action="Check that slirp4netns runs here (air doctor), or run without the network.",
    )


def _said(errors: int) -> str:
    """The end of what a process wrote to ``errors`` (a memfd)."""
    os.lseek(errors, 0, os.SEEK_SET)
    return os.read(errors, 4096).decode("utf-8", "replace").strip()[-500:]


def _read_byte(fd: int, deadline: float) -> bool:
    """One byte from ``fd`` (True), or its EOF (False), before ``deadline``.

    Raises:
        AirException: ``environment_error`` at the deadline.
    """
    poll = select.poll()
    poll.register(fd, select.POLLIN)
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise _failed(f"nothing within {_CONNECT_S:g}s")
        if poll.poll(left * 1000):
            return os.read(fd, 1) != b""


def _read_all(fd: int) -> bytes:
    """What bwrap wrote on its info fd, which it has closed by the time the script runs."""
    chunks = []
    while chunk := os.read(fd, 4096):
        chunks.append(chunk)
    return b"".join(chunks)
