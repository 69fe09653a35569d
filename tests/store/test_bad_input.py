"""Bad input gives an AirException with a documented kind and a user_action, and changes nothing."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from air.contracts.error import AirException, ErrorKind
from air.contracts.event import EventSource, RuntimeEvent, new_event
from air.events.bus import EventBus
from air.events.store import EventStore
from air.store.integrity import dump_tables
from air.store.repositories import SessionStore
from air.store.schema import SESSION_TABLES
from air.store.session_db import open_session_database
from air.testing.sequences import random_sequence

ALL_TABLES = tuple(SESSION_TABLES)


def _seeded(path: Path) -> tuple[EventStore, list[RuntimeEvent]]:
    db = open_session_database(path)
    store = EventStore(db)
    events = random_sequence("ses_B", "prj_B", 40, seed=3)
    store.append_many(events)
    return store, events


def _event(type_: str, payload: dict[str, object], version: int = 1) -> RuntimeEvent:
    return new_event(
        type_, payload, session_id="ses_B", source=EventSource(kind="system"), version=version
    )


def _file_bytes(path: Path) -> dict[str, bytes]:
    return {
        p.name: p.read_bytes()
        for p in sorted(path.parent.iterdir())
        if p.name.startswith(path.name)
    }


@pytest.mark.parametrize(
    ("event", "kind"),
    [
        (_event("task.teleported", {"task_id": "t"}), ErrorKind.SYSTEM_ERROR),
        (_event("task.created", {"task_spec": {"id": "t"}}, version=7), ErrorKind.SYSTEM_ERROR),
        (_event("task.created", {"task_spec": {"id": "t"}}), ErrorKind.VALIDATION_ERROR),
        (
            _event("tool.started", {"tool_run_id": "x", "tool_name": "a", "bogus": 1}),
            ErrorKind.VALIDATION_ERROR,
        ),
        (
            _event(
                "artifact.created",
                {
                    "artifact_id": "a",
                    "uri": "u",
                    "path": "p",
                    "type": "video",
                    "slug": "s",
                    "created_at": "2026-01-01T00:00:00Z",
                },
            ),
            ErrorKind.VALIDATION_ERROR,
        ),
        (_event("agent.heartbeat", {"agent_id": "a", "state": "x"}), ErrorKind.SYSTEM_ERROR),
        (_event("task.completed", {"task_id": "task_missing"}), ErrorKind.SYSTEM_ERROR),
    ],
    ids=[
        "unknown-type",
        "unknown-version",
        "invalid-payload",
        "extra-field",
        "bad-enum-payload",
        "ephemeral-type",
        "projection-failure",
    ],
)
def test_bad_event_is_refused_and_leaves_the_db_unchanged(
    tmp_path: Path, event: RuntimeEvent, kind: ErrorKind
) -> None:
    store, _ = _seeded(tmp_path / "s.db")
    store.bus = EventBus()
    sub = store.bus.subscribe(None, lambda e: None)
    before = dump_tables(store.db, ALL_TABLES)
    with pytest.raises(AirException) as info:
        store.append(event)
    assert info.value.kind is kind
    assert info.value.user_action
    assert dump_tables(store.db, ALL_TABLES) == before
    assert not sub.queue  # nothing was published
    store.append(_event("user.message.created", {"message_id": "m_ok", "content": []}))
    assert [e.type for e in sub.queue] == ["user.message.created"]


def test_a_failing_event_in_a_batch_rolls_back_the_whole_batch(tmp_path: Path) -> None:
    store, _ = _seeded(tmp_path / "s.db")
    before = dump_tables(store.db, ALL_TABLES)
    good = _event("user.message.created", {"message_id": "m_new", "content": []})
    bad = _event("tool.completed", {"tool_run_id": "tr_nope"})
    with pytest.raises(AirException) as info:
        store.append_many([good, bad])
    assert info.value.kind is ErrorKind.SYSTEM_ERROR
    assert dump_tables(store.db, ALL_TABLES) == before


def test_duplicate_event_id_is_a_system_error(tmp_path: Path) -> None:
    store, events = _seeded(tmp_path / "s.db")
    before = dump_tables(store.db, ALL_TABLES)
    dup = events[5].model_copy(
        update={
            "type": "permission.decision.recorded",
            "payload": {"decision": {"action": "allow", "reason": "r"}, "tool_name": "x"},
        }
    )
    with pytest.raises(AirException) as info:
        store.append(dup)
    assert info.value.kind is ErrorKind.SYSTEM_ERROR
    assert dump_tables(store.db, ALL_TABLES) == before


def test_bad_enum_on_a_repository_write_is_a_system_error(tmp_path: Path) -> None:
    store, _ = _seeded(tmp_path / "s.db")
    repos = SessionStore(store.db)
    task = repos.tasks.list_all()[0]
    before = dump_tables(store.db, ALL_TABLES)
    with pytest.raises(AirException) as info, store.db.transaction():
        repos.tasks.update(task["id"], {"status": "exploded"})
    assert info.value.kind is ErrorKind.SYSTEM_ERROR
    assert info.value.user_action
    assert "tasks.status" in info.value.error.message
    assert dump_tables(store.db, ALL_TABLES) == before


def test_corrupt_database_file_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "session.db"
    path.write_bytes(b"this is not sqlite at all\n" * 400)
    before = _file_bytes(path)
    with pytest.raises(AirException) as info:
        open_session_database(path)
    assert info.value.kind is ErrorKind.CORRUPT_DATABASE
    assert info.value.user_action
    assert _file_bytes(path) == before


def test_database_with_a_damaged_page_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "session.db"
    store, _ = _seeded(path)
    store.db.close()
    data = bytearray(path.read_bytes())
    data[0:16] = b"garbage garbage!"  # the header magic
    path.write_bytes(bytes(data))
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    before = _file_bytes(path)
    with pytest.raises(AirException) as info:
        open_session_database(path)
    assert info.value.kind is ErrorKind.CORRUPT_DATABASE
    assert _file_bytes(path) == before


def test_newer_schema_version_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    path = tmp_path / "session.db"
    store, _ = _seeded(path)
    store.db.close()
    raw = sqlite3.connect(path)
    raw.execute("UPDATE schema_meta SET value = '2' WHERE key = 'schema_version'")
    raw.execute(
        "UPDATE schema_meta SET value = '9.9.9' WHERE key = 'aircoding_version_last_opened'"
    )
    raw.commit()
    raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw.close()
    snapshot = sqlite3.connect(path)
    before = {t: snapshot.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall() for t in ALL_TABLES}
    snapshot.close()
    with pytest.raises(AirException) as info:
        open_session_database(path)
    assert info.value.kind is ErrorKind.SCHEMA_ERROR
    assert info.value.user_action
    assert "newer" in info.value.error.message
    after_conn = sqlite3.connect(path)
    after = {t: after_conn.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall() for t in ALL_TABLES}
    after_conn.close()
    assert after == before


def test_missing_database_with_must_exist_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(AirException) as info:
        open_session_database(tmp_path / "nope.db", must_exist=True)
    assert info.value.kind is ErrorKind.NOT_FOUND
    assert not os.path.exists(tmp_path / "nope.db")


FILE_LIMIT = """
import os, resource, signal, sys
from air.contracts.error import AirException
from air.store.session_db import open_session_database
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
db = open_session_database(sys.argv[1])
limit = os.path.getsize(sys.argv[1]) + 200_000
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
try:
    for i in range(1000):
        with db.transaction() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS t (x BLOB)")
            conn.execute("INSERT INTO t VALUES (?)", (os.urandom(20000),))
except AirException as exc:
    print(exc.kind, exc.error.message, "|", exc.user_action)
"""


def test_a_commit_the_disk_refuses_says_which_file_and_that_resume_goes_on(
    tmp_path: Path,
) -> None:
    """Found filling the disk mid-run: a commit SQLite could not write said only "SQLite could
    not commit a transaction" with "check free disk space and that no other program holds the
    database", where every other write the full disk stopped said so and that `air resume`
    finishes the run. A real write refused by the kernel (a file size limit) at the commit."""
    db = tmp_path / "session.db"
    done = subprocess.run(
        [sys.executable, "-c", FILE_LIMIT, str(db)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
    )
    assert done.stderr == ""
    kind, _, rest = done.stdout.partition(" ")
    message, _, action = rest.partition(" | ")
    assert kind == "storage_error"
    assert message == f"air could not write {db}: the disk reported an I/O error"
    assert "`air resume` finishes a run it stopped" in action
