"""``air resume [--session SID]``: recover a session and finish its task graph.

Owns: ``run_resume`` (the command body). Recovery (SDD §16.3) runs first: orphaned workers
recorded in the log are reaped, their agents recorded lost, tasks that were running become
``interrupted`` and run again; completed tasks are never run twice. Then the Scheduler runs
the remaining graph exactly as ``air run --headless`` does (same options, output and exit
codes).

Usage line (wired by ``air/cli/__init__.py``)::

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


USAGE = """Usage:
  air-resume [--session SID] [--project PATH] [--provider NAME] [--cassette PATH] [--max-workers N] [--permission-mode MODE] [--isolation MODE] [--review] [--json] [--junit FILE] [--fake-script FILE]

Options:
  --session SID           The session to resume (default: the most recent one).
  --project PATH          The project directory (default: the current directory).
  --provider NAME         The model provider of the session.
  --cassette PATH         A cassette for the scripted provider.
  --max-workers N         At most N workers at once.
  --permission-mode MODE  default | allow-ask (see air run).
  --isolation MODE        auto | main | worktree | isolated_copy.
  --review                Review every completed code change.
  --json                  Stream every event as JSONL on stdout.
  --junit FILE            Write a JUnit XML report to FILE.
  --fake-script FILE      Dry run with scripted fake workers (testing).
"""  # noqa: E501


if __name__ == "__main__":
    from docopt import DocoptExit, docopt

    try:
        parsed = docopt(USAGE, argv=sys.argv[1:], default_help=False)
    except DocoptExit as exc:
        print(str(exc), file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT) from None
    raise SystemExit(run_resume(parsed))
