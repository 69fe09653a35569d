"""Two air processes in one project never touch each other's workers (issue #9 item 8).

Run records carry their owning air process (pid, ``/proc`` start time, boot id) and the name of
the ``flock`` that process holds for its lifetime; ``reap_orphans`` takes a record only when
that owner is provably dead. Real ``air run --headless`` processes with real workers and a
real sandboxed command, and real owner processes killed with SIGKILL.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from air.events.store import EventStore
from air.ipc.procs import MARKER_ENV, boot_id, read_identity
from air.store.session_db import open_session_database
from air.supervision.runs import (
    OWNERS_DIR,
    RunRecordStore,
    claim_session,
    current_owner,
    owner_alive,
    reap_orphans,
)
from tests.forked_air import air_cli
from tests.workers.conftest import alive


def _turn(content: list[dict[str, Any]], stop: str) -> str:
    usage = {"input_tokens": 10, "output_tokens": 5}
    return json.dumps({"content": content, "stop_reason": stop, "usage": usage}) + "\n"


def _result_turn(task_id: str) -> str:
    result = json.dumps(
        {"status": "completed", "summary": f"{task_id} done", "result": {"changes_made": False}}
    )
    return _turn([{"type": "text", "text": f"ok\n```json:result\n{result}\n```\n"}], "end_turn")


def _command_turn(task_id: str, command: str) -> str:
    use = {"type": "tool_use", "id": f"toolu_{task_id}", "name": "shell.run"}
    return _turn([{**use, "input": {"command": command}}], "tool_use")


def _resumes(root: Path, cassettes: str, session_id: str) -> None:
    """`air resume` (no --session) in ``root`` resumes ``session_id`` to its end."""
    resume = air_cli(
        ["resume", "--cassette", cassettes, "--isolation", "main"], cwd=root, timeout=120
    )
    assert resume.returncode == 0, resume.stderr
    assert resume.stderr.startswith(f"air: session {session_id} in "), resume.stderr


def _args(batch: str, cassettes: str) -> list[str]:
    return ["run", "--headless", batch, "--cassette", cassettes, "--isolation", "main", "--json"]


def _air(root: Path, batch: str, cassettes: str) -> list[str]:
    """A run of its own, for the run another air process holds while the test acts."""
    return [sys.executable, "-m", "air.cli", *_args(batch, cassettes)]


def _ran(root: Path, batch: str, cassettes: str) -> subprocess.CompletedProcess[str]:
    """A run to its end, forked from the warm air (tests/forked_air.py)."""
    return air_cli(_args(batch, cassettes), cwd=root, timeout=120)


def _session_events(root: Path, session_id: str) -> list[dict[str, Any]]:
    db = open_session_database(root / ".air" / "local" / "sessions" / session_id / "session.db")
    try:
        return [{"type": e.type, **e.payload} for e in EventStore(db).query()]
    finally:
        db.close()


def test_a_second_run_in_the_same_project_leaves_the_first_runs_worker_alone(
    tmp_path: Path,
) -> None:
    root = tmp_path / "proj"
    (root / "casA").mkdir(parents=True)
    (root / "casB").mkdir()
    # A's worker sits in a sandboxed command until the test lets it go
    wait = "until [ -e go ]; do sleep 0.05; done; echo released"
    (root / "casA" / "a.jsonl").write_text(_command_turn("a", wait) + _result_turn("a"))
    (root / "casB" / "b.jsonl").write_text(_command_turn("b", "echo quick") + _result_turn("b"))
    # a write area: A's command sees the project itself, where the test's `go` appears (a
    # task without one reads a view of the project, which never shows a file made later)
    (root / "a.yaml").write_text(
        "tasks:\n  - id: a\n    title: wait\n    scope: {write_area: [out]}\n"
    )
    (root / "b.yaml").write_text(
        "tasks:\n  - id: b\n    title: quick\n    scope: {write_area: []}\n"
    )
    run_a = subprocess.Popen(
        _air(root, "a.yaml", "casA"),
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert run_a.stdout is not None
        events_a: list[dict[str, Any]] = []
        for line in run_a.stdout:
            events_a.append(json.loads(line))
            if events_a[-1]["type"] == "command.started":
                break  # A's worker is alive, waiting for its command
        [started] = [e for e in events_a if e["type"] == "agent.started"]
        worker = int(started["payload"]["pid"])
        assert alive(worker)

        run_b = _ran(root, "b.yaml", "casB")
        assert run_b.returncode == 0, run_b.stderr
        assert '"task.completed"' in run_b.stdout

        assert alive(worker)  # B reaped nothing of A's
        # resuming the session A is running is refused before anything is recorded
        resume = subprocess.run(
            [
                sys.executable,
                "-m",
                "air.cli",
                "resume",
                "--session",
                started["session_id"],
                "--cassette",
                "casA",
                "--isolation",
                "main",
            ],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert resume.returncode == 2, resume.stderr
        assert "running in another air process" in resume.stderr
        assert "Traceback" not in resume.stderr
        assert alive(worker)
        # `air resume` takes the latest session no live air runs: B's, not A's. Resuming B
        # recovers it: its workspace is the project itself, as A's is, and its recovery kills
        # only the sandboxes a dead runtime left there, never A's command (found: A's `sleep
        # 15` ended -9 after 4 s, killed by B's recovery)
        session_b = json.loads(run_b.stdout.splitlines()[0])["session_id"]
        _resumes(root, "casB", session_b)
        assert alive(worker)
        assert run_a.poll() is None
        (root / "go").write_text("")
        for line in run_a.stdout:
            events_a.append(json.loads(line))
        assert run_a.wait(timeout=60) == 0, run_a.stderr.read() if run_a.stderr else ""
    finally:
        if run_a.poll() is None:
            run_a.kill()
            run_a.wait()
    types = [e["type"] for e in events_a]
    assert types.count("task.started") == 1  # the first attempt finished: nothing was retried
    # A's command saw `go` and ended by itself: not its timeout, not a kill
    [ended] = [e["payload"] for e in events_a if e["type"] == "command.completed"]
    assert ended["exit_code"] == 0, ended
    assert "command.failed" not in types
    assert "task.completed" in types
    assert not {"agent.lost", "agent.failed", "task.failed", "task.interrupted"} & set(types)
    stored = [e["type"] for e in _session_events(root, started["session_id"])]
    assert stored.count("task.started") == 1
    assert not {"agent.lost", "task.interrupted"} & set(stored)
    records = RunRecordStore(str(root / ".air" / "local" / "state" / "runs")).list()
    assert {r["task_id"]: r.get("terminal_state") for r in records} == {
        "a": "completed",
        "b": "completed",
    }
    owners = {r["task_id"]: r["owner"]["pid"] for r in records}
    assert owners["a"] == run_a.pid
    assert owners["b"] not in (run_a.pid, os.getpid())


_OWNER = """
import os, subprocess, sys, time
from air.events.store import EventStore
from air.ipc.procs import MARKER_ENV, read_identity
from air.supervision.runs import RunRecordStore, current_owner
root = sys.argv[1]
env = dict(os.environ, **{MARKER_ENV: "m-owned"})
child = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(60)"], env=env, start_new_session=True
)
time.sleep(0.2)
ident = read_identity(child.pid)
RunRecordStore(root).write({
    "agent_id": "agt_owned", "task_id": "t", "session_id": "s", "pid": child.pid,
    "pid_start_time": ident.start_time, "boot_id": ident.boot_id, "marker": "m-owned",
    "state": "running", "owner": current_owner(root),
})
print(child.pid, flush=True)
time.sleep(60)
"""


def _spawn_owner(root: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", _OWNER, root], stdout=subprocess.PIPE, text=True)


def _gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)


async def test_a_live_owner_is_spared_and_a_dead_owner_is_reaped(tmp_path: Path) -> None:
    import trio

    root = str(tmp_path / "runs")
    owner = _spawn_owner(root)
    worker = 0
    try:
        assert owner.stdout is not None
        worker = int(await trio.to_thread.run_sync(owner.stdout.readline))
        record = RunRecordStore(root).read("agt_owned")
        assert record is not None
        assert record["owner"]["pid"] == owner.pid
        assert owner_alive(root, record) is True
        assert await reap_orphans(root, grace_s=0.5) == []
        assert await reap_orphans(root, grace_s=0.5, own=True) == []  # not this process's
        assert alive(worker)

        owner.send_signal(signal.SIGKILL)
        owner.wait(timeout=10)  # its lock is released with it; its worker lives on
        assert alive(worker)
        assert owner_alive(root, record) is False
        results = await reap_orphans(root, grace_s=0.5)
        assert [(r.agent_id, r.state) for r in results] == [("agt_owned", "orphaned-killed")]
        assert _gone(worker)
        assert os.listdir(os.path.join(root, OWNERS_DIR)) == []  # the dead owner's lock is gone
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
        if worker and alive(worker):
            os.kill(worker, signal.SIGKILL)


def _sleeper(marker: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"],
        env=dict(os.environ, **{MARKER_ENV: marker}),
        start_new_session=True,
    )


async def test_own_kill_takes_only_this_process_records_and_a_recycled_owner_is_dead(
    tmp_path: Path,
) -> None:
    import trio

    store = RunRecordStore(str(tmp_path / "runs"))
    mine, recycled = _sleeper("m-mine"), _sleeper("m-recycled")
    innocent, spared = _sleeper("m-innocent"), _sleeper("m-spared")
    try:
        await trio.sleep(0.2)
        for agent_id, proc, marker, owner in (
            ("agt_mine", mine, "m-mine", current_owner(store.root)),
            # the owner's pid now belongs to another process (other start time), no lock held
            (
                "agt_recycled",
                recycled,
                "m-recycled",
                {"pid": innocent.pid, "pid_start_time": "1", "boot_id": boot_id(), "lock": "x"},
            ),
            # no lock file, but the owner is provably the same live process: not dead
            (
                "agt_spared",
                spared,
                "m-spared",
                {
                    "pid": innocent.pid,
                    "pid_start_time": read_identity(innocent.pid).start_time,
                    "boot_id": boot_id(),
                    "lock": "gone.lock",
                },
            ),
        ):
            store.write(
                {
                    "agent_id": agent_id,
                    "task_id": "t",
                    "session_id": "s",
                    "pid": proc.pid,
                    "pid_start_time": read_identity(proc.pid).start_time,
                    "boot_id": boot_id(),
                    "marker": marker,
                    "state": "running",
                    "owner": owner,
                }
            )
        reaped = await reap_orphans(store.root, grace_s=0.5)
        assert [(r.agent_id, r.state) for r in reaped] == [("agt_recycled", "orphaned-killed")]
        assert alive(mine.pid)  # this process is alive and holds its lock
        assert alive(spared.pid)
        assert alive(innocent.pid)
        own = await reap_orphans(store.root, grace_s=0.5, own=True)
        assert [(r.agent_id, r.state) for r in own] == [("agt_mine", "orphaned-killed")]
        mine.wait(timeout=10)
        recycled.wait(timeout=10)
        assert alive(innocent.pid)
    finally:
        for proc in (mine, recycled, innocent, spared):
            if proc.poll() is None:
                proc.kill()
                proc.wait()


_HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(60)
"""


