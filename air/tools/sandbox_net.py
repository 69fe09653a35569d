"""The network of a sandboxed command granted it: its own namespace, joined to the world by
slirp4netns (IMPL-SBX-9).

Owns ``NetworkLink``: the pipes between air and one such sandbox, and the ``slirp4netns`` that
gives the sandbox's own, otherwise empty, network namespace a tap device routed through
sockets air's user opens on the host. The command reaches what any program of that user
reaches through the host's interfaces, but not the host's 127.0.0.1 (``--disable-host-loopback``)
nor its abstract Unix sockets (they belong to a network namespace). ``missing_slirp4netns`` is
the error when it is not installed: a granted command is then refused, never given the host's
network.

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
import time

from air.contracts.error import AirException, ErrorKind
from air.search_path import installed

__all__ = ["SANDBOX_RESOLV_CONF", "NetworkLink", "missing_slirp4netns"]

SANDBOX_RESOLV_CONF = b"nameserver 10.0.2.3\n"
"""slirp4netns's DNS forwarder, which asks the host's own resolvers (a host resolver on
127.0.0.53 is out of the sandbox's reach)."""

_NS_GET_USERNS = 0xB701
"""ioctl on a namespace fd: an fd of the user namespace that owns it (linux/nsfs.h)."""
_ending: list[subprocess.Popen[bytes]] = []
"""slirp4netns processes killed, not yet reaped (a zombie at most; never waited for)."""
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
    """The network of one granted command: the pipes its sandbox shares with air and, once
    ``connect`` ran, its slirp4netns.

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
        """Once bwrap's setup is over, start slirp4netns in the sandbox's namespace, then let
        the command go. A sandbox that ended before its command (bwrap's own error) needs
        nothing: it returns at once.

        Raises:
            AirException: ``environment_error`` when slirp4netns fails or either takes longer
                than ``_CONNECT_S``; the command never starts (its ``go`` reads EOF).
        """
        deadline = time.monotonic() + _CONNECT_S
        if not _read_byte(self._hello_r, deadline):
            return
        info = json.loads(_read_all(self._info_r))
        net = os.open(f"/proc/{int(info['child-pid'])}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        ready_r, ready_w = os.pipe()
        errors = os.memfd_create("air-slirp4netns", os.MFD_CLOEXEC)
        try:
            user = fcntl.ioctl(net, _NS_GET_USERNS)
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
                os.lseek(errors, 0, os.SEEK_SET)
                said = os.read(errors, 4096).decode("utf-8", "replace").strip()
                raise _failed(f"slirp4netns ended before the network was up: {said[-500:]}")
        finally:
            for fd in (net, ready_r, ready_w, errors):
                if fd != -1:
                    os.close(fd)
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
            *self.sandbox_fds,
        ):
            if fd != -1:
                os.close(fd)
        self._info_r = self._hello_r = self._go_w = self._exit_r = self._exit_w = -1
        self.info_w = self.hello_w = self.go_r = -1
        if self._slirp is not None:
            # its exit tears its tap down, which takes the kernel ~20-30 ms: reaped later
            self._slirp.kill()
            _ending.append(self._slirp)
            self._slirp = None
        _ending[:] = [slirp for slirp in _ending if slirp.poll() is None]


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
