"""A command granted the network opens no Unix socket (IMPL-SBX-1).

Granted the network, a command shares the host's network namespace, where an abstract Unix
socket has no file permissions: it reached one this process listens on (as an X server that
admits the user's uid, an older D-Bus session bus, containerd's shims once did). Now
``socket(AF_UNIX)`` fails with EPERM there, while TCP to the host works as granted; without
the network the command's own namespace holds no host socket, and Unix sockets of its own
still work. Run as root and as nobody, through the real sandbox.
"""

from __future__ import annotations

import os
import socket
import threading

from tests.tools.sandbox_probe import Sandboxed

TRY = r"""python3 - <<'PY'
import os, socket
def attempt(name, family, address):
    try:
        s = socket.socket(family, socket.SOCK_STREAM)
        s.connect(address)
        s.sendall(b"reached")
        print(name, "connected")
    except OSError as exc:
        print(name, exc.strerror)
attempt("abstract", socket.AF_UNIX, "\0NAME_HERE")
attempt("tcp", socket.AF_INET, ("127.0.0.1", PORT_HERE))
a, b = socket.socketpair()
a.sendall(b"x")
print("socketpair", b.recv(1).decode())
PY"""


class Listener:
    """An abstract Unix socket and a TCP port on 127.0.0.1 that record what reaches them."""

    def __init__(self, name: str) -> None:
        self.reached: list[str] = []
        self.unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.unix.bind("\0" + name)
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.bind(("127.0.0.1", 0))
        self.port = self.tcp.getsockname()[1]
        for sock, what in ((self.unix, "unix"), (self.tcp, "tcp")):
            sock.listen(4)
            threading.Thread(target=self._accept, args=(sock, what), daemon=True).start()

    def _accept(self, sock: socket.socket, what: str) -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                if conn.recv(16) == b"reached":
                    self.reached.append(what)

    def close(self) -> None:
        for sock in (self.unix, self.tcp):
            sock.close()


def test_a_command_granted_the_network_reaches_no_host_unix_socket(box: Sandboxed) -> None:
    name = f"air-sandbox-test-{os.getpid()}-{id(box)}"
    listener = Listener(name)
    try:
        command = TRY.replace("NAME_HERE", name).replace("PORT_HERE", str(listener.port))
        granted = box.run(command, network=True)
        assert granted["exit_code"] == 0, granted
        assert str(granted["stdout"]).splitlines() == [
            "abstract Operation not permitted",
            "tcp connected",
            "socketpair x",
        ], granted
        alone = box.run(command)
        assert alone["exit_code"] == 0, alone
        assert str(alone["stdout"]).splitlines() == [
            "abstract Connection refused",
            "tcp Connection refused",
            "socketpair x",
        ], alone
    finally:
        listener.close()
    assert "unix" not in listener.reached