def _hold_lock(path: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _HOLDER, path], stdout=subprocess.PIPE, text=True
    )


async def test_a_held_lock_spares_an_owner_whose_pid_looks_dead(tmp_path: Path) -> None:
    """An owner in another pid namespace (a container sharing the project) has a pid that means
    nothing here; its lock still says it is alive."""
    import trio

    store = RunRecordStore(str(tmp_path / "runs"))
    os.makedirs(os.path.join(store.root, OWNERS_DIR))
    holder = _hold_lock(os.path.join(store.root, OWNERS_DIR, "elsewhere.lock"))
    worker = _sleeper("m-elsewhere")
    try:
        assert holder.stdout is not None
        assert await trio.to_thread.run_sync(holder.stdout.readline) == "held\n"
        store.write(
            {
                "agent_id": "agt_elsewhere",
                "pid": worker.pid,
                "pid_start_time": read_identity(worker.pid).start_time,
                "boot_id": boot_id(),
                "marker": "m-elsewhere",
                "state": "running",
                "owner": {"pid": 2**22 + 1, "pid_start_time": "1", "lock": "elsewhere.lock"},
            }
        )
        assert await reap_orphans(store.root, grace_s=0.5) == []
        assert alive(worker.pid)
        holder.kill()
        holder.wait()
        reaped = await reap_orphans(store.root, grace_s=0.5)
        assert [(r.agent_id, r.state) for r in reaped] == [("agt_elsewhere", "orphaned-killed")]
        worker.wait(timeout=10)
    finally:
        for proc in (holder, worker):
            if proc.poll() is None:
                proc.kill()
                proc.wait()


