"""``air run --headless`` and ``air resume`` as real processes (scripted fake workers, injected
through ``tests/cli/fake_air.py``; the user's ``air`` has no flag for fakes).

Exit codes 0 / 1 / 2 / 130, bad batch files reported with file, line and reason, the JSONL
event stream, the JUnit report, SIGINT cancelling cooperatively and ``air resume`` finishing
the batch without running a completed task again.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from tests.forked_air import air_cli
from tests.headless import session_events

BATCH = """\
# a small graph: a -> b, c in parallel with a
version: 1
tasks:
  - id: a
    title: Fix the tokenizer
    scope: {write_area: ["src/tok.py"]}
  - id: b
    title: Fix the parser
    depends_on: [a]
    scope: {write_area: ["src/parse.py"]}
  - id: c
    title: Update the docs
    type: docs
    scope: {write_area: ["docs/**"]}
"""


def _run(
    module: str, *args: str, cwd: Path, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    if module == "air.cli":
        return air_cli(args, cwd=cwd, timeout=timeout)
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


FAKE_AIR = str(Path(__file__).with_name("fake_air.py"))


def _run_fake(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The real ``air`` process with the scripted workers of ``fake.yaml``."""
    return subprocess.run(
        [sys.executable, FAKE_AIR, "fake.yaml", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _project(
    tmp_path: Path, batch: str = BATCH, script: str = "default: {duration: 0.02}\n"
) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "batch.yaml").write_text(batch)
    (root / "fake.yaml").write_text(script)
    return root


def test_batch_runs_to_completion_with_json_and_junit(tmp_path: Path) -> None:
    root = _project(tmp_path)
    proc = _run_fake(
        "run",
        "--headless",
        "batch.yaml",
        "--json",
        "--junit",
        "report.xml",
        "--max-workers",
        "2",
        "--isolation",
        "main",
        cwd=root,
    )
    assert proc.returncode == 0, proc.stderr
    stream = [json.loads(line) for line in proc.stdout.splitlines()]
    types = [e["type"] for e in stream]
    assert types.count("task.created") == 3
    assert types.count("task.completed") == 3
    started = [e["payload"]["task_id"] for e in stream if e["type"] == "task.started"]
    completed = [e["payload"]["task_id"] for e in stream if e["type"] == "task.completed"]
    assert started.index("b") > completed.index("a")  # hard dependency
    assert "done 3/3" in proc.stderr
    suite = ElementTree.parse(root / "report.xml").getroot()
    assert suite.get("tests") == "3"
    assert suite.get("failures") == "0"
    assert sorted(c.get("name") or "" for c in suite.iter("testcase")) == ["a", "b", "c"]


def test_a_failing_task_blocks_its_dependents_and_exits_1(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        script="default: {duration: 0.02}\na: [{duration: 0.02, ending: failed}]\n",
    )
    proc = _run_fake(
        "run",
        "--headless",
        "batch.yaml",
        "--junit",
        "report.xml",
        cwd=root,
    )
    assert proc.returncode == 1, proc.stderr
    final = {}
    for event in session_events(root):
        if event["type"].startswith("task.") and event["type"] != "task.created":
            final[event["task_id"]] = event["type"]
    # a failed twice (retry budget 1), b never ran and is blocked, c completed
    assert final == {"a": "task.failed", "b": "task.blocked", "c": "task.completed"}
    suite = ElementTree.parse(root / "report.xml").getroot()
    assert suite.get("failures") == "2"


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ("tasks:\n  - id: a\n    title: x\n    colour: red\n", 4, "unknown field 'tasks.0.colour'"),
        ("tasks:\n  - id: a\n    title: x\n    depends_on: [a]\n", 4, "depends on itself"),
        (
            "tasks:\n  - id: a\n    title: x\n    depends_on: [b]\n"
            "  - id: b\n    title: y\n    depends_on: [a]\n",
            2,
            "dependency cycle",
        ),
        ("tasks:\n  - id: a\n    title: x\n    depends_on: [nope]\n", 4, "unknown task 'nope'"),
        ("tasks:\n  - id: a\n  title: x\n", 3, "invalid YAML"),
    ],
)
def test_bad_batch_exits_2_with_file_line_reason(
    tmp_path: Path, text: str, line: int, reason: str
) -> None:
    root = _project(tmp_path, batch=text)
    proc = _run_fake("run", "--headless", "batch.yaml", cwd=root)
    assert proc.returncode == 2
    assert f"batch.yaml:{line}: " in proc.stderr
    assert reason in proc.stderr
    assert "what to do:" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (root / ".air").exists()  # nothing was started


def test_bad_options_exit_2(tmp_path: Path) -> None:
    root = _project(tmp_path)
    proc = _run("air.cli", "run", "--headless", "batch.yaml", "--max-workers", "0", cwd=root)
    assert proc.returncode == 2
    assert "--max-workers" in proc.stderr
    proc = _run("air.cli", "run", "--headless", "missing.yaml", cwd=root)
    assert proc.returncode == 2
    assert "missing.yaml" in proc.stderr


