"""Finding a session again (issue 24 item 9): what the console offers and leaves behind.

Owns: ``earlier_sessions`` (the newest sessions of a project, read the way ``air session
list`` reads them: the summary row and task counts, never the events, and the first thing said
through the type index), ``offer_sessions`` and
``ask_which_session`` (``air`` with no argument in a project with earlier sessions lists them
and offers to continue one, like ``claude --resume`` / ``codex resume``; Enter starts a new
session, IMPL-PICK-1), ``reopen_command`` (the exact command that reopens a session as it
ran: its ``--cassette`` or ``--provider`` and, from elsewhere, its ``--project``) and
``transcript_tail`` (the last messages of the conversation, printed on the terminal after the
console's screen is gone, so closing the console never makes the answer vanish).
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TextIO

from air.contracts.display import shown

if TYPE_CHECKING:
    from air.cli.options import HeadlessOptions
    from air.contracts.project import ProjectContext

__all__ = [
    "SHOWN_SESSIONS",
    "EarlierSession",
    "ask_which_session",
    "earlier_sessions",
    "offer_sessions",
    "reopen_command",
    "transcript_tail",
]

SHOWN_SESSIONS = 5
"""How many of the newest sessions the start offers (``air session list`` has them all)."""
TAIL_MESSAGES = 4
"""How many of the conversation's last messages quitting leaves on the terminal."""
TAIL_LINES = 12
"""At most this many lines of one message in the tail (the rest: ``air --session SID``)."""


@dataclass(frozen=True)
class EarlierSession:
    """One earlier session as the start lists it."""

    session_id: str
    last_used: str
    """When its last event was recorded (local time, minutes; without one, when its database
    was last written)."""
    tasks: int
    completed: int
    first_words: str
    """The first thing the person said in it, on one line ("" when nothing was said)."""


def earlier_sessions(
    project: ProjectContext, limit: int = SHOWN_SESSIONS
) -> tuple[list[EarlierSession], int]:
    """The ``limit`` newest sessions of ``project`` (newest first) and how many it has."""
    from air.cli.history import session_ids

    ids = session_ids(project)
    return [_describe(project, sid) for sid in reversed(ids[-limit:])], len(ids)


def _describe(project: ProjectContext, sid: str) -> EarlierSession:
    from air.cli.history import session_listing

    db = os.path.join(project.local_root, "sessions", sid, "session.db")
    stamps = [os.path.getmtime(p) for p in (db, db + "-wal") if os.path.exists(p)]
    row, counts = session_listing(project, sid)  # may rebuild a stale summary row: after stamps
    used: datetime | None = None
    if row is not None:  # the log says when, not the file (a listing may have written it)
        used = datetime.fromisoformat(row.last_at.replace("Z", "+00:00")).astimezone()
    elif stamps:
        used = datetime.fromtimestamp(max(stamps), tz=UTC).astimezone()
    return EarlierSession(
        session_id=sid,
        last_used=used.strftime("%Y-%m-%d %H:%M") if used else "?",
        tasks=sum(counts.values()),
        completed=counts.get("completed", 0),
        first_words=_one_line(_text(_first_said(db, sid)), 60),
    )


def _first_said(db: str, sid: str) -> Any:
    """The content of the session's first ``user.message.created`` (None: nothing said, or its
    row cannot be read), read through the type index and a read-only connection."""
    import sqlite3

    from air.contracts.error import AirException
    from air.store.readonly import read_only_uri
    from air.store.stored_payloads import stored_payload

    try:
        conn = sqlite3.connect(read_only_uri(db), uri=True)
        try:
            row = conn.execute(
                "SELECT payload_json, seq FROM events WHERE session_id = ?"
                " AND type = 'user.message.created' ORDER BY seq LIMIT 1",
                (sid,),
            ).fetchone()
        finally:
            conn.close()
        return None if row is None else stored_payload(row[0], row[1]).get("content")
    except (sqlite3.Error, AirException):
        return None


