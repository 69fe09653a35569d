"""The remote guard leaves nothing below it (IMPL-REMOTE-3), also what carries no run marker: as
root on this host and as the remote user behind this machine's sshd (tests/remote/conftest.py).

A sandboxed command's environment is the sandbox's allowlist, so the marker sweep cannot see it;
bwrap's parent-death signal ends it with its spawner, except when the spawner (the remote
executor, on its stdin's end: a dropped link) dies before bwrap armed that signal. Such a
command then ran on for good (``sleep 600`` of the drops matrix, 2 of 21 scenarios in a loaded
CI run). The guard is its tree's child subreaper and sweeps everything below it; the sandbox
itself now also declines to run once its spawner is gone (the life pipe,
tests/tools/test_sandbox_lifetime.py), so ``env_i_setsid`` is what shows the guard's sweep."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from air.ipc.procs import MARKER_ENV
from air.remote.hosts import HostConfig
from air.remote.ssh import client_environment, remote_command, ssh_argv
from tests.remote.conftest import CHECKOUT, process_uid, remote_uid
from tests.remote.test_executor_session import make_worktree
from tests.tools.sandbox_probe import SPAWN_AND_DIE, process_table

pytestmark = pytest.mark.slow


def _orphan(kind: str, python: str, sleep: str) -> list[str]:
    """The guard's command: it leaves an orphan of ``kind`` running ``sleep`` and ends."""
    if kind == "sandboxed":
        return [python, "-c", SPAWN_AND_DIE, sleep]
    return ["/bin/sh", "-c", f"env -i setsid {sleep} </dev/null >/dev/null 2>&1 & echo $!; exit 0"]


ORPHANS = ["env_i_setsid", "sandboxed"]


def _sleeps(arg: str) -> list[int]:
    return [pid for pid, argv, _ in process_table() if argv == [b"sleep", arg.encode(), b""]]


async def _gone(stdout: bytes, arg: str, limit_s: float = 10.0) -> bool:
    """The orphan (its PID the second line of ``stdout``, after the guard's) and its ``sleep``
    went within ``limit_s``; a 600 s sleep left alone outlives any wait."""
    lines = stdout.splitlines()
    assert len(lines) == 2, stdout
    assert lines[0].startswith(b"air-remote "), stdout
    orphan = int(lines[1])

    def alive() -> bool:
        try:
            with open(f"/proc/{orphan}/stat", "rb") as fh:
                state = fh.read().rpartition(b")")[2].split()[0]
        except OSError:
            return bool(_sleeps(arg))
        return state not in (b"Z", b"X") or bool(_sleeps(arg))

    with trio.move_on_after(limit_s):
        while alive():  # noqa: ASYNC110 (processes of another user)
            await trio.sleep(0.05)
        return True
    return False


@pytest.mark.parametrize("orphan", ORPHANS)
async def test_nothing_below_the_guard_outlives_it_as_root(orphan: str, tmp_path: Path) -> None:
    arg = f"600.{os.getpid()}{len(orphan)}"
    command = _orphan(orphan, sys.executable, f"sleep {arg}")
    env = {**os.environ, MARKER_ENV: f"orphan-{os.urandom(4).hex()}"}
    done = await trio.run_process(
        [sys.executable, "-P", "-m", "air.remote.guard", "run", "--", *command],
        cwd=str(tmp_path),
        env=env,
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert await _gone(done.stdout, arg), f"{orphan}: sleep {arg} outlived its guard"


@pytest.mark.parametrize("orphan", ORPHANS)
async def test_nothing_below_the_guard_outlives_it_as_the_remote_user(
    orphan: str, remote_host: HostConfig
) -> None:
    worktree = make_worktree(remote_host)
    arg = f"600.{os.getpid()}{len(orphan) + 1}"
    command = _orphan(orphan, remote_host.python, f"sleep {arg}")
    marker = f"orphan-{os.urandom(4).hex()}"
    line = remote_command(remote_host, marker, command, {}, cwd=worktree)
    done = await trio.run_process(
        [*ssh_argv(remote_host), "--", remote_host.destination(), line],
        stdin=subprocess.DEVNULL,
        capture_stdout=True,
        capture_stderr=True,
        check=False,
        env=client_environment(),
        cwd=str(CHECKOUT),
    )
    assert done.returncode == 0, (shlex.join(command), done.stderr)
    assert all(process_uid(p) == remote_uid() for p in _sleeps(arg))
    assert await _gone(done.stdout, arg), f"{orphan}: sleep {arg} outlived its guard"
