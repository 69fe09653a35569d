"""Shell commands live as long as their own timeout and still die with air (issue 9 item 3).

bwrap's ``--die-with-parent`` fires when the THREAD that forked bwrap exits. Trio's worker
threads exit after 10 s idle, so a command spawned from one died at 10.0 s. air now spawns
bwrap from the thread that runs the Trio loop: a command outlives idle worker threads (shown
fast by shrinking Trio's idle timeout, and once for real with ``sleep 12``), and a kill -9 of
the air process still leaves none of its processes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import site
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.tools.conftest import Env
from tests.tools.sandbox_probe import (
    IDENTITIES,
    NOBODY,
    REPO,
    SPAWN_EACH_AND_DIE,
    process_table,
    unprivileged_dir,
    unprivileged_python,
)


async def _shell(env: Env, command: str, timeout_s: float) -> dict[str, object]:
    env.engine.headless_allow_ask = True
    res = await env.registry.call(
        "shell.run", {"command": command, "timeout_s": timeout_s}, env.ctx(headless=True)
    )
    assert res.status == "ok", res.error
    assert isinstance(res.output, dict)
    return res.output


async def test_a_command_outlives_idle_worker_threads(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Trio's worker threads now exit after 0.05 s idle instead of 10 s: a command bound to the
    # thread that spawned it would be SIGKILLed long before it prints.
    monkeypatch.setattr("trio._core._thread_cache.IDLE_TIMEOUT", 0.05)
    out = await _shell(env, "sleep 1.5; echo done", timeout_s=30)
    assert out["exit_code"] == 0
    assert out["stdout"] == "done\n"


@pytest.mark.slow
async def test_sleep_12_then_echo_runs_to_completion(env: Env) -> None:
    # past Trio's real 10 s idle timeout of its worker threads
    out = await _shell(env, "sleep 12; echo done", timeout_s=120)
    assert out["exit_code"] == 0
    assert out["stdout"] == "done\n"


def _marked(token: str, *, sleepers: bool = False) -> list[int]:
    """PIDs whose command line holds ``token`` (bwrap's too); ``sleepers``: the python3 ones."""
    pids = []
    for pid, argv, _ in process_table():
        if any(token.encode() in a for a in argv) and (
            not sleepers or argv[0].endswith(b"python3")
        ):
            pids.append(pid)
    return pids


def test_kill_9_of_air_during_a_long_command_leaves_no_process(tmp_path: Path) -> None:
    token = f"AIRSBXMARK-{uuid.uuid4().hex}"
    driver = subprocess.Popen(
        [sys.executable, "-m", "tests.tools.sandbox_driver", str(tmp_path), token],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while len(_marked(token, sleepers=True)) < 2:  # the background and foreground ones
            assert driver.poll() is None, driver.stderr.read() if driver.stderr else ""
            assert time.monotonic() < deadline, "the command never started"
            time.sleep(0.05)
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(timeout=10)
        deadline = time.monotonic() + 10
        while _marked(token) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _marked(token) == []
    finally:
        for pid in _marked(token):
            os.kill(pid, signal.SIGKILL)
        if driver.poll() is None:
            driver.kill()
            driver.wait()


@pytest.mark.parametrize("identity", IDENTITIES)
def test_a_command_whose_air_died_at_the_fork_never_runs_on(identity: str, tmp_path: Path) -> None:
    """Before the life pipe, 4 runs of 4 left bwrap and ``sleep 600`` running for good (until
    the next ``air`` start's recovery), unmarked; over a dropped link, the remote executor's."""
    unprivileged = identity == "nobody"
    where = unprivileged_dir() if unprivileged else tmp_path
    python = unprivileged_python() if unprivileged else sys.executable
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), *site.getsitepackages()]),
        "HOME": str(where),
    }
    setpriv = [f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    args = [f"600.{os.getpid()}{int(unprivileged)}{n}" for n in range(6)]
    try:
        argv = [python, "-c", SPAWN_EACH_AND_DIE, *(f"sleep {arg}" for arg in args)]
        done = subprocess.run(
            ["setpriv", *setpriv, *argv] if unprivileged else argv,
            cwd=where,
            env=env,
            capture_output=True,
            check=False,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert len(pids := done.stdout.split()) == len(args), done.stdout
        assert all(int(pid) > 0 for pid in pids)  # bwrap was forked, each time
        deadline = time.monotonic() + 5
        while any(_marked(a) for a in args) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [a for a in args if _marked(a)] == []  # neither bwrap nor its sleep
    finally:
        for pid in (p for arg in args for p in _marked(arg)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
