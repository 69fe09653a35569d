"""``air --session SID --replay``: a past session played back in the console, read-only.

Owns ``replay``: the session's log read a page at a time as the player reaches it (the first
frame waits for one page), elapsed times taken from the log, never the wall clock; on a
terminal only (without one urwid's screen ended in a traceback: `air history` prints the log).
"""

from __future__ import annotations

import sys
from typing import Any

from air.cli.console_start import session_to_reopen
from air.cli.options import HeadlessOptions

__all__ = ["replay"]


def replay(options: HeadlessOptions) -> int:
    """``air --session SID --replay``: the session's log played back, read-only."""
    import trio

    from air.cli.doctor import setup_logging
    from air.cli.history import session_db_path
    from air.contracts.error import CliExit
    from air.projection.event_pages import EventPages
    from air.store.session_db import open_session_database

    setup_logging()

    project, session_id = session_to_reopen(options)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):  # urwid's screen needs both
        from air.contracts.error import AirException

        raise AirException.of(
            kind="validation_error",
            message="--replay plays a session in a terminal: stdin or stdout here is not one",
            user_action=(
                f"Run it in a terminal, or print the session's events with `air history "
                f"--session {session_id} --all`."
            ),
            metadata={"field": "--replay"},
        )
    db = open_session_database(session_db_path(project, session_id), must_exist=True)
    try:  # read a page at a time as the replay reaches it: the first frame waits for none
        trio.run(_play, EventPages(db, session_id))
    except BaseExceptionGroup as group:  # e.g. a damaged row reached: one error, not a group
        from air.nursery.runtime import one_error

        raise one_error(group) from None
    finally:
        db.close()
    return CliExit.OK


async def _play(events: Any) -> None:
    from air.projection import ProjectionStore, ReplayPlayer
    from air.ui_urwid.app import TuiApp

    player = ReplayPlayer(events, ProjectionStore())
    app = TuiApp(
        player.client(),
        player,
        replay=True,
        hud_extra=player.hud_text,
    )
    app.layout.now = player.log_time  # elapsed times from the log, not the wall clock
    await player.play_while(app.run)
