"""`air session list` and `air history` read the summary row and stream the log.

Real session databases written through the EventStore (``air.testing.sequences``), the real
``air`` command as a subprocess. "Reads no event" is shown by making every stored payload
unreadable: a command that parsed the log would fail.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from datetime import datetime
from pathlib import Path

import pytest

from air.cli.history import DEFAULT_LAST, UNREADABLE, stream_events
from air.cli.session_report import REPORT_TYPES, summarise
from air.contracts.error import AirException
from air.events.fold import replay
from air.events.store import EventStore, replay_events
from air.store.read_model import read_summary, scheduler_task_counts
from air.store.session_db import open_session_database
from air.testing.sequences import realistic_sequence
from tests.doctor.helpers import air, make_project

SID = "ses_01READS00000000000000000A"


def _write(project: Path, sid: str, length: int, seed: int = 7) -> tuple[Path, list]:  # type: ignore[type-arg]
    events = realistic_sequence(sid, "prj_reads", length, seed=seed)
    path = project / ".air" / "local" / "sessions" / sid / "session.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    db = open_session_database(path)
    EventStore(db).append_many(events)
    db.close()
    return path, events


def test_the_summary_row_is_kept_with_each_append_and_replayed(tmp_path: Path) -> None:
    path, events = _write(tmp_path, SID, 600)
    db = open_session_database(path)
    stored = db.query("SELECT events, first_at, last_at, last_type FROM session_summary")
    expected = (len(events), events[0].timestamp, events[-1].timestamp, events[-1].type)
    assert [tuple(r) for r in stored] == [expected]  # written by the appends themselves
    row = read_summary(db, SID)
    assert row is not None
    assert (row.events, row.first_at, row.last_at, row.last_type) == expected
    # a row behind the log (an older air appended after) is rebuilt from the log
    with db.transaction() as conn:
        conn.execute("UPDATE session_summary SET events = 1, last_seq = 1")
    assert read_summary(db, SID) == row
    assert scheduler_task_counts(db, SID) == dict(replay(events).counts)
    # a refused append changes nothing, the summary row included
    bad = events[-1].model_copy(update={"id": "00000000-0000-4000-8000-ffffffffffff"})
    with pytest.raises(AirException):
        EventStore(db).append_many([bad.model_copy(update={"type": "no.such.type"})])
    assert read_summary(db, SID) == row
    # a replay of the log into an empty database reproduces the row
    target = open_session_database(tmp_path / "replayed.db")
    replay_events(EventStore(db).query_records(), target)
    assert read_summary(target, SID) == row
    target.close()
    db.close()


def test_an_old_session_without_the_read_model_opens_and_gains_it(tmp_path: Path) -> None:
    project, home = make_project(tmp_path)
    path, events = _write(project, SID, 300)
    with sqlite3.connect(path) as conn:  # what an air from before the read model wrote
        conn.execute("DROP TABLE session_summary")
        conn.execute("DROP TABLE fold_snapshots")
    listed = air(project, home, "session", "list")
    assert listed.returncode == 0, listed.stderr
    counts = replay(events).counts
    assert f"{len(events):>5} events" in listed.stdout
    assert f"({counts.get('completed', 0)} completed)" in listed.stdout
    assert f"last: {events[-1].type}" in listed.stdout
    db = open_session_database(path)
    assert read_summary(db, SID) is not None
    assert db.query("SELECT count(*) FROM session_summary")[0][0] == 1
    db.close()


def test_session_list_and_the_history_header_read_no_event(tmp_path: Path) -> None:
    project, home = make_project(tmp_path)
    path, events = _write(project, SID, 400)
    other, _ = _write(project, "ses_01READS00000000000000000B", 50, seed=2)
    for db_path in (path, other):
        open_session_database(db_path).close()  # rows kept at append time, nothing rebuilt
        with sqlite3.connect(db_path) as conn:
            conn.execute("UPDATE events SET payload_json = 'not json', route_json = 'x'")
    listed = air(project, home, "session", "list")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"{SID}  started {events[0].timestamp}  {len(events):>5} events")
    tasks = sum(replay(events).counts.values())
    assert f"{tasks:>3} tasks" in lines[0]


def test_history_streams_the_log_row_by_row(tmp_path: Path) -> None:
    path, events = _write(tmp_path, SID, 1200)
    with sqlite3.connect(path) as conn:  # a damaged row far down the log
        conn.execute("UPDATE events SET payload_json = 'not json' WHERE seq = 1100")
    db = open_session_database(path)
    first = list(itertools.islice(stream_events(db, SID), 20))
    assert [e.id for e in first] == [e.id for e in events[:20]]
    db.close()


def test_history_prints_the_header_from_the_summary_then_every_event(tmp_path: Path) -> None:
    project, home = make_project(tmp_path)
    _, events = _write(project, SID, 200)
    done = air(project, home, "history")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    tasks = sum(replay(events).counts.values())
    assert lines[0].startswith(f"session {SID} of project 'proj': {len(events)} events, {tasks}")
    assert len(lines) == 1 + len(events)
    assert lines[1].split()[1] == "session.created"


def _line(event: object) -> tuple[str, str]:
    return event.timestamp[11:23], event.type  # type: ignore[attr-defined]


def test_history_of_a_long_session_prints_its_newest_events_and_reads_no_older_one(
    tmp_path: Path,
) -> None:
    """By default the newest ``DEFAULT_LAST`` events, oldest first, after a line saying how
    many are left out; ``--last N`` and ``--all`` choose. The older rows are never read: their
    payloads are made unreadable and the default and ``--last`` still print."""
    project, home = make_project(tmp_path)
    path, events = _write(project, SID, 1200)
    shown = DEFAULT_LAST
    with sqlite3.connect(path) as conn:
        conn.execute(
            "UPDATE events SET payload_json = 'not json' WHERE seq <= ?", (len(events) - shown,)
        )
    done = air(project, home, "history")
    assert done.returncode == 0, done.stderr
    header, note, *lines = done.stdout.splitlines()
    assert header.startswith(f"session {SID} of project 'proj': {len(events)} events")
    assert note.startswith(f"… {len(events) - shown} earlier events not shown")
    assert [tuple(line.split()[:2]) for line in lines] == [_line(e) for e in events[-shown:]]
    few = air(project, home, "history", "--last", "7")
    assert few.returncode == 0, few.stderr
    assert few.stdout.splitlines()[1].startswith(f"… {len(events) - 7} earlier events")
    assert [tuple(x.split()[:2]) for x in few.stdout.splitlines()[2:]] == [
        _line(e) for e in events[-7:]
    ]
    as_json = air(project, home, "history", "--json", "--last", "3")
    assert as_json.returncode == 0, as_json.stderr
    assert [json.loads(x)["id"] for x in as_json.stdout.splitlines()] == [e.id for e in events[-3:]]
    assert f"{len(events) - 3} earlier events not shown" in as_json.stderr
    with sqlite3.connect(path) as conn:  # readable again: --all prints every event
        for event in events[: len(events) - shown]:
            conn.execute(
                "UPDATE events SET payload_json = ? WHERE id = ?",
                (json.dumps(event.payload), event.id),
            )
    for flags in (["--all"], ["--last", "9" * 30]):  # more than SQLite's LIMIT takes: all
        every = air(project, home, "history", *flags)
        assert every.returncode == 0, every.stderr
        assert [tuple(x.split()[:2]) for x in every.stdout.splitlines()[1:]] == [
            _line(e) for e in events
        ]


def test_history_prints_around_damaged_rows(tmp_path: Path) -> None:
    """A row that is no JSON, no object, or holds a field of the wrong type is printed as
    unreadable in its place (or said on stderr with ``--json``): never a traceback."""
    project, home = make_project(tmp_path)
    path, events = _write(project, SID, 60)
    damage = {2: "not json", 3: "[1]", 4: '{"task_spec": "x"}'}
    with sqlite3.connect(path) as conn:
        for seq, payload in damage.items():
            conn.execute("UPDATE events SET payload_json = ? WHERE seq = ?", (payload, seq))
        conn.execute("UPDATE events SET type = 'task.created' WHERE seq = 4")
    text = air(project, home, "history")
    assert text.returncode == 0, text.stderr
    assert "Traceback" not in text.stderr
    lines = text.stdout.splitlines()[1:]
    assert len(lines) == len(events)
    assert [n + 1 for n, x in enumerate(lines) if x.endswith(UNREADABLE)] == sorted(damage)
    as_json = air(project, home, "history", "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert "Traceback" not in as_json.stderr
    assert len(as_json.stdout.splitlines()) == len(events) - 2  # the task spec is any JSON
    assert [f"event {seq}: {UNREADABLE}" in as_json.stderr for seq in (2, 3)] == [True, True]


def test_a_report_reads_only_its_event_types_and_gets_the_same_summary() -> None:
    events = realistic_sequence(SID, "prj_reads", 1500, seed=11)
    whole = summarise(events)
    typed = summarise([e for e in events if e.type in REPORT_TYPES])
    typed.started_at, typed.ended_at = events[0].timestamp, events[-1].timestamp
    assert typed == whole
    assert typed.usage() == whole.usage()
    assert sum(e.type in REPORT_TYPES for e in events) < len(events) // 2


def test_listing_a_current_session_writes_nothing_to_it(tmp_path: Path) -> None:
    project, home = make_project(tmp_path)
    path, _ = _write(project, SID, 100)

    def stamp() -> str:
        with sqlite3.connect(path) as conn:
            row = conn.execute("SELECT value FROM schema_meta WHERE key = 'last_opened_at'")
            return str(row.fetchone()[0])

    before = stamp()
    listed = air(project, home, "session", "list")
    assert listed.returncode == 0, listed.stderr
    assert SID in listed.stdout
    assert stamp() == before  # read through a read-only connection: not even opened for writing


def test_the_start_offers_earlier_sessions_without_reading_their_events(tmp_path: Path) -> None:
    """``air``'s list of earlier sessions (``earlier_sessions``) reads each session's summary
    row and task counts, and its first message through the type index: every other payload
    made unreadable, the session is still described, with the fold's counts."""
    from air.cli.reopen import earlier_sessions
    from air.session.project import ProjectStore

    project, _home = make_project(tmp_path)
    path, events = _write(project, SID, 600)
    counts = dict(replay(events).counts)
    said = next(e for e in events if e.type == "user.message.created")
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE events SET payload_json = 'not json' WHERE id != ?", (said.id,))
    located = ProjectStore().locate(str(project))
    assert located is not None
    listed, total = earlier_sessions(located)
    assert total == 1
    [session] = listed
    assert (session.tasks, session.completed) == (sum(counts.values()), counts.get("completed", 0))
    text = " ".join(str(block["text"]) for block in said.payload["content"])
    assert session.first_words == " ".join(text.split())
    last = datetime.fromisoformat(events[-1].timestamp.replace("Z", "+00:00")).astimezone()
    assert session.last_used == last.strftime("%Y-%m-%d %H:%M")  # the log's, not the file's
