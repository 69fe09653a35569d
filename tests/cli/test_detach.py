"""Background runs through the real CLI (issue 25 item 7, runner invariants 13 and 23;
IMPL-DETACH-1): ``air run --headless --detach`` prints the session id and exits 0 while the batch
runs on with no terminal; ``air wait`` (Ctrl-C stops the waiting, not the run; its exit code is
the batch's), ``air status``, ``air cancel`` (the run's own cooperative cancel), and a killed
detached runtime is found by ``air status`` and recovered by ``air resume``."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from air.cli.background import Notifier, find_run
from air.ipc.procs import find_marked
from air.supervision.runs import RunRecordStore
from tests.forked_air import air_cli
from tests.gitrepo import init_repo
from tests.headless import session_events
from tests.trust.calc_runs import EXAMPLE

VERDICT = {"verdict": "approved", "findings": []}
WAIT_FOR_GO = "until grep -qs go flag; do sleep 0.1; done"
"""The review's command waits until the project's ``flag`` says ``go`` (``go()``). A review's
commands see the project through its read-only view (IMPL-SBX-3): a file that appears in the
project while a command runs may stay unseen there (the overlay keeps what it looked up), a
file's new content is read through."""


def go(root: Path, now: bool = True) -> None:
    """Let the waiting review's command end (``now=False``: make it wait again)."""
    (root / "flag").write_text("go\n" if now else "wait\n")


def _turn(content: list[dict[str, Any]], stop: str) -> str:
    usage = {"input_tokens": 10, "output_tokens": 5}
    return json.dumps({"content": content, "stop_reason": stop, "usage": usage}) + "\n"


def _project(tmp: Path) -> Path:
    """A project whose one review task waits (in its sandbox) until ``go(root)``."""
    root = tmp / "proj"
    (root / "cas").mkdir(parents=True)
    use = {"type": "tool_use", "id": "toolu_1", "name": "shell.run"}
    result = json.dumps({"status": "completed", "summary": "looked", "result": VERDICT})
    (root / "cas" / "t0.jsonl").write_text(
        _turn([{**use, "input": {"command": WAIT_FOR_GO}}], "tool_use")
        + _turn([{"type": "text", "text": f"ok\n```json:result\n{result}\n```\n"}], "end_turn")
    )
    (root / "batch.yaml").write_text(
        "tasks:\n  - id: t0\n    type: review\n    title: look\n    description: look around\n"
    )
    go(root, now=False)
    return root


