"""``air history`` and ``air session list``: read a project's sessions back from their databases.

Owns: finding the project and session a command means, rendering stored events as one line
each (or JSON lines) as they are read (``stream_events``: the first line is out before the
second row is read; by default the newest ``DEFAULT_LAST``, read backwards by ``seq``, with a
line saying how many older ones ``--last N`` / ``--all`` would show), and the task summary of
a session (``counts_summary`` of the ``tasks`` projection: the same facts the Scheduler and the
reporter use). `air history`'s header and `air session list` read the session's summary row
(``air.store.read_model``), never its events. Both start without pydantic or Trio
(IMPL-READ-3): the project is found from its ``project.json`` (``locate_light``; anything
unusual goes the full way, ``find_project``), and the rows are read as text through a
read-only connection; ``--json`` and a session without a current summary row take the full
way. Every text taken from an event is shown as exact text
(``air.contracts.display.shown``: a command's ``\\r``, escape sequences, bidi and zero-width
characters escaped, IMPL-UI-7); a ``--json`` line writes them as JSON escapes (``json_shown``).
Reads only; nothing here appends events.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TextIO

from air.contracts.display import json_shown, left_out_text, shown
from air.session.local_owner import refuse_foreign_state
from air.session.local_state import home_or_above, local_state_links
from air.small_file import read_small
from air.store.readonly import read_only_uri

if TYPE_CHECKING:
    from air.contracts.event import RuntimeEvent
    from air.contracts.project import ProjectContext
    from air.store.db import DatabaseManager

STATUS_ORDER = ("pending", "running", "completed", "failed", "blocked", "cancelled", "interrupted")
"""``TaskStatus``'s values in its order, without importing it (a test checks they agree)."""
PROJECT_SCHEMA = 1
"""The ``project.json`` schema ``locate_light`` reads (``PROJECT_SCHEMA_VERSION``; a test checks
they agree); any other goes the full way."""


class Project(Protocol):
    """What these commands need of a project: a ``ProjectContext`` or a ``LightProject``."""

    @property
    def name(self) -> str: ...

    @property
    def local_root(self) -> str: ...


class LightProject(NamedTuple):
    """A project as ``locate_light`` finds it."""

    name: str
    local_root: str


def find_project(path: str | None) -> ProjectContext:
    """The project at ``path`` (or found by walking up from the current directory), whose
    ``.air/local`` air recorded here: another's (unpacked, copied) is refused before any of
    its databases is opened, as the runtime refuses it (IMPL-TRUST-3)."""
    from air.contracts.error import AirException
    from air.session.project import ProjectStore

    start = os.path.abspath(path or os.getcwd())
    project = ProjectStore().locate(start)
    if project is None:
        raise AirException.of(
            kind="not_found",
            message=f"no air project at or above {start}",
            user_action="Run `air init` in the project directory, or pass --project PATH.",
        )
    refuse_foreign_state(str(project.project_root))
    return project


def locate_light(path: str | None) -> Project:
    """``find_project`` without pydantic: the nearest ``.air/shared/project.json`` read as
    ``ProjectStore.open`` reads it; a file it cannot read as a current project (and no project
    at all) goes to ``find_project``, which says what is wrong."""
    current = Path(os.path.abspath(path or os.getcwd()))
    for candidate in (current, *current.parents):
        if home_or_above(str(candidate)) is not None:
            break  # no project's place (find_project says so, or that there is none)
        project_json = candidate / ".air" / "shared" / "project.json"
        if project_json.is_file():
            if local_state_links(str(candidate)) is not None:
                break  # find_project refuses it, saying which link
            try:
                data = json.loads(read_small(project_json))
                str(data["project_id"])
                known = int(data.get("schema_version", PROJECT_SCHEMA)) == PROJECT_SCHEMA
            except (OSError, ValueError, KeyError, TypeError, RecursionError):
                known = False
            if not known:
                break
            name = str(data.get("name") or candidate.name)
            refuse_foreign_state(str(candidate))
            return LightProject(name, str(candidate / ".air" / "local"))
    return find_project(path)


def session_ids(project: Project) -> list[str]:
    """Ids of every session directory of ``project`` (oldest first by ULID), as
    ``air.session.manager.list_session_ids`` lists them."""
    root = Path(project.local_root) / "sessions"
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "session.db").is_file())


