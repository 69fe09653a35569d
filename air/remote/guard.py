"""The remote end of a worker: ``python -P -m air.remote.guard run -- CMD...`` and
``python -P -m air.remote.guard sweep MARKER...`` (issue #27 item 6; IMPL-REMOTE-3).

Owns: ``sweep_marked`` (SIGTERM every process of this host whose environment carries one of the
run markers — ``setsid`` escapees included, since the marker travels in the environment — wait
a grace period, SIGKILL what is left), the two commands around it, and ``parse_identity`` (the
parent's reading of the identity line). ``run`` first writes one line, ``air-remote {identity}``
(host, boot id, its pid and start time, versions), then starts
the worker as its child with the guard's own stdio, waits for it (the worker ends on stdin EOF:
the parent closed the pipe, or the connection dropped and sshd closed it) and then sweeps its
marker and everything below the guard (``become_subreaper``: orphans without the marker are
reparented to it), so no descendant outlives the worker on this host; with ``--lease TTL_S``
(``Lease``) the worker's stdin passes through the guard, and TTL_S seconds without a byte from
the parent (a black-holed link that neither side has noticed) end the worker's tree too, with a
shorter grace (``LAPSED_GRACE_S``). A worker's own exit code 255 is reported as 254, so 255 on
the parent's side only ever means the ssh client failed. ``sweep`` is what the parent runs over a
fresh connection before a relaunch or after a drop, and prints the PIDs it signalled as JSON.
Standard library (``ctypes`` for ``prctl``) and ``air.ipc.procs`` only: it runs on the remote
host's air.
"""

from __future__ import annotations

import json
import os
import platform
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Any

import air
from air.ipc.procs import MARKER_ENV, find_marked_or_below, read_identity

__all__ = [
    "EXECUTOR_INPUT_ENDED",
    "IDENTITY_PREFIX",
    "LAPSED_GRACE_S",
    "SSH_FAILED",
    "WORKER_255",
    "Lease",
    "become_subreaper",
    "main",
    "parse_identity",
    "sweep_marked",
]

SSH_FAILED = 255
"""The ssh client's own failure (connection, authentication, host key)."""
WORKER_255 = 254
"""What a worker's own exit code 255 is reported as."""
EXECUTOR_INPUT_ENDED = 3
"""``air.remote.executor``'s exit when its stdin ends: between calls, the session's clean end."""
LAPSED_GRACE_S = 1.0
"""SIGTERM to SIGKILL when the lease lapsed: the parent is gone, so nothing waits for a
cooperative wrap-up, and the tree is gone by TTL + about 1.1 s (the issue's TTL + 2 s). A worker
that ended on its own (stdin EOF, its task done) leaves its descendants the default 2 s."""
_LEASE_POLL_S = 0.1
_PR_SET_CHILD_SUBREAPER = 36


def sweep_marked(
    markers: list[str], grace_s: float = 2.0, poll_s: float = 0.05, *, descendants: bool = False
) -> list[int]:
    """SIGTERM every process carrying one of ``markers`` (but this one) and, with
    ``descendants``, every process below this one, wait up to ``grace_s`` for them to go,
    SIGKILL the rest; returns every PID signalled."""
    me = os.getpid()

    def found() -> set[int]:  # one /proc scan (it never lists this process)
        return set(find_marked_or_below(markers, me if descendants else None))

    signalled = found()
    for pid in signalled:
        _kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    left = signalled
    while left and time.monotonic() < deadline:
        time.sleep(poll_s)
        left = found()
    for _ in range(3):
        if not left:
            break
        signalled |= left
        for pid in left:
            _kill(pid, signal.SIGKILL)
        time.sleep(poll_s)
        left = found()
    return sorted(signalled)


def _kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


class Lease:
    """The parent's lease on the worker: every byte the parent sends renews it (the parent sends
    an empty line, which the worker ignores, when it has nothing else to say). The guard copies
    its stdin to the worker's and notes when bytes last came."""

    def __init__(self, ttl_s: float, sink: int) -> None:
        self.ttl_s = ttl_s
        self.sink = sink
        self.renewed = time.monotonic()
        self.ended = False

    def pump(self) -> None:
        """(A thread.) Copy stdin to the worker until either side ends."""
        try:
            while chunk := os.read(0, 65536):
                self.renewed = time.monotonic()
                view = memoryview(chunk)
                while view:
                    view = view[os.write(self.sink, view) :]
        except OSError:
            pass
        finally:
            self.ended = True
            os.close(self.sink)

    def expired(self) -> bool:
        return not self.ended and time.monotonic() - self.renewed > self.ttl_s


