"""The headless run's signal policy: the first SIGINT/SIGTERM/SIGHUP (the terminal closed)
cancels the run cooperatively, a second kills every worker at once; either way the run's
reports (``--junit``, the ``--json`` summary record) are written, and the exit code says which
signal ended it: 143 for SIGTERM (128 + 15, the convention of service managers), 130 otherwise.

The console has its own (``air/cli/console.py``): it asks before it ends running work.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from typing import IO, Any

from air.cli.outlet import drain_outlets
from air.contracts.error import CliExit

__all__ = ["SignalState", "watch_signals"]


class SignalState:
    """What the signals did to the run: the first one's exit code (None: no signal came)."""

    def __init__(self) -> None:
        self.code: CliExit | None = None


def _code(signum: int) -> CliExit:
    return CliExit.TERMINATED if signum == signal.SIGTERM else CliExit.CANCELLED


async def watch_signals(
    runtime: Any,
    stderr: IO[str],
    state: SignalState,
    write_reports: Callable[[CliExit], None],
) -> None:
    """First SIGINT/SIGTERM/SIGHUP (the terminal closed): cancel cooperatively. Second: SIGKILL
    every worker, write the reports as they stand (``write_reports(code)``) and exit.

    Everything already recorded stays recorded (each event is its own committed transaction);
    ``air resume`` recovers the rest.
    """
    import trio

    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
        async for signum in signals:
            name = signal.Signals(signum).name
            if state.code is None:
                state.code = _code(signum)
                print(
                    f"air: {name}: cancelling the run (again to kill at once)",
                    file=stderr,
                    flush=True,
                )
                runtime.cancel(f"{name} received")
                continue
            print(f"air: {name}: killing every worker now", file=stderr, flush=True)
            await runtime.kill_workers()
            try:
                write_reports(state.code)
            finally:
                drain_outlets(timeout=2.0)  # what a thread writes (IMPL-OUT-2), then the exit
                os._exit(state.code)