def _air(root: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "air.cli", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def _detach(root: Path) -> str:
    started = _air(root, "run", "--headless", "batch.yaml", "--detach", "--cassette", "cas")
    assert started.returncode == 0, started.stderr
    sid = started.stdout.strip()
    assert sid.startswith("ses_")
    return sid


def _local(root: Path) -> str:
    return str(root / ".air" / "local")


def _pid(root: Path, sid: str) -> int:
    run = find_run(_local(root), sid)
    assert run is not None
    return int(run.record["pid"])


@pytest.mark.slow
def test_a_detached_batch_outlives_its_starter_and_wait_delivers_its_end(tmp_path: Path) -> None:
    root = _project(tmp_path)
    sid = _detach(root)
    pid = _pid(root, sid)
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rfind(")") + 2 :].split()
    assert int(fields[3]) == pid  # its own session (setsid)
    assert int(fields[4]) == 0  # no controlling terminal
    assert int(fields[1]) != os.getpid()  # not a child of this test: the starter is gone

    status = _air(root, "status", sid)
    assert status.returncode == 0
    assert f"{sid}  running" in status.stdout

    waiter = subprocess.Popen(
        [sys.executable, "-m", "air.cli", "wait", sid],
        cwd=root,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert waiter.stderr is not None
    assert "waiting for session" in waiter.stderr.readline()  # it waits; Ctrl-C stops that only
    waiter.send_signal(signal.SIGINT)
    assert waiter.wait(timeout=30) == 130
    assert waiter.stderr is not None
    assert "runs on" in waiter.stderr.read()
    assert f"{sid}  running" in _air(root, "status").stdout  # the run was not cancelled

    go(root)
    waited = _air(root, "wait", sid)
    assert waited.returncode == 0, waited.stderr
    assert "finished (exit 0)  1/1 done" in waited.stderr
    assert f"{sid}  finished (exit 0)  1/1 done" in _air(root, "status").stdout
    assert (root / ".air" / "local" / "sessions" / sid / "detached.log").read_text().count(sid)
    # wait consumed the result: no console announces it
    notifier = Notifier(_local(root), window_s=0.0)
    assert notifier.poll(time.monotonic()) == []
    assert notifier.poll(time.monotonic() + 60) == []


@pytest.mark.slow
def test_cancel_stops_a_detached_run_cooperatively_and_wait_returns_its_code(
    tmp_path: Path,
) -> None:
    root = _project(tmp_path)
    sid = _detach(root)
    events: list[dict[str, Any]] = []
    for _ in range(300):  # the worker is running its command
        events = session_events(root)
        if any(e["type"] == "tool.started" for e in events):
            break
        time.sleep(0.1)
    cancelled = _air(root, "cancel", sid)
    assert cancelled.returncode == 0, cancelled.stderr
    waited = _air(root, "wait", sid)
    assert waited.returncode == 143, waited.stderr  # the batch's own exit code for SIGTERM
    types = [e["type"] for e in session_events(root)]
    assert "task.interrupted" in types
    assert "task.completed" not in types
    records = RunRecordStore(str(root / ".air" / "local" / "state" / "runs")).list()
    assert records  # its workers were reaped by the detached runtime itself
    assert all(find_marked(r["marker"]) == [] for r in records if r.get("marker"))
    again = _air(root, "cancel", sid)
    assert again.returncode == 1
    assert "not running (finished)" in again.stderr


@pytest.mark.slow
def test_a_killed_detached_runtime_is_lost_then_recovered_with_no_orphan(tmp_path: Path) -> None:
    root = _project(tmp_path)
    sid = _detach(root)
    for _ in range(300):
        if any(e["type"] == "tool.started" for e in session_events(root)):
            break
        time.sleep(0.1)
    os.kill(_pid(root, sid), signal.SIGKILL)
    for _ in range(100):
        if "lost" in _air(root, "status", sid).stdout:
            break
        time.sleep(0.1)
    status = _air(root, "status", sid)
    assert f"{sid}  lost" in status.stdout
    assert f"air resume --session {sid}" in status.stdout
    assert _air(root, "wait", sid).returncode == 1
    notifier = Notifier(_local(root))
    [notice] = notifier.poll(time.monotonic())  # a lost run is announced at once
    assert "stopped without finishing" in notice

    go(root)
    resumed = _air(root, "resume", "--session", sid, "--cassette", "cas")
    assert resumed.returncode == 0, resumed.stderr
    types = [e["type"] for e in session_events(root)]
    assert "agent.lost" in types
    assert types.count("task.completed") == 1
    records = RunRecordStore(str(root / ".air" / "local" / "state" / "runs")).list()
    assert records
    assert all(find_marked(r["marker"]) == [] for r in records if r.get("marker"))
    # the resume recorded the end the dead runtime could not
    assert f"{sid}  finished (exit 0)  1/1 done" in _air(root, "status", sid).stdout
    assert _air(root, "wait", sid).returncode == 0


def test_detach_refuses_a_batch_from_stdin_and_relays_a_refusal(tmp_path: Path) -> None:
    root = _project(tmp_path)
    piped = _air(root, "run", "--headless", "-", "--detach")
    assert piped.returncode == 2
    assert "--detach cannot read the batch from stdin" in piped.stderr
    (root / "bad.yaml").write_text("tasks: [{id: 1}\n")
    bad = _air(root, "run", "--headless", "bad.yaml", "--detach")
    assert bad.returncode == 2  # refused before a session opened: nothing runs on
    assert bad.stdout == ""
    assert "bad.yaml" in bad.stderr
    assert not (root / ".air" / "local" / "background").exists()


def test_wait_status_and_cancel_name_an_unknown_session_clearly(tmp_path: Path) -> None:
    root = _project(tmp_path)
    assert _air(root, "init").returncode == 0
    for command in ("wait", "status", "cancel"):
        done = _air(root, command, "ses_nope")
        assert done.returncode == 2, (command, done.stderr)
        assert "no background session 'ses_nope'" in done.stderr
        assert "Traceback" not in done.stderr
    listed = _air(root, "status")
    assert listed.returncode == 0
    assert "no background sessions" in listed.stdout


def test_a_planted_air_package_in_the_project_never_runs(tmp_path: Path) -> None:
    """Found: the background run was started as ``python -m air.cli`` in the directory the user
    ran ``air`` in, which Python puts first on ``sys.path``: a project (a cloned repository)
    with a top-level ``air/`` package had its ``__init__.py`` run as the user, outside any
    sandbox. Now ``-P``, as the workers are started (IMPL-CTX-7)."""
    root, home = tmp_path / "calc", tmp_path / "home"
    shutil.copytree(EXAMPLE, root)
    home.mkdir()
    marker = tmp_path / "planted-ran"
    (root / "air" / "cli").mkdir(parents=True)
    (root / "air" / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    (root / "air" / "cli" / "__init__.py").write_text("")
    init_repo(root, message="calc with a package named air")
    env = {**os.environ, "HOME": str(home)}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        # forked from the warm air, which imported air before it entered root (as the
        # installed command, whose sys.path[0] is bin/): only the background run starts anew
        return air_cli(args, cwd=root, env=env, timeout=120)

    started = run("run", "--headless", "batch.yaml", "--cassette", "cassettes", "--detach")
    assert started.returncode == 0, started.stderr
    waited = run("wait", started.stdout.strip())
    assert waited.returncode == 0, waited.stdout + waited.stderr
    assert not marker.exists()
