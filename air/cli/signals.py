"""The headless run's signal policy: the first SIGINT/SIGTERM/SIGHUP (the terminal closed)
cancels the run cooperatively, a second kills every worker at once and exits 130.

The console has its own (``air/cli/console.py``): it asks before it ends running work.
"""

from __future__ import annotations

import os
import signal
from typing import IO, Any

__all__ = ["watch_signals"]


async def watch_signals(runtime: Any, stderr: IO[str]) -> None:
    """First SIGINT/SIGTERM/SIGHUP (the terminal closed): cancel cooperatively. Second: SIGKILL
    every worker and exit 130.

    Everything already recorded stays recorded (each event is its own committed transaction);
    ``air resume`` recovers the rest.
    """
    import trio

    from air.contracts.error import CliExit

    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
        count = 0
        async for signum in signals:
            count += 1
            name = signal.Signals(signum).name
            if count == 1:
                print(
                    f"air: {name}: cancelling the run (again to kill at once)",
                    file=stderr,
                    flush=True,
                )
                runtime.cancel(f"{name} received")
                continue
            print(f"air: {name}: killing every worker now", file=stderr, flush=True)
            await runtime.kill_workers()
            stderr.flush()
            os._exit(CliExit.CANCELLED)