def become_subreaper() -> bool:
    """Make this process the child subreaper of its tree (``PR_SET_CHILD_SUBREAPER``): an
    orphan below it is reparented here, not to init, so the sweep after the worker finds it even
    without the marker — a sandboxed command whose executor died between forking bwrap and
    bwrap's own ``prctl(PR_SET_PDEATHSIG)`` (IMPL-REMOTE-3). False where Linux refuses."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


IDENTITY_PREFIX = b"air-remote "
"""The guard's first line on stdout: ``air-remote {json identity}``, before the worker's."""
_PID_MAX = 1 << 22
"""Linux's highest ``pid_max``."""


def parse_identity(line: bytes) -> dict[str, Any] | None:
    """The identity a guard's first line names, held to what ``run`` writes (the host chose
    it): a JSON object whose ``host`` is a name, ``pid`` a Linux PID, ``boot_id``, ``start_time``
    (digits), ``python`` and ``air`` short strings or null; None for anything else. The parent
    records it in the run record and ``agent.started`` and recovery reads it back."""
    if not line.startswith(IDENTITY_PREFIX) or len(line) > 4096:
        return None
    try:
        data = json.loads(line[len(IDENTITY_PREFIX) :])
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    pid, host, start = data.get("pid"), data.get("host"), data.get("start_time")
    if type(pid) is not int or not 0 < pid <= _PID_MAX:
        return None
    if not isinstance(host, str) or not 0 < len(host) <= 253 or not host.isprintable():
        return None
    if start is not None and not (isinstance(start, str) and start.isdigit() and len(start) <= 20):
        return None
    texts = {k: data.get(k) for k in ("boot_id", "python", "air")}
    for value in texts.values():
        if value is not None and not (
            isinstance(value, str) and len(value) <= 64 and value.isprintable()
        ):
            return None
    return {"host": host, "pid": pid, "start_time": start, **texts}


def _run(command: list[str], lease_s: float) -> int:
    marker = os.environ.get(MARKER_ENV, "")
    if not marker or not command:
        sys.stderr.write(f"air.remote.guard: needs {MARKER_ENV} and a command\n")
        return 2
    become_subreaper()
    me = read_identity(os.getpid())
    identity = {
        "host": socket.gethostname(),
        "boot_id": me.boot_id,
        "pid": me.pid,
        "start_time": me.start_time,
        "python": platform.python_version(),
        "air": air.__version__,
    }
    os.write(1, IDENTITY_PREFIX + json.dumps(identity).encode() + b"\n")
    # without a lease the worker reads the connection itself; with one, through the guard
    child = subprocess.Popen(command, stdin=subprocess.PIPE if lease_s > 0 else None)

    def forward(signum: int, _frame: object) -> None:
        _kill(child.pid, signal.SIGTERM)

    for sig in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, forward)
    if lease_s > 0:
        assert child.stdin is not None
        lease = Lease(lease_s, os.dup(child.stdin.fileno()))
        child.stdin.close()
        threading.Thread(target=lease.pump, daemon=True).start()
        while child.poll() is None:
            if lease.expired():
                sys.stderr.write(f"air.remote.guard: no word from the parent in {lease_s} s\n")
                break
            time.sleep(min(_LEASE_POLL_S, lease_s / 4))
    expired = child.poll() is None and lease_s > 0
    code = -signal.SIGKILL if expired else child.wait()
    sweep_marked([marker], grace_s=LAPSED_GRACE_S if expired else 2.0, descendants=True)
    child.wait()
    if code < 0:
        return 128 - code
    return WORKER_255 if code == SSH_FAILED else code


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "run" and argv[1] == "--":
        return _run(argv[2:], 0.0)
    if len(argv) >= 4 and argv[0] == "run" and argv[1] == "--lease" and argv[3] == "--":
        return _run(argv[4:], float(argv[2]))
    if argv and argv[0] == "sweep":
        print(json.dumps({"signalled": sweep_marked(argv[1:])}))
        return 0
    sys.stderr.write(
        "usage: python -m air.remote.guard run [--lease TTL_S] -- CMD... | sweep MARKER...\n"
    )
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
