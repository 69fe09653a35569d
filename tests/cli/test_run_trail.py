"""A real batch in a git project leaves the full durable trail, with evidence, and the event
log replays into an empty database to the same domain tables."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Any

from air.contracts.event import EventFilter
from air.events.store import EventStore, replay_events
from air.store.integrity import dump_tables
from air.store.session_db import open_session_database
from tests.forked_air import air_cli
from tests.gitrepo import git

EXAMPLE = Path(__file__).parents[2] / "examples" / "calc"
RUN = ["run", "--headless", "batch.yaml", "--cassette", "cassettes"]
HEARTBEAT_COLUMNS = {
    "agents": ("last_heartbeat_at", "heartbeat_state", "heartbeat_turn", "heartbeat_tokens"),
    "tasks": ("heartbeat_at",),
}
"""Written straight from ephemeral heartbeats (IMPL-EVT-4): the only columns replay skips."""


def _without_heartbeats(db: Any) -> dict[str, list[tuple[Any, ...]]]:
    tables = dump_tables(db)
    for table, names in HEARTBEAT_COLUMNS.items():
        cols = [r[1] for r in db.conn.execute(f"PRAGMA table_info({table})")]
        drop = {cols.index(n) for n in names}
        tables[table] = sorted(
            tuple(v for i, v in enumerate(row) if i not in drop) for row in tables[table]
        )
    return tables


def test_batch_trail_has_evidence_and_replays_to_the_same_tables(tmp_path: Path) -> None:
    root = tmp_path / "calc"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", ".air"))
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "before")
    proc = air_cli(RUN, cwd=root, timeout=180)
    assert proc.returncode == 0, proc.stderr
    (session_dir,) = (root / ".air" / "local" / "sessions").iterdir()
    db = open_session_database(session_dir / "session.db", must_exist=True)
    try:
        store = EventStore(db)
        events = store.query(EventFilter())
        counts = Counter(e.type for e in events)
        for kind in ("agent", "task", "tool", "command", "artifact", "evidence", "workspace"):
            assert any(t.startswith(kind + ".") for t in counts), (kind, counts)
        assert counts["task.completed"] == 3
        # every completed code task is backed by test evidence from a command that exited 0
        completed = [e for e in events if e.type == "task.completed"]
        evidence = [e for e in events if e.type == "evidence.created"]
        exits = {
            e.payload["command_run_id"]: e.payload["exit_code"]
            for e in events
            if e.type == "command.completed"
        }
        for task in completed:
            task_id = task.payload["task_id"]
            proofs = [
                e
                for e in evidence
                if e.payload["entity_id"] == task_id and e.payload["kind"] == "test_output"
            ]
            assert proofs, task_id
            assert all(exits.get(p.payload["ref"]) == 0 for p in proofs), task_id
            refs = task.payload["worker_result"]["evidence_refs"]
            assert {r["evidence_ref_id"] for r in refs} >= {
                p.payload["evidence_ref_id"] for p in proofs
            }
        replayed = open_session_database(tmp_path / "replay.db")
        try:
            replay_events(store.query_records(), replayed)
            assert _without_heartbeats(replayed) == _without_heartbeats(db)
        finally:
            replayed.close()
    finally:
        db.close()
