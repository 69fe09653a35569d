"""Replay property: the domain tables are a pure function of the stored events (SDD §5, §18.2)."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from air.contracts.error import AirException
from air.events.store import EventStore, replay_events
from air.store.integrity import dump_tables
from air.store.repositories import SessionStore
from air.store.schema import DOMAIN_TABLES
from air.store.session_db import open_session_database
from air.testing.sequences import SessionSimulator, drawn_sequence


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data(), length=st.integers(min_value=1, max_value=60), batch=st.booleans())
def test_replay_reproduces_every_domain_table(
    data: st.DataObject, length: int, batch: bool
) -> None:
    events = drawn_sequence(data, "ses_A", "prj_A", length)

    with tempfile.TemporaryDirectory() as tmp:
        db_a = open_session_database(Path(tmp) / "a.db")
        db_b = open_session_database(Path(tmp) / "b.db")
        try:
            store_a = EventStore(db_a)
            if batch:
                store_a.append_many(events)
            else:
                for event in events:
                    store_a.append(event)
                    if data.draw(st.integers(0, 9)) == 0:
                        # a rejected event in between must leave no trace
                        with pytest.raises(AirException):
                            store_a.append(
                                SessionSimulator("ses_A", "prj_A").event(
                                    "tool.completed", {"tool_run_id": "nope"}
                                )
                            )
            records = SessionStore(db_a).events.list_all()
            assert len(records) == len(events)
            assert replay_events(records, db_b) == len(events)
            dump_a, dump_b = dump_tables(db_a), dump_tables(db_b)
            for table in DOMAIN_TABLES:
                assert dump_a[table] == dump_b[table], table
            # the projection actually produced rows (the property is not vacuous)
            assert len(dump_a["sessions"]) == 1
            assert SessionStore(db_b).referential_check().clean
        finally:
            db_a.close()
            db_b.close()


def test_replay_of_a_long_random_session_matches_row_for_row(tmp_path: Path) -> None:
    sim_events = []
    sim = SessionSimulator("ses_L", "prj_L")
    rnd = random.Random(7)
    sim_events.append(sim.start())
    while len(sim_events) < 600:
        sim_events += sim.step(rnd.choice, rnd)
    db_a = open_session_database(tmp_path / "a.db")
    db_b = open_session_database(tmp_path / "b.db")
    EventStore(db_a).append_many(sim_events)
    replay_events(SessionStore(db_a).events.list_all(), db_b)
    dump_a = dump_tables(db_a)
    assert dump_a == dump_tables(db_b)
    for table in ("tasks", "task_attempts", "agents", "tool_runs", "command_runs", "workspaces"):
        assert dump_a[table], f"{table} stayed empty: the generator does not cover it"
    db_a.close()
    db_b.close()
