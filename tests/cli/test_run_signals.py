"""SIGHUP (the terminal closed) and SIGTERM cancel a real ``air run --headless`` cooperatively;
a closed stdout (``air run --json | head -1``) stops the stream quietly and the run goes on.

Real worker processes replay per-task cassettes; the slow task's first turn runs
``sleep 30`` through ``shell.run``. The signal arrives while it sleeps: the run records every
outcome (the slow task ends interrupted), exits 130 (143 for SIGTERM, 128 + 15), leaves no
process behind, and
``air resume`` (with a quick cassette) finishes the batch without running the completed task
again.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import site
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from air.ipc.procs import find_marked
from air.supervision.runs import RunRecordStore
from tests.gitrepo import init_repo
from tests.headless import session_events
from tests.processes import process_state
from tests.tools.sandbox_probe import NOBODY, chown_tree, unprivileged_dir, unprivileged_python
from tests.ui.tmux import processes_with

BATCH = """\
tasks:
  - id: quick
    title: Look quickly
    scope: {write_area: []}
  - id: slow
    title: Look slowly
    scope: {write_area: []}
"""

AIR_RUN = [sys.executable, "-m", "air.cli", "run", "--headless", "batch.yaml"]


def _turn(content: list[dict[str, Any]], stop: str) -> str:
    usage = {"input_tokens": 10, "output_tokens": 5}
    return json.dumps({"content": content, "stop_reason": stop, "usage": usage}) + "\n"


def _cassette(task_id: str, command: str | None) -> str:
    result = json.dumps(
        {"status": "completed", "summary": f"{task_id} looked", "result": {"changes_made": False}}
    )
    answer = _turn([{"type": "text", "text": f"ok\n```json:result\n{result}\n```\n"}], "end_turn")
    if command is None:
        return answer
    call = {"type": "tool_use", "id": f"toolu_{task_id}", "name": "shell.run"}
    return _turn([{**call, "input": {"command": command}}], "tool_use") + answer


def _project(root: Path, slow: str | None, quick: str | None = None) -> None:
    """The batch with its cassettes in ``root/cas``: ``slow``, ``quick``: their commands."""
    (root / "cas").mkdir(parents=True)
    (root / "cas" / "quick.jsonl").write_text(_cassette("quick", quick))
    (root / "cas" / "slow.jsonl").write_text(_cassette("slow", slow))
    (root / "batch.yaml").write_text(BATCH)


def _final(events: list[dict[str, Any]]) -> dict[str, str]:
    ends = ("task.completed", "task.failed", "task.blocked", "task.interrupted", "task.cancelled")
    return {e["task_id"]: e["type"] for e in events if e["type"] in ends}


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM], ids=["SIGHUP", "SIGTERM"])
def test_signal_cancels_cooperatively_and_resume_finishes(
    tmp_path: Path, signum: signal.Signals
) -> None:
    root = tmp_path / "proj"
    for name, slow in (("cas", "sleep 30"), ("cas2", None)):
        (root / name).mkdir(parents=True)
        (root / name / "quick.jsonl").write_text(_cassette("quick", None))
        (root / name / "slow.jsonl").write_text(_cassette("slow", slow))
    (root / "batch.yaml").write_text(BATCH)
    proc = subprocess.Popen(
        [*AIR_RUN, "--cassette", "cas", "--json", "--max-workers", "2"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    assert proc.stdout is not None
    seen: list[dict[str, Any]] = []
    for line in proc.stdout:
        seen.append(json.loads(line))
        types = [(e["type"], e["payload"].get("task_id")) for e in seen]
        if ("task.completed", "quick") in types and any(t == "tool.started" for t, _ in types):
            break  # quick is done and slow's `sleep 30` is running
    os.killpg(proc.pid, signum)  # a closing terminal signals the whole foreground group
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == (143 if signum == signal.SIGTERM else 130), err
    assert f"{signum.name}: cancelling the run" in err
    assert "Traceback" not in err
    events = session_events(root)
    assert _final(events) == {"quick": "task.completed", "slow": "task.interrupted"}
    records = RunRecordStore(str(root / ".air" / "local" / "state" / "runs")).list()
    assert [find_marked(r["marker"]) for r in records if r.get("marker")] == [
        [] for r in records if r.get("marker")
    ]  # no worker, no `sleep` survives

    again = subprocess.run(
        [sys.executable, "-m", "air.cli", "resume", "--cassette", "cas2"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0, again.stderr
    after = session_events(root)
    starts = [e["task_id"] for e in after if e["type"] == "task.started"]
    assert starts.count("quick") == 1  # never run twice
    assert starts.count("slow") == 2
    assert _final(after) == {"quick": "task.completed", "slow": "task.completed"}


def test_a_second_signal_kills_at_once_and_still_writes_the_reports(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    _project(root, "sleep 30")
    proc = subprocess.Popen(
        [*AIR_RUN, "--cassette", "cas", "--json", "--junit", "report.xml", "--max-workers", "2"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    seen: list[dict[str, Any]] = []
    for line in proc.stdout:
        seen.append(json.loads(line))
        types = [(e["type"], e["payload"].get("task_id")) for e in seen]
        if ("task.completed", "quick") in types and any(t == "tool.started" for t, _ in types):
            break
    # both at once, so the run is cancelled by one and killed by the other before it could
    # wind down on its own; which one its handler sees first is the threads' race (a signal
    # to the process goes to any thread), so the run's own words say which came first
    os.killpg(proc.pid, signal.SIGINT)
    os.killpg(proc.pid, signal.SIGTERM)
    rest, err = proc.communicate(timeout=60)
    first = next(line for line in err.splitlines() if "cancelling the run" in line)
    assert ("SIGINT" in first) != ("SIGTERM" in first), err
    code = 130 if "SIGINT" in first else 143
    assert proc.returncode == code, err  # the first signal says how the run ended
    assert "killing every worker now" in err
    summary = json.loads(rest.strip().splitlines()[-1])
    assert summary["type"] == "air.summary"
    assert summary["status"] == "cancelled"
    assert summary["exit_code"] == code
    assert summary["tasks"]["quick"]["status"] == "completed"
    assert "<testsuite" in (root / "report.xml").read_text()


def test_closed_stdout_stops_the_stream_quietly_and_the_run_goes_on(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    _project(root, "sleep 0.3", "sleep 0.3")
    proc = subprocess.Popen(
        [*AIR_RUN, "--cassette", "cas", "--json", "--junit", "report.xml"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    first = proc.stdout.readline()
    assert json.loads(first)["type"]
    proc.stdout.close()  # `| head -1`: the reader is gone
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 0, err
    assert "Traceback" not in err
    assert "Exception ignored" not in err
    assert err.count("stdout closed") == 1
    assert "completed: done 2/2, failed 0" in err  # the summary counts every task
    assert _final(session_events(root)) == {"quick": "task.completed", "slow": "task.completed"}
    assert (root / "report.xml").is_file()


def test_a_run_killed_while_stopped_leaves_nothing_stopped_behind(tmp_path: Path) -> None:
    """Ctrl-Z holds the run's worker and sandboxed command (IMPL-STOP-1); a ``kill -9 %1`` of
    the stopped run then would have left them stopped for good: a stopped worker never reads
    the end of its input. A watcher continues them once air is gone, and they end."""
    root = tmp_path / "proj"
    _project(root, "sleep 30")
    proc = subprocess.Popen(
        [*AIR_RUN, "--cassette", "cas", "--json", "--max-workers", "2"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        process_group=0,  # a job of this session, as a shell starts it: its stop is taken
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if json.loads(line)["type"] == "tool.started":
            break  # slow's `sleep 30` runs
    records = RunRecordStore(str(root / ".air" / "local" / "state" / "runs")).list()
    markers = [str(r["marker"]) for r in records if r.get("marker")]
    workers = [pid for marker in markers for pid in find_marked(marker)]
    assert workers  # slow's, at least
    os.kill(proc.pid, signal.SIGTSTP)
    deadline = time.monotonic() + 30
    while {process_state(pid) for pid in [proc.pid, *workers]} - {None} != {"T"}:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    proc.kill()
    proc.wait(timeout=30)
    # no worker (marked), no sandbox (its command line binds the project) is left
    while any(find_marked(m) for m in markers) or processes_with(str(root)):
        stuck = {pid: process_state(pid) for m in markers for pid in find_marked(m)}
        assert time.monotonic() < deadline, f"left behind: {stuck} {processes_with(str(root))}"
        time.sleep(0.05)


def test_ctrl_z_of_an_unprivileged_users_run_holds_its_worker_and_sandbox() -> None:
    """As ``nobody``: air may stop what it started (the sandbox's processes are the user's own
    in their user namespace), and continues them; the task completes."""
    base = unprivileged_dir()
    try:
        home, root = base / "home", base / "proj"
        (root / "cas").mkdir(parents=True)
        home.mkdir()
        (root / "cas" / "slow.jsonl").write_text(_cassette("slow", "sleep 2.7182"))
        (root / "batch.yaml").write_text(BATCH.split("  - id: slow")[0].replace("quick", "slow"))
        init_repo(root, message="start")
        chown_tree(base)
        env = {**os.environ, "HOME": str(home)}
        env["PYTHONPATH"] = os.pathsep.join(
            [str(Path(__file__).parents[2]), *site.getsitepackages()]
        )
        argv = ["run", "--headless", "batch.yaml", "--cassette", "cas", "--json"]
        proc = subprocess.Popen(
            [unprivileged_python(), "-m", "air.cli", *argv],
            cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            user=NOBODY, group=NOBODY, extra_groups=[], process_group=0,
        )  # fmt: skip
        assert proc.stdout is not None
        for line in proc.stdout:
            if json.loads(line)["type"] == "tool.started":
                break
        deadline = time.monotonic() + 30
        while not [p for p in processes_with("sleep 2.7182") if " S" in p[:14]]:
            assert time.monotonic() < deadline, "the command never ran"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGTSTP)
        while not (
            process_state(proc.pid) == "T"
            and [p for p in processes_with("sleep 2.7182") if " T" in p[:14]]
        ):
            assert time.monotonic() < deadline, processes_with("sleep 2.7182")
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGCONT)
        _out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert "air: stopped with its" in err
        assert _final(session_events(root)) == {"slow": "task.completed"}
    finally:
        shutil.rmtree(base, ignore_errors=True)
