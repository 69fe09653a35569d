"""A command granted the network reaches the network, not the host's own services (IMPL-SBX-9).

Granted the network, a command shared the host's network namespace: it reached every service
on the host's 127.0.0.1 (databases, dev servers, air's own) and, until seccomp refused
``socket(AF_UNIX)``, the host's abstract Unix sockets. Now it runs in a namespace of its own
that slirp4netns connects: a TCP server on the host's own non-loopback address answers it, one
on 127.0.0.1 does not (nor through slirp4netns's gateway 10.0.2.2), an abstract Unix socket of
the host is not there; a command not granted the network reaches none of them; and neither
the command's slirp4netns nor its sandbox outlives the command, or air killed mid-command.
slirp4netns has no destination filter: a granted command also reached 169.254.0.0/16, where a
cloud VM's metadata service hands out the machine's cloud credentials. Now a TCP server on a
link-local address of the host is not reached (nor the metadata addresses: EACCES at once),
the command's own ``ip route`` cannot lift that, and a command whose block failed never runs.
Run as root and as nobody, through the real sandbox.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tools.sandbox_probe import IDENTITIES, Sandboxed, process_table

ATTEMPT = r"""python3 - <<'PY'
import socket
def attempt(name, family, address):
    try:
        s = socket.socket(family, socket.SOCK_STREAM)
        s.settimeout(10)
        s.connect(address)
        s.sendall(name.encode())
        print(name, "connected")
    except OSError as exc:
        print(name, exc.strerror or exc)
"""
"""The start of a Python script that prints, for each ``attempt``, what its connect() gave."""

TRY = (
    ATTEMPT
    + r"""attempt("abstract", socket.AF_UNIX, "\0NAME_HERE")
attempt("loopback", socket.AF_INET, ("127.0.0.1", LOOP_PORT))
attempt("gateway", socket.AF_INET, ("10.0.2.2", LOOP_PORT))
attempt("outside", socket.AF_INET, ("HOST_ADDR", OUT_PORT))
a, b = socket.socketpair()
a.sendall(b"x")
print("socketpair", b.recv(1).decode())
PY"""
)


def host_address() -> str:
    """The host's own non-loopback IPv4 address: the source of its route to the world."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("198.51.100.1", 9))  # UDP: no packet is sent
        address: str = probe.getsockname()[0]
    except OSError as exc:
        raise AssertionError(f"no IPv4 route here to test the network with: {exc}") from exc
    finally:
        probe.close()
    assert not address.startswith("127."), address
    return address


class Listener:
    """An abstract Unix socket, a TCP port on 127.0.0.1, one on the host's own address and one
    on each of ``more`` (IPv4 or IPv6 addresses), recording the name each connection sends."""

    def __init__(self, name: str, address: str, *more: str) -> None:
        self.reached: list[str] = []
        self.unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.unix.bind("\0" + name)
        self.loop = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.loop.bind(("127.0.0.1", 0))
        self.out = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.out.bind((address, 0))
        self.more = []
        for other in more:
            self.more.append(socket.socket(socket.AF_INET6 if ":" in other else socket.AF_INET))
            self.more[-1].bind((other, 0))
        self.sockets = (self.unix, self.loop, self.out, *self.more)
        for sock in self.sockets:
            sock.listen(8)
            threading.Thread(target=self._accept, args=(sock,), daemon=True).start()

    def _accept(self, sock: socket.socket) -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                with contextlib.suppress(OSError):
                    self.reached.append(conn.recv(16).decode())

    def settle(self) -> list[str]:
        """The names received, once there is one (or after 5 s)."""
        deadline = time.monotonic() + 5
        while not self.reached and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.reached

    def close(self) -> None:
        for sock in self.sockets:
            sock.close()


MARK = "AIR_NETWORK_TEST_MARK"


@pytest.fixture(params=IDENTITIES)
def marked(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Sandboxed, str]]:
    """A sandbox probe whose environment (which its slirp4netns inherits) holds a token."""
    token = uuid.uuid4().hex
    made = Sandboxed(tmp_path, request.param, {MARK: token})
    yield made, token
    made.close()


def _holding(token: str, program: bytes) -> list[int]:
    """PIDs of ``program`` whose environment holds ``MARK=token`` (air's slirp4netns) or whose
    argv holds ``_seconds(token)`` (the marked command, its bwrap)."""
    seconds = _seconds(token).encode()
    found = []
    for pid, argv, environ in process_table(environ=True):
        mine = f"{MARK}={token}".encode() in environ or any(seconds in a for a in argv)
        if mine and os.path.basename(argv[0]) == program:
            found.append(pid)
    return found


def _seconds(token: str) -> str:
    """A ``sleep`` argument unique to ``token``."""
    return f"600.{int(token[:8], 16)}"