_CLAIMER = """
import sys, time
from air.supervision.runs import claim_session
claim_session(sys.argv[1], "ses_one")
claim_session(sys.argv[1], "ses_one")  # again in the same process: a no-op
print("claimed", flush=True)
time.sleep(60)
"""


def _claimer(root: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _CLAIMER, root], stdout=subprocess.PIPE, text=True
    )


def test_one_air_process_per_session(tmp_path: Path) -> None:
    root = str(tmp_path / "runs")
    first = _claimer(root)
    try:
        assert first.stdout is not None
        assert first.stdout.readline() == "claimed\n"
        second = subprocess.run(
            [sys.executable, "-c", _CLAIMER, root], capture_output=True, text=True, timeout=60
        )
        assert second.returncode != 0
        assert f"running in another air process (pid {first.pid})" in second.stderr
        claim_session(root, "ses_other")  # another session is free
        first.kill()
        first.wait()
        claim_session(root, "ses_one")  # its owner died: the lock died with it
        third = subprocess.run(
            [sys.executable, "-c", _CLAIMER, root], capture_output=True, text=True, timeout=60
        )
        assert f"running in another air process (pid {os.getpid()})" in third.stderr
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()


async def test_a_record_naming_a_live_unmarked_process_never_signals_it(tmp_path: Path) -> None:
    """A run record is a file: one that names a live process that is not the run's worker (it
    lacks the run marker) — stale, or forged by something that could write it — kills nothing."""
    store = RunRecordStore(str(tmp_path / "runs"))
    victim = _sleeper("m-not-this-run")
    try:
        store.write(
            {
                "agent_id": "agt_forged",
                "pid": victim.pid,
                "pid_start_time": read_identity(victim.pid).start_time,
                "boot_id": boot_id(),
                "marker": "m-forged",
                "state": "running",
            }
        )
        reaped = await reap_orphans(store.root, grace_s=0.5)
        assert [(r.agent_id, r.state) for r in reaped] == [("agt_forged", "orphaned-dead")]
        assert alive(victim.pid)
    finally:
        victim.kill()
        victim.wait()


