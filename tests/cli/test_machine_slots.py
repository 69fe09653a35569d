"""Machine-wide worker slots through the real ``air run`` (issue 25 item 4, IMPL-SLOT-1): two
projects, each ``--max-workers 2``, share a pool of 2 slots (``AIR_WORKER_SLOTS`` under one
HOME). A ``/proc`` scan every 50 ms never sees more than 2 live task workers of the two air
processes, and both batches complete; a ``kill -9`` of one air frees its slots for the other,
whose waiting task said "queued for a slot" on its ``--json`` stream."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from air.ipc.procs import find_marked
from air.supervision.runs import RunRecordStore
from air.supervision.worker_manager import QUEUED_MESSAGE


def _turn(content: list[dict[str, Any]], stop: str) -> str:
    usage = {"input_tokens": 10, "output_tokens": 5}
    return json.dumps({"content": content, "stop_reason": stop, "usage": usage}) + "\n"


def _project(root: Path, tasks: int, sleep_s: float) -> None:
    (root / "cas").mkdir(parents=True)
    lines = ["tasks:"]
    for i in range(tasks):
        task_id = f"t{i}"
        lines += [f"  - id: {task_id}", f"    title: look {i}", "    scope: {write_area: []}"]
        result = json.dumps(
            {"status": "completed", "summary": "looked", "result": {"changes_made": False}}
        )
        call = {
            "type": "tool_use",
            "id": f"toolu_{task_id}",
            "name": "shell.run",
            "input": {"command": f"sleep {sleep_s}"},
        }
        text = {"type": "text", "text": f"ok\n```json:result\n{result}\n```\n"}
        (root / "cas" / f"{task_id}.jsonl").write_text(
            _turn([call], "tool_use") + _turn([text], "end_turn")
        )
    (root / "batch.yaml").write_text("\n".join(lines) + "\n")


def _air(root: Path, home: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "HOME": str(home), "AIR_WORKER_SLOTS": "2"}
    args = ["batch.yaml", "--cassette", "cas", "--max-workers", "2", "--json"]
    return subprocess.Popen(
        [sys.executable, "-m", "air.cli", "run", "--headless", *args],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _ppid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read().decode("ascii", "replace")
    except OSError:
        return None
    return int(data[data.rfind(")") + 2 :].split()[1])


def _marker(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            env = fh.read().split(b"\0")
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmd = fh.read()
    except OSError:
        return None
    if b"air.roles" not in cmd:
        return None
    for item in env:
        if item.startswith(b"AIR_WORKER_RUN="):
            return item.split(b"=", 1)[1].decode()
    return None


class Scan:
    """Every 50 ms: the worker processes (``python -m air.roles``) that are children of the
    given air processes, with their run markers."""

    def __init__(self, parents: list[int]) -> None:
        self.parents = set(parents)
        self.samples: list[tuple[float, set[str]]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            seen: set[str] = set()
            for name in os.listdir("/proc"):
                if name.isdigit() and _ppid(int(name)) in self.parents:
                    marker = _marker(int(name))
                    if marker is not None:
                        seen.add(marker)
            self.samples.append((time.time(), seen))
            time.sleep(0.05)

    def most(self, task_markers: dict[str, float]) -> int:
        """The most task workers alive at once. A spare worker (started ahead by ``air run``,
        idle, holding no slot) is a task's worker only from its adoption on: a marker counts
        in the samples taken after its run record was written."""
        self.stop.set()
        self.thread.join()
        return max(
            (
                sum(1 for m in seen if task_markers.get(m, math.inf) <= at)
                for at, seen in self.samples
            ),
            default=0,
        )


def _task_markers(*roots: Path) -> dict[str, float]:
    """Every task worker's run marker and when its run record began (epoch seconds)."""
    markers: dict[str, float] = {}
    for root in roots:
        store = RunRecordStore(str(root / ".air" / "local" / "state" / "runs"))
        for record in store.list():
            if record.get("marker"):
                began = datetime.fromisoformat(str(record["started_at"]).replace("Z", "+00:00"))
                markers[str(record["marker"])] = began.timestamp()
    return markers


def _events(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def _kill_leftovers(*roots: Path) -> None:
    for marker in _task_markers(*roots):
        for pid in find_marked(marker):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.mark.slow
def test_two_projects_never_run_more_workers_than_the_machine_pool(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    roots = [tmp_path / "a", tmp_path / "b"]
    for root in roots:
        _project(root, 3, 1)
    procs = [_air(root, home) for root in roots]
    scan = Scan([p.pid for p in procs])
    try:
        outs = [p.communicate(timeout=240) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        most = scan.most(_task_markers(*roots))
        _kill_leftovers(*roots)
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
        ends = [e["type"] for e in _events(out) if e["type"].startswith("task.")]
        assert ends.count("task.completed") == 3
    assert 1 <= most <= 2
    assert len(_task_markers(*roots)) == 6


@pytest.mark.slow
def test_kill_9_of_one_air_frees_its_slots_for_the_other(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    first, second = tmp_path / "a", tmp_path / "b"
    _project(first, 2, 600)
    _project(second, 2, 0.2)
    holder = _air(first, home)
    waiter: subprocess.Popen[str] | None = None
    try:
        assert holder.stdout is not None
        started = 0
        for line in holder.stdout:
            started += json.loads(line)["type"] == "agent.started"
            if started == 2:
                break  # both slots of the machine are held by the first project's workers
        waiter = _air(second, home)
        assert waiter.stdout is not None
        waiting: list[dict[str, Any]] = []
        for line in waiter.stdout:
            event = json.loads(line)
            waiting.append(event)
            if event["type"] == "task.progress":
                break
        assert waiting[-1]["payload"]["message"] == QUEUED_MESSAGE
        assert "agent.started" not in [e["type"] for e in waiting]
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
        out, err = waiter.communicate(timeout=240)
        assert waiter.returncode == 0, err
        done = [e for e in _events(out) if e["type"] == "task.completed"]
        assert len(done) == 2
    finally:
        for p in (holder, waiter):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
        _kill_leftovers(first, second)


def test_a_bad_pool_size_is_refused_with_what_to_do(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".air").mkdir(parents=True)
    (home / ".air" / "config.yaml").write_text("worker_slots: lots\n")
    root = tmp_path / "a"
    _project(root, 1, 0.1)
    env = {k: v for k, v in os.environ.items() if k != "AIR_WORKER_SLOTS"}
    done = subprocess.run(
        [sys.executable, "-m", "air.cli", "run", "--headless", "batch.yaml", "--cassette", "cas"],
        cwd=root,
        env={**env, "HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "config_error: worker_slots" in done.stderr
    assert "what to do:" in done.stderr
    assert "Traceback" not in done.stderr
    assert not list((root / ".air" / "local" / "sessions").glob("*/session.db"))
