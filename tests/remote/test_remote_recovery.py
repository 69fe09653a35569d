"""Remote runs after a parent SIGKILL (issue #27 items 3 and 6; IMPL-SLURM-4): the run record
names where the worker went — the host, the guard's boot id, pid and start time, the Slurm job
id, also while the job is queued — and recovery (``air doctor --fix``, as ``air resume`` does at
start-up) sweeps by it: over a fresh ssh connection the run's marker, on Slurm ``scancel`` of the
job. Afterwards no process of the task is left and no job in squeue (recovery runs in a PID
namespace of its own: it sees none of the "remote" processes here). The parent is a real
WorkerManager in its own process (tests/remote/parent_driver.py), the worker one that leaves a
``setsid`` grandchild and ignores SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from air.ipc.procs import find_marked
from air.remote.hosts import HostConfig
from air.remote.srun import job_name
from air.supervision.runs import RunRecordStore, runs_dir
from tests.remote.conftest import CHECKOUT, REMOTE_DIR, remote_marked

pytestmark = pytest.mark.slow
KILL_WINDOW_S = 2  # KillWait in the slurm.conf scripts/slurm_setup.sh writes


def _until(predicate: Callable[[], Any], limit_s: float = 30.0) -> Any:
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"not within {limit_s} s: {predicate}")


def _jobs(name: str) -> list[str]:
    done = subprocess.run(
        ["squeue", "-h", "-n", name, "-o", "%i %T"], capture_output=True, text=True, check=True
    )
    return done.stdout.split()


def _parent(tmp_path: Path, hosts: str) -> tuple[subprocess.Popen[bytes], RunRecordStore]:
    project = tmp_path / "proj"
    project.mkdir()
    init = [sys.executable, "-m", "air.cli", "init", str(project)]
    subprocess.run(init, capture_output=True, timeout=60, check=True)
    driver = "tests.remote.parent_driver"
    parent = subprocess.Popen(
        [sys.executable, "-m", driver, str(REMOTE_DIR / hosts), str(tmp_path)],
        cwd=CHECKOUT,
        stdin=subprocess.DEVNULL,
    )
    return parent, RunRecordStore(runs_dir(str(tmp_path / "proj")))


def _kill_and_recover(parent: subprocess.Popen[bytes], tmp_path: Path) -> None:
    """SIGKILL the parent, then start air again there: its recovery reaps the run. It runs in
    a PID namespace of its own, so it cannot see (or kill) the "remote" processes on this
    machine itself: only the sweep by the record reaches them."""
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    alone = ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-m", "air.cli"]
    done = subprocess.run(
        [*alone, "doctor", "--fix", "--project", str(tmp_path / "proj")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "marked 1 run record(s) terminal" in done.stdout + done.stderr, done.stdout


def _cancel_all(records: RunRecordStore) -> None:
    """A failed test leaves no job of its own behind."""
    for record in records.list():
        subprocess.run(["scancel", f"--name={job_name(record['agent_id'])}"], check=False)


def _placed(records: RunRecordStore, *keys: str) -> dict[str, Any]:
    def found() -> dict[str, Any] | None:
        for record in records.list():
            where = record.get("remote") or {}
            if all(where.get(k) for k in keys):
                return record
        return None

    record: dict[str, Any] = _until(found)
    return record


def test_recovery_cancels_the_slurm_job_of_a_killed_parent(
    tmp_path: Path, slurm_host: HostConfig
) -> None:
    parent, records = _parent(tmp_path, "slurm-hosts.yaml")
    try:
        record = _placed(records, "job_id", "pid", "boot_id", "start_time")
        marker = record["marker"]
        _until(lambda: len(find_marked(marker, max_age_s=0.0)) >= 3)
        assert record["remote"]["launcher"] == "slurm"
        assert record["remote"]["host"] == slurm_host.name
        assert record["remote"]["pid"] in find_marked(marker, max_age_s=0.0)
        name = job_name(record["agent_id"])
        assert _jobs(name) == [str(record["remote"]["job_id"]), "RUNNING"]
        _kill_and_recover(parent, tmp_path)
        _until(lambda: _jobs(name) == [], KILL_WINDOW_S + 10)
        _until(lambda: find_marked(marker, max_age_s=0.0) == [], KILL_WINDOW_S + 5)
    finally:
        parent.kill()
        parent.wait()
        _cancel_all(records)


def test_recovery_cancels_the_queued_slurm_job_of_a_killed_parent(
    tmp_path: Path, slurm_host: HostConfig, busy_node: str
) -> None:
    """Queued: no worker process yet, the record already names the job; recovery cancels it."""
    parent, records = _parent(tmp_path, "slurm-hosts.yaml")
    try:
        record = _placed(records, "job_id")
        name = job_name(record["agent_id"])
        assert _jobs(name) == [str(record["remote"]["job_id"]), "PENDING"]
        _kill_and_recover(parent, tmp_path)
        _until(lambda: _jobs(name) == [], 10)
    finally:
        parent.kill()
        parent.wait()
        _cancel_all(records)


def test_recovery_sweeps_the_ssh_run_of_a_killed_parent(
    tmp_path: Path, remote_host: HostConfig
) -> None:
    """The link is stuck (the parent's ssh client stopped: no EOF reaches the remote worker) and
    the parent is killed: only the sweep over a fresh connection, by the record, ends the
    remote tree."""
    parent, records = _parent(tmp_path, "hosts.yaml")
    client = 0
    try:
        record = _placed(records, "pid", "boot_id", "start_time")
        marker = record["marker"]
        _until(lambda: len(remote_marked(marker)) >= 3)
        assert record["remote"]["launcher"] == "ssh"
        assert record["remote"]["pid"] in remote_marked(marker)
        client = int(record["pid"])  # the local ssh client (the record's process)
        os.kill(client, signal.SIGSTOP)
        _kill_and_recover(parent, tmp_path)
        _until(lambda: remote_marked(marker) == [], 10)
    finally:
        parent.kill()
        parent.wait()
        if client:
            os.kill(client, signal.SIGKILL)
            os.kill(client, signal.SIGCONT)
