"""A Ctrl-Z of a run (IMPL-STOP-1): everything below air stops with it and continues with it,
and the time stopped is off the run's clock. Real processes, real signals, real ``/proc``
(the whole thing at a real terminal: tests/cli/test_ctrl_z_tmux.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from air.ipc.procs import hold_below, release
from tests.processes import process_state

# a run whose one task sleeps 1 s on the run's clock: what it says is the Trio time and the
# wall time that sleep took
RUN = """
import sys, time, trio
from air.ipc.suspend import run_stoppable
async def main():
    print("ready", flush=True)
    t0, w0 = trio.current_time(), time.monotonic()
    await trio.sleep(1.0)
    return trio.current_time() - t0, time.monotonic() - w0
trio_s, wall_s = run_stoppable(main)
print(f"{trio_s} {wall_s}", flush=True)
"""


def _wait_state(pid: int, want: str) -> None:
    for _ in range(500):
        if process_state(pid) == want:
            return
        time.sleep(0.01)
    raise AssertionError(f"{pid} is {process_state(pid)}, not {want}")


def _tree(tmp_path: Path) -> tuple[subprocess.Popen[bytes], list[int]]:
    """A shell with two children in groups and sessions of their own (as a worker and a
    sandbox), one with a grandchild: the PIDs below the shell."""
    pids = tmp_path / "pids"
    script = (
        f"setsid sleep 60 & echo $! >> {pids}; "
        f"setsid sh -c 'sleep 60 & echo $! >> {pids}; wait' & echo $! >> {pids}; wait"
    )
    shell = subprocess.Popen(["sh", "-c", script])
    for _ in range(500):
        if pids.exists() and len(pids.read_text().split()) == 3:
            break
        time.sleep(0.01)
    return shell, sorted(int(p) for p in pids.read_text().split())


def test_everything_below_is_held_and_continued_and_nothing_else(tmp_path: Path) -> None:
    shell, below = _tree(tmp_path)
    bystander = subprocess.Popen(["sleep", "60"])  # this process's, not below the shell
    try:
        held = hold_below(shell.pid)
        assert sorted(h.pid for h in held) == below
        for pid in below:
            _wait_state(pid, "T")  # a signal is taken when its process next runs
        assert process_state(shell.pid) != "T"  # the root stops itself, as the terminal asked
        assert process_state(bystander.pid) != "T"
        release(held)
        for pid in below:
            _wait_state(pid, "S")
    finally:
        for pid in below:
            os.kill(pid, signal.SIGKILL)
        bystander.kill()
        shell.wait()
        bystander.wait()


def test_what_was_stopped_before_stays_stopped(tmp_path: Path) -> None:
    """A process someone else stopped (a debugger's) is not continued by the run's ``fg``."""
    shell, below = _tree(tmp_path)
    try:
        os.kill(below[0], signal.SIGSTOP)
        _wait_state(below[0], "T")
        held = hold_below(shell.pid)
        assert sorted(h.pid for h in held) == below[1:]
        release(held)
        for pid in below[1:]:
            _wait_state(pid, "S")
        assert process_state(below[0]) == "T"
    finally:
        for pid in below:
            os.kill(pid, signal.SIGKILL)
        shell.wait()


def _start_run(*, own_session: bool, stop_ignored: bool = False) -> subprocess.Popen[str]:
    """The run: its own session (no shell could continue it) or, as a shell starts a job, its
    own process group in this session; ``stop_ignored``: started with SIGTSTP ignored."""
    run = subprocess.Popen(
        [sys.executable, "-c", RUN], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=own_session, process_group=None if own_session else 0,
        preexec_fn=(lambda: signal.signal(signal.SIGTSTP, signal.SIG_IGN)) if stop_ignored
        else None,
    )  # fmt: skip
    assert run.stdout is not None
    assert run.stdout.readline() == "ready\n"
    return run


def test_the_time_stopped_is_off_the_runs_clock() -> None:
    """Stopped for 1.5 s in the middle of a 1 s sleep on the run's clock: the sleep took 1 s
    of the run's time and over 2.5 s of the wall's."""
    run = _start_run(own_session=False)
    try:
        time.sleep(0.3)
        os.kill(run.pid, signal.SIGTSTP)
        _wait_state(run.pid, "T")
        time.sleep(1.5)
        os.kill(run.pid, signal.SIGCONT)
        out, err = run.communicate(timeout=30)
    finally:
        run.kill()
    trio_s, wall_s = (float(x) for x in out.split())
    assert wall_s > 2.3
    assert 1.0 <= trio_s < 1.5, (trio_s, wall_s)
    assert "air: stopped with its 0 processes" in err
    assert "air: continued after" in err


def test_a_stop_no_shell_could_continue_is_not_taken() -> None:
    """In an orphaned process group (no shell of its session to say ``fg``: a run started with
    setsid, its terminal gone) the kernel discards the stop: the run goes on."""
    run = _start_run(own_session=True)
    try:
        os.kill(run.pid, signal.SIGTSTP)
        out, err = run.communicate(timeout=30)
    finally:
        run.kill()
    trio_s, wall_s = (float(x) for x in out.split())
    assert run.returncode == 0, err
    assert trio_s == pytest.approx(wall_s, abs=0.2)
    assert "air: continued after 0.0 s stopped" in err


def test_a_stop_ignored_by_whoever_started_air_stays_ignored() -> None:
    """A supervisor that starts air with SIGTSTP ignored keeps it so (job control's
    convention): a SIGTSTP neither stops the run nor holds anything."""
    run = _start_run(own_session=False, stop_ignored=True)
    try:
        os.kill(run.pid, signal.SIGTSTP)
        out, err = run.communicate(timeout=30)
    finally:
        run.kill()
    assert run.returncode == 0, err
    trio_s, wall_s = (float(x) for x in out.split())
    assert trio_s == pytest.approx(wall_s, abs=0.2)
    assert "air: stopped" not in err


def test_a_closed_stderr_neither_ends_the_run_nor_leaves_it_stopped() -> None:
    """``air run ... 2>&1 | head -1``: the words cannot be written; raised in the handler, that
    would end whatever the run was doing at the signal."""
    run = _start_run(own_session=False)
    assert run.stderr is not None
    run.stderr.close()  # the reader is gone: a write gets EPIPE
    try:
        os.kill(run.pid, signal.SIGTSTP)
        _wait_state(run.pid, "T")
        os.kill(run.pid, signal.SIGCONT)
        out = run.stdout.read() if run.stdout else ""
        assert run.wait(timeout=30) == 0
    finally:
        run.kill()
    trio_s, _wall_s = (float(x) for x in out.split())
    assert 1.0 <= trio_s < 1.5


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "polling"])
def test_the_watcher_continues_what_was_held_once_air_is_gone(pidfd: bool) -> None:
    """What ``kill -9`` of a stopped run leaves: the watcher sees air gone (by a pidfd, or
    where the kernel has none by ``/proc``) and continues what was held."""
    from air.ipc.suspend import _WATCH

    air = subprocess.Popen(["sleep", "0.5"])  # stands for air: gone in half a second
    held = subprocess.Popen(["sleep", "60"])
    try:
        os.kill(held.pid, signal.SIGSTOP)
        _wait_state(held.pid, "T")
        code = ("import os\ndel os.pidfd_open\n" if not pidfd else "") + _WATCH
        watcher = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", code, str(air.pid), str(held.pid)]
        )
        assert process_state(held.pid) == "T"
        air.wait()  # reaped: gone for the pidfd and for /proc alike
        assert watcher.wait(timeout=30) == 0
        _wait_state(held.pid, "S")
    finally:
        held.kill()
        held.wait()


# the console's run (``foreground``) in an orphaned process group of a session whose terminal
# has another group in front: its stop is discarded, so is every stop it tries to wait in
LEADER = """
import fcntl, os, subprocess, sys, termios, time
slave, run, out = sys.argv[1:4]
os.setsid()
fcntl.ioctl(os.open(slave, os.O_RDWR), termios.TIOCSCTTY, 0)  # this session's terminal
middle = os.fork()
if middle == 0:  # a group of its own: the run's parent until it leaves
    os.setpgid(0, 0)
    with open(out, "w") as fh:
        subprocess.Popen([sys.executable, "-c", run], stdout=fh, stderr=fh)
    os._exit(0)
os.waitpid(middle, 0)  # gone: the run's group has no parent in the session, orphaned
time.sleep(60)  # the leader stays: the terminal stays the session's, its own group in front
"""


def test_the_console_waits_for_fg_only_where_a_shell_could_say_it(tmp_path: Path) -> None:
    import pty

    master, slave = pty.openpty()
    out = tmp_path / "out"
    run = RUN.replace("run_stoppable(main)", "run_stoppable(main, foreground=True)")
    leader = subprocess.Popen(
        [sys.executable, "-c", LEADER, os.ttyname(slave), run, str(out)], stdin=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 30
        while "ready" not in (out.read_text() if out.exists() else ""):
            assert time.monotonic() < deadline, "the run never started"
            time.sleep(0.05)
        [pid] = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _runs(p)]
        os.kill(pid, signal.SIGTSTP)
        while not _times(out.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)  # the run's last line: it ended
    finally:
        leader.kill()
        leader.wait()
        os.close(master)
        os.close(slave)
    said = out.read_text()
    assert said.count("the console runs in the foreground only") == 1, said
    assert "air: continued after 0.0 s stopped" in said
    [times] = _times(said)
    trio_s, wall_s = (float(x) for x in times.split())
    assert trio_s == pytest.approx(wall_s, abs=0.2)  # it went on, not stopped


def _runs(proc: Path) -> bool:
    try:
        argv = (proc / "cmdline").read_bytes()
    except OSError:
        return False
    return b"foreground=True" in argv and b"TIOCSCTTY" not in argv  # the run, not its leader


def _times(said: str) -> list[str]:
    return [line for line in said.splitlines() if line[:1].isdigit()]