def _gone(token: str, programs: tuple[bytes, ...]) -> list[int]:
    """Waits up to 10 s for every marked process of ``programs`` to end; those left."""
    deadline = time.monotonic() + 10
    while True:
        left = [pid for program in programs for pid in _holding(token, program)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def test_a_granted_command_reaches_the_network_not_the_host(
    marked: tuple[Sandboxed, str],
) -> None:
    box, token = marked
    address = host_address()
    listener = Listener(f"air-sandbox-test-{token}", address)
    try:
        command = (
            TRY.replace("NAME_HERE", f"air-sandbox-test-{token}")
            .replace("LOOP_PORT", str(listener.loop.getsockname()[1]))
            .replace("HOST_ADDR", address)
            .replace("OUT_PORT", str(listener.out.getsockname()[1]))
        )
        granted = box.run(command, network=True)
        assert granted["exit_code"] == 0, granted
        host = ["abstract Connection refused", "loopback Connection refused"]
        host.append("gateway Network is unreachable")  # slirp4netns's way to the host's lo
        assert str(granted["stdout"]).splitlines() == [*host, "outside connected", "socketpair x"]
        alone = box.run(command)
        assert alone["exit_code"] == 0, alone
        unreachable = "outside Network is unreachable"
        assert str(alone["stdout"]).splitlines() == [*host, unreachable, "socketpair x"], alone
        assert listener.settle() == ["outside"]
    finally:
        listener.close()
    assert _gone(token, (b"slirp4netns",)) == []  # the command's ended with it


def test_killing_air_during_a_granted_command_leaves_no_process(
    marked: tuple[Sandboxed, str],
) -> None:
    box, token = marked
    probe = box.probe.proc
    assert probe.stdin is not None
    request = {"command": f"exec sleep {_seconds(token)}", "network": True}
    probe.stdin.write(json.dumps(request) + "\n")
    probe.stdin.flush()
    try:
        deadline = time.monotonic() + 60
        while not (_holding(token, b"slirp4netns") and _holding(token, b"sleep")):
            assert probe.poll() is None, probe.stderr.read() if probe.stderr else ""
            assert time.monotonic() < deadline, "the granted command never started"
            time.sleep(0.05)
        os.kill(probe.pid, signal.SIGKILL)
        probe.wait(timeout=10)
        assert _gone(token, (b"slirp4netns", b"bwrap", b"sleep")) == []
    finally:
        for program in (b"slirp4netns", b"bwrap", b"sleep"):
            for pid in _holding(token, program):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def test_without_slirp4netns_a_granted_command_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from air.contracts.error import AirException, ErrorKind
    from air.tools.sandbox_net import NetworkLink

    monkeypatch.setenv("PATH", str(tmp_path))  # bwrap's and slirp4netns's directory gone
    with pytest.raises(AirException) as raised:
        NetworkLink()
    assert raised.value.error.kind == ErrorKind.ENVIRONMENT_ERROR
    assert "slirp4netns" in (raised.value.error.user_action or "")


async def test_air_doctor_says_slirp4netns_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from air.cli.doctor import build_checks

    (check,) = [c for c in build_checks(None) if c.name == "sandbox.network"]
    assert await check.run() == []  # installed here (scripts/setup.sh)
    monkeypatch.setenv("PATH", str(tmp_path))
    (problem,) = await check.run()
    assert problem.issue.severity == "warning"
    assert "slirp4netns" in problem.issue.message
    assert "nor a cloud's metadata service (169.254.0.0/16" in problem.issue.message
    assert "apt-get install slirp4netns" in (problem.issue.user_action or "")


METADATA = (
    ATTEMPT
    + r"""import struct
attempt("link-local", socket.AF_INET, ("LL_ADDR", LL_PORT))
attempt("mapped", socket.AF_INET6, ("::ffff:LL_ADDR", LL_PORT))
attempt("imds", socket.AF_INET, ("169.254.169.254", 80))
attempt("alibaba", socket.AF_INET, ("100.100.100.200", 80))
attempt("ipv6", socket.AF_INET6, ("V6_ADDR", V6_PORT))
attempt("aws-ipv6", socket.AF_INET6, ("fd00:ec2::254", 80))
attempt("outside", socket.AF_INET, ("HOST_ADDR", OUT_PORT))
query = struct.pack(">6H", 7, 0x100, 1, 0, 0, 0) + b"\7example\3com\0" + struct.pack(">2H", 1, 1)
dns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
dns.settimeout(10)
dns.sendto(query, ("10.0.2.3", 53))
print("dns", "answered" if dns.recv(512)[:2] == query[:2] else "garbled")
PY"""
)
"""Connects to a host's link-local address (where a cloud VM's metadata service answers),
directly and IPv4-mapped, to AWS/GCP/Azure's and Alibaba's metadata addresses, to a host's
IPv6 address (AWS's IPv6 one too), to the host's own address, and asks slirp4netns's DNS."""

BLOCKED = [
    "link-local Permission denied",
    "mapped Permission denied",
    "imds Permission denied",
    "alibaba Permission denied",
    "ipv6 Network is unreachable",  # slirp4netns without --enable-ipv6: no IPv6 route out
    "aws-ipv6 Network is unreachable",
    "outside connected",
    "dns answered",
]

LIFT = (
    "ip route del 169.254.0.0/16; ip route del 100.100.100.200/32; "
    "ip route add LL_ADDR/32 via 10.0.2.2; ip route add 100.100.100.200/32 via 10.0.2.2\n"
)
"""What a command with CAP_NET_ADMIN over its network namespace would do to lift the block."""


@pytest.fixture
def link_local() -> Iterator[tuple[str, str]]:
    """A link-local IPv4 address and an IPv6 one on this host, where a cloud VM's metadata
    service would answer, on a veth pair made for the test (as root: the suite's user) and
    removed after it. A veth, not a dummy: a kernel may lack the dummy driver (this one does)."""
    ip = shutil.which("ip")
    assert ip is not None, "ip (iproute2) is needed: bash scripts/setup.sh installs it"
    assert os.geteuid() == 0, "adding a host address takes root"
    name = f"airll{os.getpid()}"
    link_v4 = f"169.254.77.{os.getpid() % 200 + 20}"  # not .169.254: a real VM's own IMDS stays
    link_v6 = f"fd00:a1e::{os.getpid() % 0xFFFF:x}"
    subprocess.run([ip, "link", "add", f"{name}a", "type", "veth", "peer", f"{name}b"], check=True)
    try:
        for args in (
            ["addr", "add", f"{link_v4}/32", "dev", f"{name}a"],
            ["addr", "add", f"{link_v6}/128", "dev", f"{name}a", "nodad"],
            ["link", "set", f"{name}a", "up"],
            ["link", "set", f"{name}b", "up"],
        ):
            subprocess.run([ip, *args], check=True)
        yield link_v4, link_v6
    finally:
        subprocess.run([ip, "link", "del", f"{name}a"], check=True)


def _metadata(box: Sandboxed, link: tuple[str, str], lift: str = "") -> dict[str, object]:
    """Runs ``lift`` then ``METADATA``, granted the network; what the host's listeners on the
    link-local, the IPv6 and its own address received is checked to be ``outside`` alone."""
    address = host_address()
    listener = Listener(f"air-sandbox-test-{uuid.uuid4().hex}", address, *link)
    try:
        link_port, v6_port = (str(sock.getsockname()[1]) for sock in listener.more)
        command = (lift + METADATA).replace("LL_ADDR", link[0]).replace("LL_PORT", link_port)
        command = command.replace("V6_ADDR", link[1]).replace("V6_PORT", v6_port)
        command = command.replace("HOST_ADDR", address)
        granted = box.run(
            command.replace("OUT_PORT", str(listener.out.getsockname()[1])), network=True
        )
        assert listener.settle() == ["outside"], granted
    finally:
        listener.close()
    return granted


def test_a_granted_command_never_reaches_the_metadata_services(
    box: Sandboxed, link_local: tuple[str, str]
) -> None:
    granted = _metadata(box, link_local)
    assert granted["exit_code"] == 0, granted
    assert str(granted["stdout"]).splitlines() == BLOCKED, granted


def test_a_granted_command_cannot_lift_the_block(
    box: Sandboxed, link_local: tuple[str, str]
) -> None:
    granted = _metadata(box, link_local, LIFT)
    assert granted["exit_code"] == 0, granted
    assert str(granted["stdout"]).splitlines() == BLOCKED, granted
    refused = "RTNETLINK answers: Operation not permitted"  # no CAP_NET_ADMIN over its netns
    assert str(granted["stderr"]).splitlines() == [refused] * 4, granted


def test_a_granted_command_whose_block_fails_never_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from air.contracts.error import AirException, ErrorKind
    from air.tools import sandbox_net_block
    from air.tools.limits import ResourceLimits
    from air.tools.sandbox import SandboxRunner, sandbox_environment
    from air.tools.sandbox_spawn import CommandSpace, open_sandboxed

    monkeypatch.setattr(sandbox_net_block, "BLOCKED", ("169.254.0.0/33",))  # the kernel: EINVAL
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with CommandSpace(ResourceLimits()) as space, pytest.raises(AirException) as raised:
        open_sandboxed(
            SandboxRunner(),
            "touch ran",
            workspace=str(workspace),
            cwd=str(workspace),
            network=True,
            env=sandbox_environment(os.environ),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            space=space,
        )
    assert raised.value.error.kind == ErrorKind.ENVIRONMENT_ERROR
    assert "169.254.0.0/33 could not be blocked" in raised.value.error.message
    assert "Invalid argument" in raised.value.error.message
    assert not (workspace / "ran").exists()