async def test_reaping_reads_the_run_records_once(tmp_path: Path, monkeypatch: Any) -> None:
    # one pass over the records serves the reaping and the owners' clean-up (IMPL-BOOT-13)
    root = str(tmp_path / "runs")
    store = RunRecordStore(root)
    for n in range(3):
        store.write({"agent_id": f"agt_{n}", "state": "terminal", "marker": f"m{n}"})
    os.makedirs(os.path.join(root, OWNERS_DIR))  # the clean-up looks at the owners then
    calls: list[str] = []
    real = RunRecordStore.list

    def counted(self: RunRecordStore) -> list[dict[str, Any]]:
        calls.append(self.root)
        return real(self)

    monkeypatch.setattr(RunRecordStore, "list", counted)
    assert await reap_orphans(root) == []
    assert calls == [root]


def test_air_resume_takes_the_latest_session_no_live_air_runs(tmp_path: Path) -> None:
    """A run that stopped, then another air's run started in the project: `air resume` takes
    the stopped one, not the other's that is running (found: it took the latest, and refused
    it as running in another air process)."""
    root = tmp_path / "proj"
    (root / "cas").mkdir(parents=True)
    wait = "until [ -e go ]; do sleep 0.05; done"
    (root / "cas" / "a.jsonl").write_text(_command_turn("a", wait) + _result_turn("a"))
    (root / "cas" / "b.jsonl").write_text(_command_turn("b", "echo quick") + _result_turn("b"))
    (root / "a.yaml").write_text("tasks:\n  - id: a\n    title: w\n    scope: {write_area: [o]}\n")
    (root / "b.yaml").write_text("tasks:\n  - id: b\n    title: quick\n")
    for _older_then_b in range(2):  # two stopped sessions: the newer one is taken
        run_b = _ran(root, "b.yaml", "cas")
        assert run_b.returncode == 0, run_b.stderr
    session_b = json.loads(run_b.stdout.splitlines()[0])["session_id"]
    run_a = subprocess.Popen(
        _air(root, "a.yaml", "cas"), cwd=root, stdout=subprocess.PIPE, text=True
    )
    try:
        assert run_a.stdout is not None
        for line in run_a.stdout:
            if json.loads(line)["type"] == "command.started":
                break  # A's session, the latest, is running
        _resumes(root, "cas", session_b)
        (root / "go").write_text("")
        assert run_a.wait(timeout=60) == 0
    finally:
        if run_a.poll() is None:
            run_a.kill()
            run_a.wait()
