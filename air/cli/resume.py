"""``air resume [--session SID]``: recover a session and finish its task graph.

Owns: ``run_resume`` (the command body). Recovery (SDD §16.3) runs first: orphaned workers
recorded in the log are reaped, their agents recorded lost, tasks that were running become
``interrupted`` and run again; completed tasks are never run twice. Then the Scheduler runs
the remaining graph exactly as ``air run --headless`` does (same options, output and exit
codes).

Usage (in ``air/cli/__init__.py``)::

  air resume [--session SID] [--project PATH] [--provider NAME] [--cassette PATH]
             [--max-workers N] [--permission-mode MODE] [--isolation MODE] [--review]
             [--json] [--junit FILE] [--fake-script FILE]
"""

from __future__ import annotations

import sys
from typing import Any

from air.cli.run import EXIT_BAD_INPUT, parse_options, report_bad_input, run_batch_session

__all__ = ["run_resume"]


def run_resume(argv_options: dict[str, Any]) -> int:
    """``air resume``. Returns the exit code (0, 1, 2 or 130)."""
    from air.contracts import AirException

    try:
        options = parse_options({**argv_options, "BATCH": None})
    except AirException as exc:
        report_bad_input(exc, sys.stderr)
        return EXIT_BAD_INPUT
    return run_batch_session(options, None)
