"""Run records let a later start reap what a dead parent left, never a recycled PID."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from air.ipc.procs import MARKER_ENV, boot_id, read_identity
from air.supervision.runs import RunRecordStore, reap_orphans
from tests.workers.conftest import alive


def _spawn(marker: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ, **{MARKER_ENV: marker})
    code = (
        "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\ntime.sleep(60)\n"
    )
    return subprocess.Popen([sys.executable, "-c", code], env=env, start_new_session=True)


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
    )


def _record(
    store: RunRecordStore,
    agent_id: str,
    proc: subprocess.Popen[bytes],
    marker: str,
    start_time: str | None,
) -> None:
    store.write(
        {
            "agent_id": agent_id,
            "task_id": "t",
            "session_id": "s",
            "pid": proc.pid,
            "pid_start_time": start_time,
            "boot_id": boot_id(),
            "marker": marker,
            "state": "running",
        }
    )


async def test_orphans_are_killed_and_recycled_pids_spared(tmp_path: Path) -> None:
    store = RunRecordStore(str(tmp_path / "runs"))
    orphan = _spawn("m-orphan")
    innocent = _sleeper()
    try:
        import trio

        await trio.sleep(0.3)
        _record(store, "agt_orphan", orphan, "m-orphan", read_identity(orphan.pid).start_time)
        # a record whose PID now belongs to another process (different start time, no marker)
        _record(store, "agt_recycled", innocent, "m-gone", "1")
        store.write({"agent_id": "agt_done", "pid": 1, "state": "terminal", "marker": "x"})
        results = {r.agent_id: r.state for r in await reap_orphans(store.root, grace_s=1.0)}
        assert results == {"agt_orphan": "orphaned-killed", "agt_recycled": "orphaned-dead"}
        orphan.wait(timeout=5)
        assert not [p for p in os.listdir("/proc") if p.isdigit() and _marked(int(p), "m-orphan")]
        assert alive(innocent.pid)
        rec = store.read("agt_orphan")
        assert rec is not None
        assert rec["terminal_state"] == "orphaned-killed"
        assert await reap_orphans(store.root) == []
    finally:
        innocent.kill()
        innocent.wait()
        if orphan.poll() is None:
            orphan.kill()
            orphan.wait()


def _marked(pid: int, marker: str) -> bool:
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return f"{MARKER_ENV}={marker}".encode() in env.split(b"\0") and alive(pid)