def resolve_session(project: Project, session_id: str | None) -> str:
    """``session_id`` if it exists, else the most recent session of ``project``."""
    ids = session_ids(project)
    if session_id is None:
        if not ids:
            raise _not_found(
                f"project {project.name!r} has no sessions yet",
                "Start one with `air run --headless BATCH` or `air demo`.",
            )
        return ids[-1]
    if session_id not in ids:
        raise _not_found(
            f"no session {session_id!r} in project {project.name!r}",
            "List the sessions with `air session list`.",
        )
    return session_id


def _not_found(message: str, user_action: str) -> Exception:
    from air.contracts.error import AirException  # only when there is something to say

    return AirException.of(kind="not_found", message=message, user_action=user_action)


def session_db_path(project: Project, session_id: str) -> Path:
    return Path(project.local_root) / "sessions" / session_id / "session.db"


UNREADABLE = "unreadable (a damaged row: `air doctor` reports it)"
"""What is printed for a stored event that cannot be decoded, in its place."""

DEFAULT_LAST = 500
"""How many of a session's newest events ``air history`` prints unless told (the console's
lists keep as many, IMPL-READ-7): a long session's screen, not its whole log."""


_SQLITE_MAX = (1 << 63) - 1


def window(args: Mapping[str, Any]) -> int | None:
    """How many of the newest events ``--last N`` / ``--all`` ask for (None: every one).

    Raises:
        AirException: ``validation_error`` for an ``N`` that is not a positive integer.
    """
    if args.get("--all"):
        return None
    value = args.get("--last")
    if value is None:
        return DEFAULT_LAST
    try:
        last = int(value)
    except ValueError:
        last = 0
    if last > _SQLITE_MAX:  # more than any session holds: every event (SQLite's LIMIT is 64-bit)
        return None
    if last < 1:
        from air.contracts.error import AirException

        raise AirException.of(
            kind="validation_error",
            message=f"--last must be a positive integer, not {value!r}",
            user_action="Pass --last N with N >= 1, or --all for every event.",
        )
    return last


def _rows(columns: str, last: int | None) -> str:
    """The query of a session's events (its id the first parameter), oldest first: every one,
    or the newest ``last`` (the second parameter), read backwards by ``seq`` and no further."""
    if last is None:
        return f"SELECT {columns} FROM events WHERE session_id = ? ORDER BY seq"
    newest = "SELECT * FROM events WHERE session_id = ? ORDER BY seq DESC LIMIT ?"
    return f"SELECT {columns} FROM ({newest}) ORDER BY seq"


def _params(session_id: str, last: int | None) -> tuple[Any, ...]:
    return (session_id,) if last is None else (session_id, last)


def left_out(events: int, last: int | None) -> str | None:
    """The line saying how many older events a ``window`` leaves out (None: none)."""
    if last is None or events <= last:
        return None
    return (
        f"… {events - last} earlier events not shown (the newest {last}): "
        "--last N shows more, --all every one"
    )


def stream_events(
    db: DatabaseManager, session_id: str, last: int | None = None
) -> Iterator[RuntimeEvent]:
    """The session's events (or its newest ``last``), oldest first, read row by row as they
    are consumed."""
    from air.contracts.error import AirException
    from air.events.store import record_to_event

    cursor = db.conn.execute(_rows("*", last), _params(session_id, last))
    names = [d[0] for d in cursor.description]
    while rows := cursor.fetchmany(256):
        for row in rows:
            record = dict(zip(names, row, strict=True))
            try:
                yield record_to_event(record)
            except AirException:  # a damaged row: the rest still prints
                print(f"air history: event {record['seq']}: {UNREADABLE}", file=sys.stderr)


def _text_of(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict)).strip()
    return str(content or "")


_SPACES = re.compile(r"(?:[ \t\n]|\r\n)+")


def _short(text: str, width: int = 90, *, exact: bool = False) -> str:
    """``text`` on one line, cut to ``width``: free text has its runs of spaces, tabs and
    newlines folded to one space; ``exact`` text (a command) keeps every character. Whatever
    else it holds is escaped (``shown``)."""
    if not exact:
        text = _SPACES.sub(" ", text).strip(" ")
    text = shown(text)
    return text if len(text) <= width else text[: width - 1] + "…"


