"""The side channel of a worker under srun (IMPL-SLURM-5): its lines go over a TCP connection
back to the parent instead of srun's stdio. Only a connection presenting the one-time token
becomes the worker's (anything else is closed at once, and the listener closes once the worker
is in); the token travels on the step's stdin, never in a command line or an environment; a
worker over srun completes through it; a step without the offer refuses to start."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from air.remote.hosts import HostConfig
from air.remote.sidechannel import SideChannel
from tests.remote.conftest import Rig
from tests.remote.test_srun_worker import _manager

TOKEN = "f00d" * 16


def _client(port: int, line: bytes) -> bytes:
    """Connect, send ``line``, return what the parent answers before closing (b"": closed)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(line)
        try:
            return sock.recv(100)
        except ConnectionResetError:
            return b""


async def test_only_the_token_gets_in_and_then_nobody(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(secrets, "token_hex", lambda _n: TOKEN)
    side = SideChannel("127.0.0.1")
    await side.open()
    assert side.offer().endswith(f" {TOKEN}\n".encode())
    port = int(side.offer().split()[2])
    accepted: list[tuple[trio.abc.SendStream, trio.abc.ReceiveStream]] = []
    async with trio.open_nursery() as nursery:

        async def accept() -> None:
            with trio.fail_after(30):
                accepted.append(await side.accept())

        nursery.start_soon(accept)
        for wrong in (b"nope\n", TOKEN[:-1].encode() + b"\n", TOKEN.encode() + b"\nmore"):
            assert await trio.to_thread.run_sync(_client, port, wrong) == b""
        assert not accepted
        good = await trio.to_thread.run_sync(socket.create_connection, ("127.0.0.1", port))
        good.sendall(TOKEN.encode() + b"\n")
    [(send, receive)] = accepted
    assert side.refused == 3
    with pytest.raises(ConnectionRefusedError):  # the listener closed behind the worker
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    await send.send_all(b"ping\n")
    assert good.recv(100) == b"ping\n"
    good.sendall(b"pong\n")
    assert await receive.receive_some(100) == b"pong\n"
    await send.aclose()  # the worker's stdin EOF, its stdout still open
    assert good.recv(100) == b""
    good.sendall(b"last\n")
    assert await receive.receive_some(100) == b"last\n"
    good.close()
    await receive.aclose()


def test_a_step_without_the_offer_does_not_start_the_worker(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    done = subprocess.run(
        [sys.executable, "-m", "air.remote.sidechannel", "connect", "--", "touch", str(marker)],
        input=b"hello\n",
        capture_output=True,
        check=False,
    )
    assert done.returncode == 2
    assert b"no side-channel offer" in done.stderr
    assert not marker.exists()


def _worker_stdio() -> list[str]:
    """What the stdin of pingpong workers in Slurm steps is (``socket`` or ``pipe``; their
    stdout is a dup of it the worker keeps, fd 1 it points at stderr)."""
    found = []
    for name in os.listdir("/proc"):
        try:
            if not name.isdigit() or b"slurm" not in Path(f"/proc/{name}/cgroup").read_bytes():
                continue
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            # the worker itself (not the connector that becomes it, not the guard around it)
            if cmdline.split(b"\0")[2:4] == [b"-m", b"air.testing.workers.pingpong"]:
                found.append(os.readlink(f"/proc/{name}/fd/0").split(":")[0])
        except OSError:
            continue
    return found


def _everywhere(needle: bytes) -> int:
    """How often ``needle`` is in a process's command line or environment, all processes."""
    found = 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            for part in ("cmdline", "environ"):
                try:
                    found += needle in Path(f"/proc/{name}/{part}").read_bytes()
                except OSError:
                    continue
    return found


@pytest.mark.slow
async def test_a_worker_over_srun_talks_on_the_side_channel_and_no_argv_holds_the_token(
    rig: Rig, slurm_host: HostConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(secrets, "token_hex", lambda _n: TOKEN)
    seen: list[int] = []
    stdio: set[str] = set()

    async def watch() -> None:
        while True:
            seen.append(await trio.to_thread.run_sync(_everywhere, TOKEN.encode()))
            stdio.update(await trio.to_thread.run_sync(_worker_stdio))
            await trio.sleep(0.2)

    manager = _manager(rig, slurm_host, "air.testing.workers.pingpong")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch)
        # 300 trips of 70 KB: long enough for the watch's samples to see the worker
        outcome = await manager.supervise(rig.request("300:70000"))
        nursery.cancel_scope.cancel()
    assert outcome.kind == "result", outcome
    assert outcome.result is not None
    assert outcome.result.summary == "300 round trips"
    assert seen
    assert set(seen) == {0}
    assert stdio == {"socket"}  # not srun's pipe: the worker's stdin is the channel