def _wait_for(predicate: Any, deadline: float = 30.0) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError("timed out waiting")


def _start_fake_run(root: Path, *more: str) -> subprocess.Popen[str]:
    """`air run --headless` on the fake workers, streaming JSON events, not waited for."""
    args = ["run", "--headless", "batch.yaml", "--json", "--isolation", "main", *more]
    return subprocess.Popen(
        [sys.executable, FAKE_AIR, "fake.yaml", *args],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
def test_sigint_cancels_cooperatively_and_resume_finishes(tmp_path: Path) -> None:
    batch = BATCH + '  - id: d\n    title: Slow\n    scope: {write_area: ["slow"]}\n'
    root = _project(
        tmp_path,
        batch=batch,
        script="default: {duration: 0.02}\nb: [{duration: 30}, {duration: 0.02}]\n"
        "d: [{duration: 30}, {duration: 0.02}]\n",
    )
    proc = _start_fake_run(root, "--max-workers", "2")  # d runs beside b
    assert proc.stdout is not None
    seen: list[dict[str, Any]] = []
    for line in proc.stdout:
        seen.append(json.loads(line))
        if {"b", "d"} <= {e["payload"].get("task_id") for e in seen if e["type"] == "task.started"}:
            break
    time.sleep(0.5)  # (only speed depends on it: d's worker started, so resume's d is quick)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "cancelling the run" in err
    events = session_events(root)
    ends = {
        e["task_id"]: e["type"]
        for e in events
        if e["type"] in ("task.completed", "task.interrupted", "task.failed")
    }
    assert ends["a"] == "task.completed"
    assert ends["b"] == "task.interrupted"
    # d was interrupted, or the cancel came while its pre-task backup snapshot ran (IMPL-MERGE-1):
    # then its worker never started and it is still pending; either way resume runs it
    assert ends.get("d", "pending") in ("task.interrupted", "pending")
    completed_before = {t for t, kind in ends.items() if kind == "task.completed"}

    again = _run_fake("resume", "--json", cwd=root)
    assert again.returncode == 0, again.stderr
    rerun = {
        json.loads(line)["payload"]["task_id"]
        for line in again.stdout.splitlines()
        if json.loads(line)["type"] == "task.started"
    }
    assert {"b", "d"} <= rerun
    assert not rerun & completed_before  # no completed task runs twice
    final = {}
    for event in session_events(root):
        if event["type"] in ("task.completed", "task.failed", "task.interrupted", "task.blocked"):
            final[event["task_id"]] = event["type"]
    assert final == dict.fromkeys(["a", "b", "c", "d"], "task.completed")


def test_resume_without_a_session_exits_2(tmp_path: Path) -> None:
    root = _project(tmp_path)
    assert _run("air.cli", "init", cwd=root).returncode == 0
    proc = _run_fake("resume", cwd=root)
    assert proc.returncode == 2
    assert "no session to resume" in proc.stderr
    assert not list((root / ".air" / "local" / "sessions").iterdir())  # nothing created


def test_second_sigint_exits_130_at_once_while_the_first_is_still_unwinding(
    tmp_path: Path,
) -> None:
    root = _project(tmp_path, script="default: {duration: 60, cancel_delay: 60}\n")
    proc = _start_fake_run(root)
    assert proc.stdout is not None
    assert proc.stderr is not None
    for line in proc.stdout:
        if json.loads(line)["type"] == "task.started":
            break
    proc.send_signal(signal.SIGINT)
    for line in proc.stderr:
        if "cancelling the run" in line:
            break
    # the workers take 60 s to wrap up: only the second signal can end the run now
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=20)
    assert proc.returncode == 130
    assert "killing every worker now" in err
    started = [e for e in session_events(root) if e["type"] == "task.started"]
    assert started  # what was recorded before the kill is still there


def test_no_test_hook_in_the_users_cli(tmp_path: Path) -> None:
    root = _project(tmp_path)
    for args in (["--help"], ["run", "--help"], ["resume", "--help"]):
        proc = _run("air.cli", *args, cwd=root)
        assert "--fake" not in proc.stdout + proc.stderr
        assert "Traceback" not in proc.stderr
    proc = _run(
        "air.cli", "run", "--headless", "batch.yaml", "--fake-script", "fake.yaml", cwd=root
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert not (root / ".air").exists()  # refused before anything ran


def test_a_fake_script_cannot_write_files(tmp_path: Path) -> None:
    root = _project(tmp_path, script='a: [{duration: 0.01, writes: [["../escape.txt", "x"]]}]\n')
    proc = _run_fake("run", "--headless", "batch.yaml", cwd=root)
    assert proc.returncode == 2, proc.stderr
    assert "bad fake script" in proc.stderr
    assert not (tmp_path / "escape.txt").exists()