def describe_payload(t: str, p: dict[str, Any]) -> str:
    """One human line for an event of type ``t`` with payload ``p``: the facts a person scans
    for."""
    if t in ("user.message.created", "assistant.message.created"):
        return _short(_text_of(p.get("content")))
    if t == "task.created":
        spec = p.get("task_spec") or {}
        return f"{spec.get('id')} [{spec.get('type')}] {shown(str(spec.get('title')))}"
    if t.startswith("task."):
        extra = ""
        result = p.get("worker_result") or {}
        if result.get("summary"):
            extra = f": {_short(str(result['summary']), 70)}"
        elif p.get("error"):
            extra = f": {_short(str(p['error'].get('message')), 70)}"
        elif p.get("reason"):
            extra = f": {_short(str(p['reason']), 70)}"
        return f"{p.get('task_id')}{extra}"
    if t == "agent.started":
        return (
            f"{p.get('agent_id')} {p.get('agent_type')} pid={p.get('pid')} for {p.get('task_id')}"
        )
    if t.startswith("agent."):
        return f"{p.get('agent_id')} exit={p.get('exit_code')}"
    if t == "tool.started":
        return (
            f"{p.get('tool_run_id')} {p.get('tool_name')} {_short(json.dumps(p.get('input')), 60)}"
        )
    if t == "tool.completed":
        summary = _short(str(p.get("output_summary") or ""), 60)
        return f"{p.get('tool_run_id')} {p.get('duration_ms')} ms {summary}"
    if t in ("tool.failed", "command.failed", "agent.failed", "agent.lost"):
        err = p.get("error") or {}
        who = p.get("tool_run_id") or p.get("command_run_id") or p.get("agent_id")
        return f"{who}: {_short(str(err.get('message')), 70)}"
    if t == "command.started":
        return f"{p.get('command_run_id')} $ {_short(str(p.get('command')), 70, exact=True)}"
    if t == "command.completed":
        return f"{p.get('command_run_id')} exit={p.get('exit_code')} {p.get('duration_ms')} ms"
    if t == "artifact.created":
        name = shown(os.path.basename(str(p.get("path"))))
        return f"{p.get('artifact_id')} {p.get('type')} {p.get('size_bytes')} B {name}"
    if t == "evidence.created":
        return f"{p.get('kind')}: {_short(str(p.get('claim')), 70)}"
    if t.startswith("workspace."):
        parts = [p.get("workspace_id"), p.get("strategy"), p.get("merge_commit")]
        line = " ".join(str(x) for x in parts if x)
        note = left_out_text(p.get("left_out") or [], int(p.get("left_out_count") or 0))
        note = note if len(note) <= 160 else note[:159] + "…"
        if note and p.get("left_out_dir"):
            note += f" (a copy: {shown(str(p['left_out_dir']))})"
        return f"{line}; {note}" if note else line
    if t == "permission.decision.recorded" and isinstance(p.get("decision"), dict):
        decision = p["decision"]
        said = f"{decision.get('action')} {p.get('tool_name')} "
        said += _short(str(p.get("subject") or ""), 50, exact=True)
        return f"{said}: {_short(str(decision.get('reason') or ''), 110)}"
    if t.startswith("permission."):
        return _short(json.dumps(p, default=str), 90)
    if t == "session.created":
        return f"{p.get('session_id')} mode={p.get('mode')}"
    return _short(json.dumps(p, default=str), 90)


def counts_summary(counts: Mapping[str, int]) -> str:
    """``N tasks`` and, when there are any, how many are in each status (fold order)."""
    tasks = sum(counts.values())
    parts = [f"{counts[s]} {s}" for s in STATUS_ORDER if counts.get(s)]
    return f"{tasks} tasks" + (f" ({', '.join(parts)})" if parts else "")


def print_history(events: Iterable[RuntimeEvent], out: TextIO, *, as_json: bool = False) -> None:
    for event in events:
        if as_json:
            out.write(json_shown(event.model_dump_json()) + "\n")
            continue
        clock = event.timestamp[11:23]
        line = _described(event.type, event.payload)
        out.write(f"{clock}  {event.type:<28} {shown(line)}\n")


