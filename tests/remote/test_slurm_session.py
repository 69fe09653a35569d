"""A slurm task's decided calls through a kept executor session, a step of the worker's job
(IMPL-SLURM-3), on the shared one-node Slurm: the session's lines go over a side channel of its
own (IMPL-SLURM-5), so a 64 KiB reply never passes through srun's stdio (which holds every reply
over 1 KiB ~40 ms there), and the session still ends cleanly, or killed and swept after a
cancelled call."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from air.ipc.procs import find_marked
from air.remote.hosts import HostConfig
from air.remote.srun import client_environment, job_id_of
from air.remote.workspace import RoutingWorkspaceExecutor
from tests.remote.conftest import CHECKOUT
from tests.remote.test_executor_session import (
    PARENT,
    cancel_a_sleep,
    exists,
    remote_registry,
    wait_for,
)
from tests.tools.conftest import Env

pytestmark = pytest.mark.slow

REPLY = 64 * 1024


@pytest.fixture
def job(slurm_host: HostConfig) -> Iterator[int]:
    """A running job of this user's on the node, standing in for a worker's (the sessions are
    ``--overlap`` steps of it)."""
    name = "air-test-sessions-" + os.urandom(4).hex()
    hold = subprocess.Popen(
        ["srun", "-N1", "-n1", f"--job-name={name}", "--time=5:00", "sleep", "300"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env=client_environment(),
    )
    try:
        for _ in range(600):
            found = trio.run(job_id_of, name)
            state = subprocess.run(
                ["squeue", "-h", "-j", str(found), "-o", "%T"], capture_output=True, text=True
            )
            if found is not None and state.stdout.strip() == "RUNNING":
                yield found
                break
            subprocess.run(["sleep", "0.1"], check=True)
        else:
            raise AssertionError(f"the job {name} never ran")
    finally:
        subprocess.run(["scancel", f"--name={name}"], check=False, env=client_environment())
        hold.kill()
        hold.wait()


def _worktree(host: HostConfig) -> str:
    """A worktree in the host's work directory, with ``src/app.py`` and a ``REPLY``-byte file."""
    worktree = Path(host.workdir, f"wt-{os.urandom(6).hex()}")
    (worktree / "src").mkdir(parents=True)
    (worktree / "src" / "app.py").write_text("print('there')\n")
    (worktree / "src" / "big.txt").write_text(("y" * 63 + "\n") * (REPLY // 64))
    return str(worktree)


def _registry(env: Env, host: HostConfig, job: int) -> RoutingWorkspaceExecutor:
    """The parent's registry with task_1 attached to a worktree on ``host`` in ``job``."""
    return remote_registry(env, host, _worktree(host), job)


def _written(pid: int) -> int:
    """Bytes process ``pid`` wrote in all (``/proc/PID/io``: pipes and sockets alike)."""
    for row in Path(f"/proc/{pid}/io").read_text().splitlines():
        if row.startswith("wchar:"):
            return int(row.split()[1])
    raise AssertionError(f"no wchar for {pid}")


async def test_a_64k_reply_comes_on_the_side_channel_not_through_srun(
    env: Env, slurm_host: HostConfig, job: int
) -> None:
    executor = _registry(env, slurm_host, job)
    for _ in range(2):  # the second call on the kept session
        read = await env.registry.call("fs.read", {"path": "src/big.txt"}, env.ctx())
        assert read.status == "ok", read
        assert str(read.output).count("y" * 63) == REPLY // 64
    assert executor.sessions.opened == 1
    [session] = executor.sessions.idle["task_1"]
    assert session.remote is not None  # the guard's identity line came on srun's stdout
    assert session.process is not None
    assert session.receive is not session.process.stdout
    # the srun client wrote less, in all, than one of the two replies: they did not pass it
    assert _written(session.process.pid) < REPLY
    assert find_marked(session.marker)  # kept between calls
    await executor.close("task_1")
    assert session.process.returncode == 3  # the executor's exit on its stdin's EOF: the socket's
    assert find_marked(session.marker) == []


async def test_a_cancelled_call_over_srun_ends_its_session_and_its_command(
    env: Env, slurm_host: HostConfig, job: int
) -> None:
    executor = _registry(env, slurm_host, job)
    session, cmdline = await cancel_a_sleep(env, executor, _running)
    assert find_marked(session.marker) == []
    assert not _running(cmdline)
    assert session.process is not None
    assert session.process.returncode is not None
    await executor.close("task_1")


def _running(cmdline: bytes) -> bool:
    """A process of this machine's (the node's) runs ``cmdline``."""
    for name in os.listdir("/proc"):
        try:
            if name.isdigit() and cmdline in Path(f"/proc/{name}/cmdline").read_bytes():
                return True
        except OSError:
            continue
    return False


async def test_the_parents_sigkill_leaves_no_step_session(
    tmp_path: Path, slurm_host: HostConfig, job: int
) -> None:
    (tmp_path / "env").mkdir()
    parent = subprocess.Popen(  # noqa: ASYNC220 (read from a thread below)
        [sys.executable, "-c", PARENT, str(CHECKOUT / ".remote" / "slurm-hosts.yaml"),
         str(tmp_path / "env"), _worktree(slurm_host), str(job)],
        cwd=CHECKOUT,
        stdout=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert parent.stdout is not None
        marker, srun_pid = (await trio.to_thread.run_sync(parent.stdout.readline)).split()
        assert find_marked(marker.decode())
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    # the socket closed with the parent: the executor's EOF, the guard sweeps, the step ends
    await wait_for(lambda: not find_marked(marker.decode()) and not exists(int(srun_pid)))


async def test_a_step_that_never_starts_fails_its_call_saying_so(
    env: Env, slurm_host: HostConfig
) -> None:
    executor = _registry(env, slurm_host, 2**31 - 2)  # no such job: srun refuses the step
    read = await env.registry.call("fs.read", {"path": "src/app.py"}, env.ctx())
    assert read.status == "error", read
    assert "the step did not start" in str(read.error), read.error
    assert executor.sessions.idle.get("task_1", []) == []  # never kept
    await executor.close("task_1")
