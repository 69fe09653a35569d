"""Workers over real ssh to this machine's sshd (tests/remote/conftest.py): the real
WorkerManager over the SshLauncher. A worker runs as the remote user with an explicit
environment (a secret of the parent never reaches it), a killed attempt leaves no remote process
(a setsid grandchild included), a dropped client makes the remote end kill its own tree, and the
two start-up failures — login-script noise, the ssh client's own exit 255 — each end the attempt
with one error that names them (issue #27; IMPL-REMOTE-3)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import trio

import air
from air.ipc.launcher import LaunchSpec
from air.ipc.procs import boot_id, read_identity
from air.remote.hosts import HostConfig
from air.remote.ssh import SshHandle, SshLauncher, open_ssh_master
from air.supervision.runs import RunRecordStore
from tests.remote.conftest import Rig, process_environ, remote_marked

CANARY = "sk-ant-canary-0d1e2f3a4b5c6d7e8f"
HANG = "air.testing.workers.hang_with_grandchild"

pytestmark = pytest.mark.slow


async def _wait_for(predicate: Callable[[], bool], limit_s: float = 20.0) -> None:
    with trio.fail_after(limit_s):
        while not predicate():  # noqa: ASYNC110 (processes on the remote host)
            await trio.sleep(0.05)


async def test_remote_worker_completes_as_the_remote_user(
    rig: Rig, remote_host: HostConfig
) -> None:
    outcome = await rig.manager(remote_host, "air.testing.workers.pingpong").supervise(
        rig.request("3")
    )
    assert outcome.kind == "result", outcome
    assert outcome.result is not None
    assert outcome.result.summary == "3 round trips"
    assert rig.types() == ["agent.started", "agent.completed"]


async def test_killed_remote_attempt_leaves_no_process_and_no_secret_travels(
    rig: Rig, remote_host: HostConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
    manager = rig.manager(remote_host, HANG, env={"IGNORE_TERM": "1"}, kill_grace_s=0.5)
    records = RunRecordStore(str(rig.tmp / "runs"))
    seen: dict[int, bytes] = {}
    outcome_box = []
    async with trio.open_nursery() as nursery:

        async def run() -> None:
            outcome_box.append(await manager.supervise(rig.request("x", hard_timeout_ms=60_000)))

        nursery.start_soon(run)

        def two_remote() -> bool:
            markers = [r["marker"] for r in records.list() if r.get("marker")]
            pids = remote_marked(markers[0]) if markers else []
            for pid in pids:
                seen[pid] = process_environ(pid)
            return len(pids) >= 3  # the guard, the worker, its setsid grandchild

        await _wait_for(two_remote)
        [record] = records.list()
        nursery.cancel_scope.deadline = trio.current_time() + 30
        await manager.cancel(record["agent_id"], "test: end the remote worker")
    [outcome] = outcome_box
    assert outcome.kind == "crashed", outcome
    assert remote_marked(record["marker"]) == []
    # seen as the remote user's processes (remote_marked), with air's explicit environment only
    assert len(seen) >= 3
    explicit = {"HOME", "USER", "LOGNAME", "PATH", "LANG", "PYTHONUNBUFFERED"}
    for env in seen.values():
        assert CANARY.encode() not in env
        names = {item.split(b"=", 1)[0].decode() for item in env.split(b"\0") if item}
        # exactly air's explicit environment: nothing of sshd's session (SSH_CONNECTION, ...)
        assert names == explicit | {"IGNORE_TERM", "AIR_WORKER_RUN"}, names
        assert b"PATH=/usr/local/bin:/usr/bin:/bin\0" in env


async def test_dropped_client_makes_the_remote_end_kill_its_own_tree(
    remote_host: HostConfig,
) -> None:
    """SIGKILL of the local ssh client, no sweep: sshd closes the worker's stdin, the worker
    ends, and the remote guard kills what it left (a setsid grandchild that ignores SIGTERM)."""
    marker = "run_drop_" + os.urandom(6).hex()
    launched = await SshLauncher(remote_host).launch(
        LaunchSpec(
            agent_id="agt_drop",
            marker=marker,
            command=[sys.executable, "-P", "-m", HANG],
            env={"IGNORE_TERM": "1"},
        )
    )
    await launched.send.send_all(json.dumps(_start("agt_drop")).encode() + b"\n")
    with trio.fail_after(20):
        first = await launched.receive.receive_some(65536)
    assert b"worker.ready" in first
    await _wait_for(lambda: len(remote_marked(marker)) >= 3)
    # the remote identity, from the guard's first line: the root of the tree on its host
    assert isinstance(launched.handle, SshHandle)
    remote = launched.handle.remote
    assert remote is not None
    assert remote["host"] == socket.gethostname()
    assert remote["boot_id"] == boot_id()
    assert remote["pid"] in remote_marked(marker)
    assert remote["start_time"] == read_identity(remote["pid"]).start_time
    assert remote["air"] == air.__version__
    os.kill(launched.handle.identity.pid, signal.SIGKILL)
    await launched.handle.wait()
    await _wait_for(lambda: remote_marked(marker) == [], limit_s=30)


async def test_a_black_holed_link_ends_the_remote_tree_at_the_lease(
    remote_host: HostConfig,
) -> None:
    """The local ssh client stopped (SIGSTOP: nothing moves, nothing closes; sshd would notice
    only after a minute): with no byte from the parent for the lease's 2 s, the remote guard
    ends the worker and its setsid grandchild that ignores SIGTERM."""
    host = remote_host.model_copy(update={"lease_ttl_s": 2})
    marker = "run_hole_" + os.urandom(6).hex()
    async with trio.open_nursery() as nursery:
        launched = await SshLauncher(host, nursery=nursery).launch(
            LaunchSpec(
                agent_id="agt_hole",
                marker=marker,
                command=[sys.executable, "-P", "-m", HANG],
                env={"IGNORE_TERM": "1"},
            )
        )
        await launched.send.send_all(json.dumps(_start("agt_hole")).encode() + b"\n")
        with trio.fail_after(20):
            first = await launched.receive.receive_some(65536)
        assert b"worker.ready" in first
        await _wait_for(lambda: len(remote_marked(marker)) >= 3)
        await trio.sleep(6)  # renewed: three leases later, the tree still runs
        assert len(remote_marked(marker)) >= 3
        pid = launched.handle.identity.pid
        os.kill(pid, signal.SIGSTOP)
        try:
            await _wait_for(lambda: remote_marked(marker) == [], limit_s=12)
        finally:
            os.kill(pid, signal.SIGKILL)
            os.kill(pid, signal.SIGCONT)
            await launched.handle.wait()


def _start(agent_id: str) -> dict[str, object]:
    return {
        "v": 1,
        "id": "msg_1",
        "kind": "control",
        "ts": "2026-01-01T00:00:00Z",
        "session_id": "ses_remote",
        "agent_id": agent_id,
        "payload": {},
    }


@pytest.fixture
def noisy_python(remote_host: HostConfig) -> Iterator[str]:
    """A remote interpreter whose start prints a banner first, as a chatty ~/.bashrc would
    (in a directory the remote user can read, removed after the test)."""
    where = tempfile.mkdtemp(prefix="air-noisy-")
    os.chmod(where, 0o755)
    path = os.path.join(where, "python")
    Path(path).write_text(
        f"#!/bin/sh\necho 'Welcome to the build box'\nexec {remote_host.python} \"$@\"\n"
    )
    os.chmod(path, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    yield path
    shutil.rmtree(where)


async def test_login_noise_before_ready_is_one_error_quoting_it(
    rig: Rig, remote_host: HostConfig, noisy_python: str
) -> None:
    noisy = remote_host.model_copy(update={"python": noisy_python})
    outcome = await rig.manager(noisy, "air.testing.workers.pingpong").supervise(rig.request())
    assert outcome.kind == "protocol_error", outcome
    assert outcome.transient is False
    assert outcome.error is not None
    assert "wrote to stdout before the worker started" in outcome.error.message
    assert "Welcome to the build box" in outcome.error.message
    assert outcome.error.user_action
    assert "~/.bashrc" in outcome.error.user_action


async def test_ssh_exit_255_is_told_apart_from_the_worker(
    rig: Rig, remote_host: HostConfig, tmp_path: Path
) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    unknown_key = remote_host.model_copy(update={"known_hosts": str(empty)})
    outcome = await rig.manager(unknown_key, "air.testing.workers.pingpong").supervise(
        rig.request()
    )
    assert outcome.kind == "protocol_error", outcome
    assert outcome.transient is False
    assert outcome.error is not None
    assert "ssh exit 255, not the worker's" in outcome.error.message
    assert "host key" in outcome.error.message
    assert outcome.error.user_action
    assert "known_hosts" in outcome.error.user_action


async def test_workers_share_a_master_connection_that_air_closes(
    rig: Rig, remote_host: HostConfig
) -> None:
    async with open_ssh_master(remote_host) as control:
        manager = rig.manager(remote_host, "air.testing.workers.pingpong")
        manager.launcher = SshLauncher(remote_host, control_path=control)
        outcome = await manager.supervise(rig.request("2"))
        assert outcome.kind == "result", outcome
        assert _with_argument(control)  # the master, air's own process
    assert _with_argument(control) == []
    assert not Path(control).parent.exists()


def _ssh_log(client: int) -> str:
    """What the ssh client ``client``'s ``-E`` log is, once the client opened it."""
    argv = Path(f"/proc/{client}/cmdline").read_bytes().split(b"\0")
    log = os.readlink(argv[argv.index(b"-E") + 1].decode())
    fds = Path(f"/proc/{client}/fd")
    assert log in [os.readlink(fd) for fd in fds.iterdir()]
    return log


