"""What a command granted the network may not reach: the cloud's metadata services
(IMPL-SBX-9), and the helper that blocks them in its sandbox's network namespace.

Owns ``BLOCKED`` and, run as a script (``python -I -S`` this file, standard library only;
``air.tools.sandbox_net`` starts it), the helper. slirp4netns has no destination filter: a
granted command reached 169.254.0.0/16, where a cloud VM's instance metadata service (AWS,
GCP, Azure, ...) hands out the machine's cloud credentials, and Alibaba's 100.100.100.200.
The helper reads the sandbox's PID on stdin, joins the user namespace that owns the sandbox's
network namespace (``NS_GET_USERNS``: air's user owns it, or air is root) and that network
namespace, adds a ``prohibit`` route for each of ``BLOCKED`` (connect() there fails at once:
EACCES), then writes one byte on stdout; an error ends it with a message on stderr and no
byte. The command cannot remove a route: it runs in a nested user namespace with no
capability over its network namespace. IPv6 needs none: slirp4netns runs without
``--enable-ipv6``, so the namespace has no IPv6 route out.
"""

from __future__ import annotations

import _socket  # not ``socket``: its enum and selectors more than double the start-up
import ctypes
import fcntl
import os
import struct
import sys

__all__ = ["BLOCKED", "NS_GET_USERNS"]

BLOCKED = ("169.254.0.0/16", "100.100.100.200/32")
"""IPv4 link-local (every metadata service there) and Alibaba Cloud's metadata address."""

NS_GET_USERNS = 0xB701
"""ioctl on a namespace fd: an fd of the user namespace that owns it (linux/nsfs.h)."""
_CLONE_NEWUSER, _CLONE_NEWNET = 0x10000000, 0x40000000
# rtnetlink (linux/netlink.h, linux/rtnetlink.h)
_RTM_NEWROUTE, _NLMSG_ERROR = 24, 2
_NLM_F_REQUEST, _NLM_F_ACK, _NLM_F_EXCL, _NLM_F_CREATE = 0x1, 0x4, 0x200, 0x400
_RT_TABLE_MAIN, _RTPROT_STATIC, _RT_SCOPE_UNIVERSE, _RTN_PROHIBIT, _RTA_DST = 254, 4, 0, 8, 1


def _join(pid: int) -> None:
    """Join the network namespace of ``pid`` and the user namespace that owns it."""
    libc = ctypes.CDLL(None, use_errno=True)
    net = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    user = fcntl.ioctl(net, NS_GET_USERNS)
    for fd, kind in ((user, _CLONE_NEWUSER), (net, _CLONE_NEWNET)):
        if libc.setns(fd, kind) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"setns: {os.strerror(errno)}")
        os.close(fd)


def _prohibit(nl: _socket.socket, seq: int, network: str) -> None:
    """Add a ``prohibit`` route to ``network`` (``a.b.c.d/len``) in the main table."""
    address, length = network.split("/")
    route = struct.pack(
        "=BBBBBBBBI",
        _socket.AF_INET,
        int(length),
        0,
        0,
        _RT_TABLE_MAIN,
        _RTPROT_STATIC,
        _RT_SCOPE_UNIVERSE,
        _RTN_PROHIBIT,
        0,
    )
    body = route + struct.pack("=HH", 8, _RTA_DST) + _socket.inet_aton(address)
    flags = _NLM_F_REQUEST | _NLM_F_ACK | _NLM_F_EXCL | _NLM_F_CREATE
    nl.send(struct.pack("=IHHII", 16 + len(body), _RTM_NEWROUTE, flags, seq, 0) + body)
    reply = nl.recv(4096)
    kind, error = struct.unpack_from("=4xH10xi", reply)
    if kind != _NLMSG_ERROR:
        raise OSError(f"RTM_NEWROUTE {network}: netlink answered type {kind}")
    if error:
        raise OSError(-error, f"RTM_NEWROUTE {network}: {os.strerror(-error)}")


def main(networks: list[str]) -> int:
    line = sys.stdin.readline()
    if not line:
        return 0  # air gave up before the sandbox's setup was over
    try:
        _join(int(line))
        nl = _socket.socket(_socket.AF_NETLINK, _socket.SOCK_RAW, _socket.NETLINK_ROUTE)
        for seq, network in enumerate(networks, 1):
            _prohibit(nl, seq, network)
    except (OSError, ValueError, struct.error) as exc:
        print(f"the routes {' '.join(networks)} could not be blocked: {exc}", file=sys.stderr)
        return 1
    os.write(1, b"1")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
