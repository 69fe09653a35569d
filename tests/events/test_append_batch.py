"""``EventStore.append_many``'s batch path (IMPL-BATCH-1): one ``executemany`` of the events rows
with the seqs AUTOINCREMENT would give, one summary-row statement per session, a duplicate id
refused by name with nothing stored, against a real session database."""

from __future__ import annotations

from pathlib import Path

import pytest

from air.contracts.error import AirException, ErrorKind
from air.contracts.event import EventSource, RuntimeEvent, new_event
from air.events.store import EventStore
from air.store.session_db import open_session_database
from air.testing.sequences import random_sequence

SRC = EventSource(kind="scheduler", id="sched")


def ev(type_: str, sid: str = "ses_B", **payload: object) -> RuntimeEvent:
    if type_ == "session.created":
        payload = {"session_id": sid, "project_id": "prj"}
    return new_event(type_, dict(payload), session_id=sid, source=SRC, route=["scheduler"])


def _summary(store: EventStore) -> list[tuple[object, ...]]:
    return [tuple(r) for r in store.db.query("SELECT * FROM session_summary ORDER BY session_id")]


def test_a_batch_leaves_the_rows_and_summary_of_one_append_per_event(tmp_path: Path) -> None:
    events = [ev("session.created")]
    events += [
        ev("user.message.created", message_id=f"m{i}", content=[{"type": "text", "text": "x"}])
        for i in range(5)
    ]
    events.append(ev("session.created", "ses_C"))
    events.append(ev("user.message.created", "ses_C", message_id="m9", content=[]))
    one = EventStore(open_session_database(tmp_path / "one.db"))
    many = EventStore(open_session_database(tmp_path / "many.db"))
    seqs_one = [one.append(e) for e in events[:3]] + [one.append(e) for e in events[3:]]
    seqs_many = many.append_many(events[:3]) + many.append_many(events[3:])
    assert seqs_many == seqs_one == list(range(1, len(events) + 1))
    assert _summary(many) == _summary(one)
    ses_b = next(r for r in _summary(many) if r[0] == "ses_B")
    assert ses_b[1:4] == (6, 1, 6)  # 6 events, first seq 1, last seq 6
    cols = "seq, id, type, payload_json, task_id, route_json, route_text"
    assert many.db.query(f"SELECT {cols} FROM events ORDER BY seq") == (
        one.db.query(f"SELECT {cols} FROM events ORDER BY seq")
    )


def test_seqs_continue_past_ones_handed_out_before(tmp_path: Path) -> None:
    """The seqs a batch assigns are AUTOINCREMENT's: never one handed out before, even when the
    top rows are gone (``sqlite_sequence`` remembers them)."""
    store = EventStore(open_session_database(tmp_path / "s.db"))
    store.append_many([ev("session.created")])
    store.append_many([ev("user.message.created", message_id=f"m{i}", content=[]) for i in (1, 2)])
    with store.db.transaction() as conn:
        conn.execute("DELETE FROM events WHERE seq = 3")
    assert store.append_many([ev("user.message.created", message_id="m3", content=[])]) == [4]


@pytest.mark.parametrize("where", ["stored before", "twice in the batch"])
def test_a_duplicate_id_is_refused_by_name_and_nothing_is_stored(
    tmp_path: Path, where: str
) -> None:
    store = EventStore(open_session_database(tmp_path / "s.db"))
    store.append(ev("session.created"))
    dup = ev("user.message.created", message_id="m1", content=[])
    batch = [ev("user.message.created", message_id="m0", content=[]), dup]
    if where == "stored before":
        store.append(dup)
    else:
        batch.append(dup)
    before = store.db.query("SELECT count(*) FROM events")[0][0]
    summary = _summary(store)
    with pytest.raises(AirException) as info:
        store.append_many(batch)
    assert info.value.kind is ErrorKind.SYSTEM_ERROR
    assert (info.value.error.metadata or {})["event_id"] == dup.id
    assert f"event {dup.id} " in info.value.error.message
    assert store.db.query("SELECT count(*) FROM events")[0][0] == before
    assert store.db.query("SELECT count(*) FROM messages WHERE id = 'm0'")[0][0] == 0
    assert _summary(store) == summary


def test_random_sessions_in_batches_equal_one_append_per_event(tmp_path: Path) -> None:
    events = random_sequence("ses_R", "prj", 300, 7)
    one = EventStore(open_session_database(tmp_path / "one.db"))
    many = EventStore(open_session_database(tmp_path / "many.db"))
    for e in events:
        one.append(e)
    for i in range(0, len(events), 37):
        many.append_many(events[i : i + 37])
    for table in ("events", "tasks", "task_attempts", "agents", "session_summary"):
        sql = f"SELECT * FROM {table} ORDER BY rowid"
        assert many.db.query(sql) == one.db.query(sql), table
