"""Benchmark: EventStore.append / append_many against raw sqlite3 inserts, measured in one run.

Run: ``.venv/bin/python bench/events.py [--events N]``. Builds a realistic mix of durable
events (messages, tasks with attempts, agents, tool runs, command runs, artifacts) and times:

- ``append``       one event per transaction (validate, insert, project, commit);
- ``append_many``  batches of 100 events per transaction;
- ``raw``          plain sqlite3 doing the SAME row writes into the SAME schema (the events row
                   plus the projection's INSERT/UPDATE/DELETE statements with their parameters,
                   captured from the store's own run; what the store wrote with one
                   ``executemany`` raw writes with one too) with the same transaction sizes.

It prints events/s and the ratio store/raw for both (goal, issue 28 item 7: ``append_many``
>= 0.6x), the medians of ``--rounds`` interleaved runs (>= 10), by wall time and by this
process's CPU time (the figure other processes' load hardly moves), with the load average at
the start and the end. No assertions.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from air.contracts.event import EventSource, RuntimeEvent
from air.events.store import EventStore
from air.store.session_db import open_session_database

SID = "ses_BENCH"
PID = "prj_BENCH"


def build_events(n: int) -> list[RuntimeEvent]:
    """``n`` valid events: one session, then cycles of a realistic task run."""
    events: list[RuntimeEvent] = []
    tick = 0

    def add(type_: str, payload: dict[str, Any]) -> None:
        nonlocal tick
        tick += 1
        events.append(
            RuntimeEvent(
                id=f"00000000-0000-4000-8000-{tick:012d}",
                type=type_,
                timestamp=f"2026-01-01T00:00:{tick // 1_000_000:02d}.{tick % 1_000_000:06d}Z",
                session_id=SID,
                project_id=PID,
                source=EventSource(kind="scheduler"),
                route=["scheduler", "event_store"],
                payload=payload,
            )
        )

    add("session.created", {"session_id": SID, "project_id": PID, "mode": "headless"})
    i = 0
    while len(events) < n:
        i += 1
        t, a, tr, cr = f"task_{i}", f"agt_{i}", f"tr_{i}", f"cr_{i}"
        add(
            "user.message.created",
            {"message_id": f"msg_{i}", "content": [{"type": "text", "text": "build"}]},
        )
        add(
            "task.created",
            {
                "task_spec": {
                    "id": t,
                    "type": "execute",
                    "title": f"task {i}",
                    "description": "do it",
                },
                "origin_message_id": f"msg_{i}",
            },
        )
        add(
            "agent.started",
            {
                "agent_id": a,
                "task_id": t,
                "agent_type": "executor",
                "status": "running",
                "pid": 4242,
            },
        )
        add(
            "task.started",
            {"task_id": t, "agent_id": a, "agent_type": "executor", "attempt_index": 1},
        )
        add(
            "tool.started",
            {
                "tool_run_id": tr,
                "tool_name": "shell.run",
                "task_id": t,
                "agent_id": a,
                "input": {"command": "make"},
            },
        )
        add(
            "command.started",
            {"command_run_id": cr, "command": "make", "cwd": "/w", "task_id": t, "tool_run_id": tr},
        )
        add(
            "artifact.created",
            {
                "artifact_id": f"art_{i}",
                "uri": f"artifact://project/{PID}/session/{SID}/art_{i}",
                "path": f"/a/art_{i}.log",
                "type": "log",
                "sha256": "0" * 64,
                "size_bytes": 10,
                "slug": "make",
                "command_run_id": cr,
                "created_at": "2026-01-01T00:00:00.000000Z",
            },
        )
        add(
            "command.completed",
            {
                "command_run_id": cr,
                "exit_code": 0,
                "duration_ms": 12,
                "stdout_artifact_id": f"art_{i}",
            },
        )
        add(
            "tool.completed",
            {
                "tool_run_id": tr,
                "output_summary": "ok",
                "artifact_ids": [f"art_{i}"],
                "duration_ms": 13,
            },
        )
        add("task.completed", {"task_id": t, "agent_id": a})
        add("agent.completed", {"agent_id": a, "exit_code": 0})
    return events[:n]


CPU: dict[str, list[float]] = {}
"""CPU seconds of each timed call by label (``time.process_time``: on a loaded machine the
wall figures move with other processes, this one far less)."""


def timed(fn: Callable[[], None], label: str = "") -> float:
    start, cpu = time.perf_counter(), time.process_time()
    fn()
    CPU.setdefault(label, []).append(time.process_time() - cpu)
    return time.perf_counter() - start


def run_store(events: list[RuntimeEvent], batch: int, path: Path) -> float:
    """Time the EventStore on a fresh database."""
    db = open_session_database(path)
    store = EventStore(db)
    chunks = [events[i : i + batch] for i in range(0, len(events), batch)]
    if batch == 1:
        elapsed = timed(lambda: _each(store.append, events), f"store-{batch}")
    else:
        elapsed = timed(lambda: _each(store.append_many, chunks), f"store-{batch}")
    db.close()
    return elapsed


def _each(fn: Callable[[Any], Any], items: list[Any]) -> None:
    for item in items:
        fn(item)


Write = tuple[str, tuple[Any, ...], bool]
"""A write statement, its parameters and whether it was one ``executemany`` (then the
parameters are its rows, and raw sqlite3 replays it with ``executemany`` too)."""


class _Recorder:
    """Stands in for the store's connection and records every write with its parameters."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.writes: list[Write] = []

    def execute(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        if sql.lstrip()[:6].upper() in ("INSERT", "UPDATE", "DELETE"):
            self.writes.append((sql, tuple(params), False))
        return self.conn.execute(sql, params)

    def executemany(self, sql: str, rows: Any) -> sqlite3.Cursor:
        rows = [tuple(r) for r in rows]
        self.writes.append((sql, tuple(rows), True))
        return self.conn.executemany(sql, rows)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.conn, name)


