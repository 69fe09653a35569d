"""What a Ctrl-Z does to a run (IMPL-STOP-1).

The terminal stops its foreground process group: air alone. Its workers, sandboxed commands and
servers lead sessions of their own, so a build went on using the machine while the user thought
everything waited, and the time stopped counted against every task's deadline: after ``fg``
the tasks failed ``timeout``.

Owns: ``RunClock`` (Trio's clock without the time this process spent stopped: a task's
deadline, a command's timeout, a worker's silence count only time the run could work) and
``run_stoppable`` (a Trio run on it whose SIGTSTP handler holds every process below this one,
stops as the terminal asked, and on ``fg`` / ``bg`` continues them, the pause off the clock;
the console, continued in the background, stops again still holding until ``fg``; a headless
run's stop by its own output in the background under ``stty tostop`` (SIGTTOU) holds the same
way; a watcher process continues them if air is killed while stopped).
Under the console, urwid's own handler restores the terminal first and then passes the signal
on to this one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import IO, TypeVar

import trio

from air.ipc.procs import hold_below, release

__all__ = ["RunClock", "run_stoppable"]

T = TypeVar("T")


class RunClock(trio.abc.Clock):
    """Trio's clock, less the time this process was stopped (``exclude``)."""

    def __init__(self) -> None:
        self._stopped = 0.0

    def start_clock(self) -> None:
        return None

    def current_time(self) -> float:
        return time.perf_counter() - self._stopped

    def deadline_to_sleep_time(self, deadline: float) -> float:
        return deadline - self.current_time()

    def exclude(self, seconds: float) -> None:
        """Leave ``seconds`` (a stop) off the clock from now on."""
        self._stopped += max(0.0, seconds)


def run_stoppable(
    fn: Callable[..., Awaitable[T]],
    *args: object,
    stderr: IO[str] | None = None,
    foreground: bool = False,
) -> T:
    """``trio.run(fn, *args)`` on a ``RunClock``, stopping with the run on SIGTSTP (Ctrl-Z,
    ``kill -TSTP``): hold every process below this one, stop this one as the terminal asked
    (where no shell could continue it, an orphaned process group, the kernel discards the stop:
    the run goes on), then continue what it held and leave the time stopped off the clock.
    ``stderr``: where it says so, one line each way (None: ``sys.stderr`` at the time).
    ``foreground``: the run draws on its terminal (the console): continued in the background
    (``bg``), where its first read or mode change would stop it again holding nothing, it stops
    again itself, still holding, until ``fg``."""
    clock = RunClock()

    async def stoppable() -> T:
        _stop_with_the_run(clock, stderr, foreground)  # the main thread's: the handler's
        return await fn(*args)

    return trio.run(stoppable, clock=clock)


def _in_background() -> bool:
    """Whether another process group than this one has the controlling terminal."""
    try:
        fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return False  # no terminal: nothing to wait for
    try:
        return os.tcgetpgrp(fd) != os.getpgrp()
    except OSError:
        return False
    finally:
        os.close(fd)


def _stop_with_the_run(clock: RunClock, stderr: IO[str] | None, foreground: bool) -> None:
    busy = False

    def say(line: str, settle_s: float = 1.0) -> None:
        out = stderr or sys.stderr
        try:
            print(line, file=out, flush=True)
        except (OSError, ValueError):
            pass  # stderr closed (`2>&1 | head -1`): raised here, it would end whatever ran
        settle = getattr(out, "settle", None)  # a stream a thread writes (air.cli.outlet)
        if settle is not None:
            settle(settle_s)  # written before the whole process stops

    def on_stop(signum: int, frame: FrameType | None) -> None:
        nonlocal busy
        if busy:  # a second Ctrl-Z while the first is handled
            return
        busy = True
        held = hold_below(os.getpid())
        watcher = _watch([h.pid for h in held])
        stopped = 0.0
        try:
            say(
                f"air: stopped with its {len(held)} processes; the time stopped does not count "
                "against the tasks' deadlines (`fg` continues)",
                0.0 if signum == signal.SIGTTOU else 1.0,  # it cannot be written before `fg`
            )
            before = time.perf_counter()
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)  # stops here until SIGCONT
            while foreground and _in_background():  # `bg`: the console waits for `fg`
                say("air: the console runs in the foreground only: it waits, stopped (`fg`)")
                again = time.perf_counter()
                os.kill(os.getpid(), signal.SIGTSTP)
                if time.perf_counter() - again < 0.05:
                    break  # not stopped: no shell can continue this process group
            stopped = time.perf_counter() - before
        finally:
            signal.signal(signum, on_stop)
            clock.exclude(stopped)
            release(held)  # whatever happened, nothing is left stopped
            if watcher is not None:
                watcher.kill()
                watcher.wait()
            busy = False
        say(f"air: continued after {stopped:.1f} s stopped")

    # SIGTTOU: a headless run's output in the background under `stty tostop` stopped it
    # holding nothing; it stops it as Ctrl-Z does now. The console keeps SIGTTIN / SIGTTOU's
    # default action: caught, they make the read or mode change that raised them fail (EINTR:
    # urwid's tcsetattr ended the console) instead of waiting (``foreground`` waits first)
    for signum in (signal.SIGTSTP,) if foreground else (signal.SIGTSTP, signal.SIGTTOU):
        if signal.getsignal(signum) != signal.SIG_IGN:  # whoever started air ignored it:
            signal.signal(signum, on_stop)  # kept so, as job control's convention is


# Continues the held processes once air is gone: a `kill -9 %1` of the stopped run would
# leave them stopped for good (a stopped worker never reads the end of its stdin). Run with
# -I -S: nothing of the user's site or the project's directory is imported.
_WATCH = """\
import os, select, signal, sys, time
air = int(sys.argv[1])
try:
    select.select([os.pidfd_open(air)], [], [])
except (AttributeError, OSError):  # no pidfd (a kernel before 5.3): /proc, five times a second
    def gone():
        try:
            with open(f"/proc/{air}/stat") as fh:
                return fh.read().rsplit(")", 1)[1].split()[0] in "ZX"
        except OSError:
            return True
    while not gone():
        time.sleep(0.2)
for pid in sys.argv[2:]:
    try:
        os.kill(int(pid), signal.SIGCONT)
    except OSError:
        pass
"""


def _watch(pids: list[int]) -> subprocess.Popen[bytes] | None:
    """A process of its own session (the terminal's stop does not reach it) that continues
    ``pids`` if this one dies while stopped (None: nothing held, or it could not start)."""
    if not pids:
        return None
    # a stop by its own output (SIGTTOU, tostop) goes on reaching this process group until it
    # stops: the child, ours until its setsid, would stop on it before its exec while this
    # process waits for that exec (vfork): both for ever. Blocked, it never reaches the child.
    keep = signal.pthread_sigmask(signal.SIG_BLOCK, _JOB_SIGNALS)
    try:
        return subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _WATCH, str(os.getpid()), *map(str, pids)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError:
        return None  # no process left to start: the stop goes on without it
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, keep)


_JOB_SIGNALS = {signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU}
