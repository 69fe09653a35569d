"""``air resume [--session SID]``: recover a session and finish its task graph.

Owns: ``run_resume`` (the command body). Recovery (SDD §16.3) runs first: orphaned workers
recorded in the log are reaped, their agents recorded lost, tasks that were running become
``interrupted`` and run again; completed tasks are never run twice. Then the Scheduler runs
the remaining graph exactly as ``air run --headless`` does (same options, output and exit
codes): both are thin clients of ``air.nursery.runtime.open_runtime``.

Usage (in ``air/cli/__init__.py``)::

  air resume [--session SID] [--project PATH] [--provider NAME] [--cassette PATH]
             [--max-workers N] [--permission-mode MODE] [--isolation MODE] [--review]
             [--json] [--junit FILE]
"""

from __future__ import annotations

import sys
from typing import Any

from air.cli.options import RunnerFactory, parse_options, report_bad_input
from air.cli.run import run_batch_session

__all__ = ["run_resume"]


def run_resume(argv_options: dict[str, Any], runner_factory: RunnerFactory | None = None) -> int:
    """``air resume``. Returns the exit code (0, 1, 2 or 130).

    ``runner_factory`` replaces the real workers (tests only, see ``air.cli.main``)."""
    from air.contracts.error import AirException, CliExit

    try:
        options = parse_options({**argv_options, "BATCH": None}, runner_factory=runner_factory)
    except AirException as exc:
        report_bad_input(exc, sys.stderr)
        return CliExit.BAD_INPUT
    return run_batch_session(options, None)