def _text(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return str(content or "")


def _one_line(text: str, width: int) -> str:
    text = shown(" ".join(text.split()))
    return text if len(text) <= width else text[: width - 1] + "…"


@dataclass(frozen=True)
class Choice:
    """What the person chose at the start: a session to continue, a new one, or to quit."""

    session_id: str | None = None
    quit: bool = False


def offer_sessions(
    args: dict[str, Any], options: HeadlessOptions, stdin: TextIO, out: TextIO
) -> bool:
    """``air`` with no PROJECT and no ``--session``, on a terminal (not ``--plain``): offer the
    project's earlier sessions before the console opens (IMPL-PICK-1); a chosen one becomes
    ``options.session_id``.

    Returns:
        True when the person quit at the list (nothing is to be opened).
    """
    if args.get("PROJECT") or options.session_id is not None or args.get("--plain"):
        return False
    if not (stdin.isatty() and out.isatty()):
        return False  # a script or a pipe: the console opens a new session as always
    from air.session.project import ProjectStore  # not before `air run`'s first frame

    project = ProjectStore().locate(options.project)
    if project is None:
        return False  # no project: the console says so itself
    choice = ask_which_session(project, stdin, out)
    options.session_id = choice.session_id
    return choice.quit


def ask_which_session(project: ProjectContext, stdin: TextIO, out: TextIO) -> Choice:
    """List the newest sessions and ask: Enter a new session, a number continues that one,
    ``q`` quits. Asked again (at most three times) after an answer that names none.

    Returns:
        The choice; a closed input quits (nothing is opened).
    """
    shown_sessions, total = earlier_sessions(project)
    if not shown_sessions:
        return Choice()
    out.write(f"air: earlier sessions of {shown(project.name)} (newest first):\n")
    for n, s in enumerate(shown_sessions, 1):
        said = f"  “{s.first_words}”" if s.first_words else ""
        out.write(
            f"  {n}  {s.session_id}  {s.last_used}  {s.completed}/{s.tasks} tasks done{said}\n"
        )
    if total > len(shown_sessions):
        out.write(f"  … and {total - len(shown_sessions)} older (`air session list`)\n")
    last = len(shown_sessions)
    numbers = "1" if last == 1 else f"1-{last}"
    older = f" · 2-{last}: an older one" if last > 2 else " · 2: the one before" * (last == 2)
    out.write(f"Enter: a new session · 1: continue the last one{older} · q: quit\n")
    for _ in range(3):
        out.write("which? ")
        out.flush()
        line = stdin.readline()
        if not line:
            return Choice(quit=True)
        answer = line.strip().lower()
        if answer == "":
            return Choice()
        if answer in ("q", "quit"):
            return Choice(quit=True)
        if answer.isdigit() and 1 <= int(answer) <= last:
            return Choice(session_id=shown_sessions[int(answer) - 1].session_id)
        out.write(f"no session {shown(answer)!r} here: Enter, {numbers} or q\n")
    return Choice(quit=True)


def reopen_command(options: HeadlessOptions, session_id: str, project_root: str) -> str:
    """The command that reopens this session as it ran: ``air --session SID`` plus the
    ``--cassette DIR`` (or ``--provider NAME``) it talked to, and ``--project PATH`` when the
    project is not the one found by walking up from the current directory."""
    words = ["air", "--session", session_id]
    if options.cassette:
        words += ["--cassette", os.path.abspath(options.cassette)]
    elif options.provider:
        words += ["--provider", options.provider]
    here, root = os.path.realpath(os.getcwd()), os.path.realpath(project_root)
    if os.path.commonpath([here, root]) != root:
        words += ["--project", root]
    return shown(shlex.join(words))  # a path an archive named: exact on the terminal


def transcript_tail(messages: list[Any], *, width: int = 100) -> str:
    """The conversation's last ``TAIL_MESSAGES`` messages as plain lines (``you:`` / ``air:``),
    each cut to ``TAIL_LINES`` lines of at most ``width`` characters; "" when nothing was
    said."""
    picked = [m for m in messages if m.text.strip()][-TAIL_MESSAGES:]
    if not picked:
        return ""
    out = ["── the conversation's last messages ──"]
    for message in picked:
        who = "you" if message.role == "user" else "air"
        lines = [shown(line)[:width] for line in message.text.strip().splitlines()]
        if message.status != "complete":
            why = f": {shown(message.error)}" if message.error else ""
            lines.append(f"[{message.status}{why}]")
        if len(lines) > TAIL_LINES:
            lines = [*lines[: TAIL_LINES - 1], f"[… {len(lines) - TAIL_LINES + 1} more lines]"]
        out.append(f"{who}: {lines[0]}")
        out += [f"     {line}" for line in lines[1:]]
    return "\n".join(out)
