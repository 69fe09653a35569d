"""What the console's start decides before anything opens: the project, and the kind of console.

Owns ``checked_options`` (PROJECT and ``--cassette`` checked before anything opens),
``first_run`` (``air`` where no air project is found: inside a git repository its top becomes
the project, as ``air run TOP`` makes one, said in one line; outside one, what air
needs is said, exit 2; IMPL-CONSOLE-4) and ``plain_wanted`` / ``plain_reason`` (the plain
console when asked for, or when there is no screen to draw on: stdin or stdout is not a
terminal, or ``TERM=dumb``; IMPL-UI-5) and ``session_to_reopen`` (``--session SID``: its
project and id, or ``not_found``) and ``opening_text`` (what the HUD says meanwhile).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from air.cli.options import HeadlessOptions, bad, parse_options

__all__ = [
    "MAIN_CASSETTE",
    "checked_options",
    "first_run",
    "opening_text",
    "plain_reason",
    "plain_wanted",
    "session_to_reopen",
]

MAIN_CASSETTE = "main.jsonl"
"""The Main Agent's cassette in a ``--cassette DIR``."""


def checked_options(args: dict[str, Any], runner_factory: Any = None) -> HeadlessOptions:
    """The console's options, its PROJECT a directory and its ``--cassette`` one holding
    ``MAIN_CASSETTE`` (checked before anything opens; no pydantic is loaded unless one fails).

    Raises:
        AirException: ``not_found`` or ``validation_error`` naming the argument.
    """
    project = args.get("PROJECT")
    if project and not os.path.isdir(project):
        what = "is a file" if os.path.exists(project) else "does not exist"
        raise bad(
            "not_found",
            f"air run {project}: {what}, not a project directory",
            f"Open the console with `air run PROJECT_DIR`; run a batch file with "
            f"`air run --headless {project}`.",
            field="PROJECT",
        )
    options = parse_options(args, runner_factory=runner_factory)
    if options.cassette and not os.path.isdir(options.cassette):
        raise bad(
            "validation_error",
            f"--cassette {options.cassette}: the console needs a directory",
            f"Pass --cassette DIR holding {MAIN_CASSETTE} (the Main Agent's turns) and "
            "<task id>.jsonl per task, e.g. examples/calc/cassettes.",
            field="--cassette",
        )
    if options.cassette and not os.path.isfile(os.path.join(options.cassette, MAIN_CASSETTE)):
        raise bad(
            "not_found",
            f"--cassette {options.cassette}: no {MAIN_CASSETTE} (the Main Agent's turns)",
            f"Record the Main Agent's turns to {options.cassette}/{MAIN_CASSETTE}.",
            field="--cassette",
        )
    return options


def first_run(options: HeadlessOptions) -> str | None:
    """``air`` where no air project is found walking up: inside a git repository, the
    repository's top becomes the project the way ``air run TOP`` makes it one (once the
    configuration proved good, by the factory); ``options.project`` is set to it and the one
    line saying so is printed and returned (the console shows it too). None: a project exists.

    Raises:
        AirException(not_found): not inside a git repository (what air needs is said).
    """
    from air.session.project import ProjectStore

    if ProjectStore().locate(options.project) is not None:
        return None
    start = os.path.abspath(options.project)
    top = start
    while not os.path.exists(os.path.join(top, ".git")):
        parent = os.path.dirname(top)
        if parent == top:
            raise bad(
                "not_found",
                f"{start} is not inside a git repository, and no air project is here or above",
                "air keeps each task's work in git: run `git init` here (or cd into a repository) "
                "and run `air` again; `air run PATH` opens the console on a directory that is "
                "not a repository (its tasks then work on copies).",
                field="--project",
            )
        top = parent
    options.project = top
    note = f"air: no air project here yet: making {top} one (as `air run {top}` would)"
    print(note, file=sys.stderr, flush=True)
    return note


def plain_wanted(asked: bool) -> bool:
    """The plain console: asked for (``--plain``), or no screen to draw on
    (``plain_reason``)."""
    return asked or plain_reason() is not None


def plain_reason() -> str | None:
    """Why the console cannot draw a screen here: stdin or stdout is not a terminal (a pipe,
    ``</dev/null``, CI), or ``TERM=dumb``; None on a terminal that can."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return "stdin is not a terminal" if not sys.stdin.isatty() else "stdout is not a terminal"
    if os.environ.get("TERM", "") in ("", "dumb"):
        return f"TERM={os.environ.get('TERM', '')} cannot draw a screen"
    return None


def session_to_reopen(options: HeadlessOptions) -> tuple[Any, str]:
    """``--session SID``: its project (walking up from ``--project``) and the session id.

    Raises:
        AirException: ``not_found`` outside a project or for an unknown session.
    """
    from air.session.local_owner import refuse_foreign_state
    from air.session.manager import list_session_ids
    from air.session.project import ProjectStore

    sid = str(options.session_id)
    project = ProjectStore().locate(options.project)
    if project is None:
        raise bad(
            "not_found",
            f"--session {sid}: no air project at {options.project} or above it, so no "
            "session to reopen",
            f"Run `air --session {sid}` inside the session's project (or pass --project PATH); "
            "`air session list --project PATH` lists a project's sessions.",
            file=options.project,
            field="--project",
        )
    refuse_foreign_state(str(project.project_root))  # nor replays another's (IMPL-TRUST-3)
    if sid not in list_session_ids(project):
        raise bad(
            "not_found",
            f"--session {sid}: no such session in {project.project_root}",
            "Pick a session id from `air session list`, or run `air` for a new session.",
            field="--session",
        )
    return project, sid


def opening_text(options: HeadlessOptions) -> str:
    """What the HUD says while the session opens."""
    if options.session_id is None:
        return "opening the session…"
    return f"reopening {options.session_id}…"
