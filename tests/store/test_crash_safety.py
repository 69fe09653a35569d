"""Crash safety with real processes: SIGKILL a writer at >= 100 random moments (SDD §18.2).

A fork server (``crash_child.py``) imports air once and forks one writer per round; the writer
appends events (single and batched) and creates artifacts, acknowledging each committed one in
``acks.log`` only after the call returned. After every kill the session DB is reopened and must
hold every acknowledged event with its projection, pass ``PRAGMA integrity_check`` and
``referential_check()``; every 25 kills (and at the end) a full replay must reproduce the
domain tables exactly, which proves no transaction was applied partially.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from air.artifacts.store import ArtifactStore, recover_orphan_artifacts
from air.events.store import EventStore, replay_events
from air.session.manager import SessionManager
from air.session.project import ProjectStore
from air.store.db import DatabaseManager
from air.store.integrity import dump_tables
from air.store.repositories import SessionStore
from air.store.session_db import open_session_database

CHILD = Path(__file__).with_name("crash_child.py")
KILLS = 110


class LineReader:
    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buf = b""

    def readline(self, timeout: float = 10.0) -> str:
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            assert left > 0, "the fork server did not answer in time"
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                chunk = os.read(self.fd, 4096)
                assert chunk, "the fork server exited"
                self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line.decode()


def _ack_lines(ack_path: Path) -> list[str]:
    """The whole acknowledgement lines: a SIGKILL in the middle of the writer's ``os.write`` of a
    batch's lines (the kernel stops a write to a file between pages) leaves a last line without
    its newline, which acknowledges nothing."""
    if not ack_path.exists():
        return []
    return ack_path.read_text().split("\n")[:-1]


def _drop_partial_ack(ack_path: Path) -> None:
    """Cut a killed writer's unfinished last line, so the next writer's lines start their own."""
    if ack_path.exists():
        data = ack_path.read_bytes()
        ack_path.write_bytes(data[: data.rfind(b"\n") + 1])


def _wait_for_acks(
    ack_path: Path,
    before: list[str],
    *,
    writes: int,
    artifact: bool,
    proc: subprocess.Popen[bytes],
    timeout: float = 60.0,
) -> None:
    """Return once the writer acknowledged ``writes`` lines (and an artifact) past ``before``."""
    deadline = time.monotonic() + timeout
    while True:
        new = _ack_lines(ack_path)[len(before) :]
        if len(new) >= writes and (not artifact or any(n.startswith("art ") for n in new)):
            return
        assert proc.poll() is None, "the fork server exited"
        assert time.monotonic() < deadline, f"the writer acknowledged only {len(new)} writes"
        time.sleep(0.002)


def _check_projection(store: SessionStore, etype: str, payload: dict[str, Any]) -> None:
    if etype == "task.created":
        assert store.tasks.get(payload["task_spec"]["id"]) is not None
    elif etype in ("task.completed", "task.cancelled"):
        row = store.tasks.get(payload["task_id"])
        assert row is not None
        assert row["status"] == etype.split(".")[1]
    elif etype == "task.started":
        assert store.task_attempts.get((payload["task_id"], payload["attempt_index"])) is not None
    elif etype == "agent.started":
        assert store.agents.get(payload["agent_id"]) is not None
    elif etype in ("agent.completed", "agent.failed", "agent.cancelled"):
        row = store.agents.get(payload["agent_id"])
        assert row is not None
        assert row["status"] == etype.split(".")[1]
    elif etype == "tool.started":
        assert store.tool_runs.get(payload["tool_run_id"]) is not None
    elif etype in ("tool.completed", "tool.failed", "tool.cancelled"):
        row = store.tool_runs.get(payload["tool_run_id"])
        assert row is not None
        assert (
            row["status"]
            == {"completed": "ok", "failed": "error", "cancelled": "cancelled"}[etype.split(".")[1]]
        )
    elif etype == "command.started":
        assert store.command_runs.get(payload["command_run_id"]) is not None
    elif etype in ("command.completed", "command.failed"):
        row = store.command_runs.get(payload["command_run_id"])
        assert row is not None
        assert row["completed_at"] is not None
    elif etype == "workspace.created":
        assert store.workspaces.get(payload["workspace_id"]) is not None
    elif etype == "user.message.created":
        assert store.messages.get(payload["message_id"]) is not None
    elif etype == "summary.created":
        assert store.summaries.get(payload["summary_id"]) is not None
    elif etype == "evidence.created":
        assert store.evidence.get(payload["evidence_ref_id"]) is not None
    elif etype == "diagnostic.created":
        assert store.diagnostics.get(payload["diagnostic_id"]) is not None


def _verify(db_path: Path, ack_path: Path, checked: set[str], tmp: Path, replay: bool) -> int:
    db = open_session_database(db_path)
    try:
        assert db.integrity_check() == "ok"
        store = SessionStore(db)
        report = store.referential_check()
        assert report.clean, report
        rows = {r["id"]: r for r in store.events.list_all()}
        for line in _ack_lines(ack_path):
            if line in checked:
                continue
            parts = line.split(" ")
            if parts[0] == "ev":
                _, seq, event_id, etype = parts
                row = rows.get(event_id)
                assert row is not None, f"acknowledged event {line} is missing"
                assert row["seq"] == int(seq)
                assert row["type"] == etype
                _check_projection(store, etype, json.loads(row["payload_json"]))
            else:
                _, artifact_id, sha = parts
                art = store.artifacts.get(artifact_id)
                assert art is not None, f"acknowledged artifact {artifact_id} is missing"
                assert hashlib.sha256(Path(art["path"]).read_bytes()).hexdigest() == sha
            checked.add(line)
        if replay:
            target = tmp / f"replay-{len(checked)}.db"
            fresh = open_session_database(target)
            replay_events(store.events.list_all(), fresh)
            assert dump_tables(fresh) == dump_tables(db)
            fresh.close()
            target.unlink()
        return len(rows)
    finally:
        db.close()


@pytest.mark.slow
def test_sigkill_at_random_moments_loses_no_acknowledged_event(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    project = ProjectStore().initialize(root)
    manager = SessionManager()
    opened = manager.open_session(project)
    session_id = opened.session_id
    db_path = Path(opened.context.db_path)
    artifact_root = Path(opened.context.artifact_root)
    manager.close_session(session_id)

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), str(root), session_id],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    reader = LineReader(proc.stdout.fileno())
    ack_path = root / "acks.log"
    rnd = random.Random(20261130)
    checked: set[str] = set()
    kills = 0
    events_seen = 0
    try:
        assert reader.readline(30) == "ready"
        for round_ in range(KILLS):
            acks_before = _ack_lines(ack_path)
            proc.stdin.write(f"run {round_}\n".encode())
            proc.stdin.flush()
            pid_line = reader.readline()
            assert pid_line.startswith("pid ")
            pid = int(pid_line.split()[1])
            assert reader.readline() == "go", "the writer died before it was killed"
            # Progress markers, not timing: on a loaded machine a writer may get no CPU in a
            # fixed sleep. Each round waits for a random number of this round's acknowledged
            # writes (0 keeps kills during start-up), every fifth for one of its artifacts,
            # then kills at a random moment after that.
            _wait_for_acks(
                ack_path,
                acks_before,
                writes=rnd.choice((0, 0, 1, 2, 4, 8)),
                artifact=round_ % 5 == 0,
                proc=proc,
            )
            time.sleep(rnd.uniform(0, 0.030))
            os.kill(pid, signal.SIGKILL)
            assert reader.readline() == "dead"
            _drop_partial_ack(ack_path)
            kills += 1
            events_seen = _verify(db_path, ack_path, checked, tmp_path, replay=kills % 25 == 0)
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)

    assert kills >= 100
    assert events_seen > kills, "the writers committed too little to make the test meaningful"
    assert sum(1 for c in checked if c.startswith("art ")) >= KILLS // 5
    _verify(db_path, ack_path, checked, tmp_path, replay=True)

    # Recovery: files renamed into place but never recorded are registered, temp files removed.
    db = open_session_database(db_path)
    try:
        events = EventStore(db)
        store = ArtifactStore(
            events,
            project_id=project.project_id,
            session_id=session_id,
            artifact_root=artifact_root,
        )
        recover_orphan_artifacts(store)
        known = {r["path"] for r in events.store.artifacts.list_all()}
        on_disk = {str(p) for p in artifact_root.iterdir()}
        assert on_disk == known
        assert events.store.referential_check().clean
    finally:
        db.close()


def test_database_manager_rolls_back_an_interrupted_transaction(tmp_path: Path) -> None:
    db = DatabaseManager.open(tmp_path / "x.db")
    db.conn.execute("CREATE TABLE t (v INTEGER)")
    try:
        with db.transaction() as conn:
            conn.execute("INSERT INTO t VALUES (1)")
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    assert db.conn.execute("SELECT count(*) FROM t").fetchone()[0] == 0
    assert not db.conn.in_transaction
    db.close()