def capture_writes(events: list[RuntimeEvent], batch: int, path: Path) -> list[list[Write]]:
    """The parameterised INSERT/UPDATE/DELETE statements of each transaction of a store run."""
    db = open_session_database(path)
    recorder = _Recorder(db.conn)
    db._conn = recorder  # type: ignore[assignment]  # bench-only instrumentation
    store = EventStore(db)
    txs: list[list[Write]] = []
    for i in range(0, len(events), batch):
        recorder.writes = []
        store.append_many(events[i : i + batch])
        txs.append(recorder.writes)
    db._conn = recorder.conn
    db.close()
    return txs


def run_raw(txs: list[list[Write]], path: Path) -> float:
    """Replay the captured writes with plain sqlite3 in the same transaction sizes."""
    open_session_database(path).close()  # same schema, same pragmas
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")

    def go() -> None:
        for statements in txs:
            conn.execute("BEGIN IMMEDIATE")
            for sql, params, many in statements:
                if many:
                    conn.executemany(sql, params)
                else:
                    conn.execute(sql, params)
            conn.execute("COMMIT")

    elapsed = timed(go, f"raw-{len(txs)}")
    conn.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    med = statistics.median
    events = build_events(args.events)
    n = len(events)
    print(
        f"air event store benchmark: {n} durable events, sqlite {sqlite3.sqlite_version},"
        f" {args.rounds} rounds, load {os.getloadavg()[0]:.1f}"
    )
    print(f"{'mode':<28}{'store ev/s':>14}{'raw ev/s':>14}{'ratio':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for label, batch in (("append (1 event/tx)", 1), ("append_many (100/tx)", 100)):
            txs = capture_writes(events, batch, root / f"capture-{batch}.db")
            store_times: list[float] = []
            raw_times: list[float] = []
            for k in range(args.rounds):  # interleaved: both see the same machine load
                store_times.append(run_store(events, batch, root / f"s-{batch}-{k}.db"))
                raw_times.append(run_raw(txs, root / f"raw-{batch}-{k}.db"))
            store_rate, raw_rate = n / med(store_times), n / med(raw_times)
            cpu_store, cpu_raw = med(CPU[f"store-{batch}"]), med(CPU[f"raw-{len(txs)}"])
            print(
                f"{label:<28}{store_rate:>14,.0f}{raw_rate:>14,.0f}{store_rate / raw_rate:>8.2f}x"
                f"   CPU {n / cpu_store:>9,.0f}{n / cpu_raw:>9,.0f}{cpu_raw / cpu_store:>6.2f}x"
            )
    print("raw = the same INSERT/UPDATE/DELETE rows written by plain sqlite3")
    print(
        f"(medians of {args.rounds} interleaved runs each; goal: append_many >= 0.6x;"
        f" CPU = the same by process time; load at the end {os.getloadavg()[0]:.1f})"
    )


if __name__ == "__main__":
    main()