def _described(event_type: str, payload: Any) -> str:
    """``describe_payload``, or ``UNREADABLE`` when ``payload`` is no JSON object or its fields
    are not what the event type has (a damaged or hand-edited row)."""
    if not isinstance(payload, dict):
        return UNREADABLE
    try:
        return describe_payload(event_type, payload)
    except (ValueError, TypeError, AttributeError, KeyError):
        return UNREADABLE


def _print_rows(
    path: Path, session_id: str, header: list[str], out: TextIO, last: int | None
) -> bool:
    """The header lines, then a line per stored event (of the newest ``last``) read as text
    through a read-only connection (no event model built). False when the database cannot be
    read that way (nothing was printed then)."""
    try:
        conn = sqlite3.connect(read_only_uri(path), uri=True)
    except sqlite3.Error:
        return False
    try:
        cursor = conn.execute(
            _rows("timestamp, type, payload_json", last), _params(session_id, last)
        )
        out.write("".join(f"{line}\n" for line in header))
        out.flush()  # the header is out before the first row is read
        while rows := cursor.fetchmany(256):
            for timestamp, event_type, payload in rows:
                try:
                    found = json.loads(payload)
                except ValueError:
                    found = None
                line = _described(event_type, found)
                out.write(f"{timestamp[11:23]}  {event_type:<28} {shown(line)}\n")
        return True
    except sqlite3.Error:
        return False
    finally:
        conn.close()


def _header(project: Project, session_id: str, events: int, counts: Mapping[str, int]) -> str:
    return (
        f"session {session_id} of project {project.name!r}: {events} events, "
        f"{counts_summary(counts)}"
    )


def run_history(args: dict[str, Any]) -> int:
    from air.store.read_model import peek_summary

    last = window(args)
    project = locate_light(args["--project"])
    session_id = resolve_session(project, args["--session"])
    path = session_db_path(project, session_id)
    if not args["--json"]:
        peeked = peek_summary(path, session_id)
        if peeked is not None:
            events = peeked[0].events
            header = [_header(project, session_id, events, peeked[1])]
            header += filter(None, [left_out(events, last)])
            if _print_rows(path, session_id, header, sys.stdout, last):
                return 0
    return _history_full(args, project, session_id, last)


def _history_full(args: dict[str, Any], project: Project, session_id: str, last: int | None) -> int:
    """``air history`` through the database opened (migrated, the summary row rebuilt) and the
    events as models: ``--json`` (what a window leaves out is said on stderr), and a session
    without a current summary row."""
    from air.store.read_model import read_summary, scheduler_task_counts
    from air.store.session_db import open_session_database

    db = open_session_database(session_db_path(project, session_id), must_exist=True)
    try:
        row = read_summary(db, session_id)
        count = row.events if row is not None else 0
        note = left_out(count, last)
        if args["--json"]:
            if note is not None:
                print(note, file=sys.stderr)
        else:
            print(_header(project, session_id, count, scheduler_task_counts(db, session_id)))
            if note is not None:
                print(note)
            sys.stdout.flush()  # the header is out before the first row is read
        print_history(stream_events(db, session_id, last), sys.stdout, as_json=bool(args["--json"]))
    finally:
        db.close()
    return 0


def session_listing(project: Project, sid: str) -> tuple[Any, dict[str, int]]:
    """A session's summary row (None: no event) and task counts: read-only when the row is
    there and current, else the database is opened (migrated) and the row rebuilt."""
    from air.store.read_model import peek_summary, read_summary, scheduler_task_counts

    path = session_db_path(project, sid)
    peeked = peek_summary(path, sid)
    if peeked is not None:
        return peeked
    from air.store.session_db import open_session_database  # an old or stale one only

    db = open_session_database(path, must_exist=True)
    try:
        return read_summary(db, sid), scheduler_task_counts(db, sid)
    finally:
        db.close()


def run_session_list(args: dict[str, Any]) -> int:
    project = locate_light(args["--project"])
    ids = session_ids(project)
    if not ids:
        print(f"project {project.name!r} has no sessions yet")
        return 0
    for sid in ids:
        row, counts = session_listing(project, sid)
        tasks = sum(counts.values())
        done = counts.get("completed", 0)
        started = row.first_at if row is not None else "?"
        last = row.last_type if row is not None else "-"
        events = row.events if row is not None else 0
        print(
            f"{sid}  started {started}  {events:>5} events  {tasks:>3} tasks "
            f"({done} completed)  last: {last}",
            flush=True,
        )
    return 0