def _with_argument(text: str) -> list[int]:
    """Local processes whose command line mentions ``text``."""
    found = []
    for name in os.listdir("/proc"):
        try:
            if name.isdigit() and text.encode() in Path(f"/proc/{name}/cmdline").read_bytes():
                found.append(int(name))
        except OSError:
            continue
    return found


async def test_the_session_end_sweep_kills_what_a_stopped_guard_left(
    remote_host: HostConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The remote guard stopped (SIGSTOP: layer 1 cannot act) and the local client killed: the
    worker's setsid grandchild that ignores SIGTERM stays on the host until the launcher's sweep
    over a fresh connection kills every process of the runs it started. The client's own log is
    a file no name leads to (a killed air leaves none behind)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    launcher = SshLauncher(remote_host)
    marker = "run_sweep_" + os.urandom(6).hex()
    launched = await launcher.launch(
        LaunchSpec(
            agent_id="agt_sweep",
            marker=marker,
            command=[sys.executable, "-P", "-m", HANG],
            env={"IGNORE_TERM": "1"},
        )
    )
    await launched.send.send_all(json.dumps(_start("agt_sweep")).encode() + b"\n")
    with trio.fail_after(20):
        first = await launched.receive.receive_some(65536)
    assert b"worker.ready" in first
    await _wait_for(lambda: len(remote_marked(marker)) >= 3)
    assert isinstance(launched.handle, SshHandle)
    assert os.listdir(tmp_path) == []
    log = _ssh_log(launched.handle.identity.pid)
    assert log.endswith(" (deleted)")
    assert launched.handle.remote is not None
    os.kill(launched.handle.remote["pid"], signal.SIGSTOP)  # the guard
    os.kill(launched.handle.identity.pid, signal.SIGKILL)
    await launched.handle.wait()
    await trio.sleep(2)
    assert remote_marked(marker), "the stopped guard swept nothing"
    swept = await launcher.sweep()
    assert swept is not None
    await _wait_for(lambda: remote_marked(marker) == [], limit_s=10)


async def test_ended_remote_workers_leave_no_pipe_open(rig: Rig, remote_host: HostConfig) -> None:
    """The ssh launcher keeps every handle (for the session's sweep); an ended worker's ssh
    client pipes are closed all the same, at its end (issue #27)."""
    manager = rig.manager(remote_host, "air.testing.workers.pingpong")
    assert (await manager.supervise(rig.request("1"))).kind == "result"
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(3):
        assert (await manager.supervise(rig.request("1"))).kind == "result"
    assert isinstance(manager.launcher, SshLauncher)
    assert len(manager.launcher.handles) == 4
    assert len(os.listdir("/proc/self/fd")) <= before  # without the close: 2 more per worker
