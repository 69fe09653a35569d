"""A run's host survives ``air resume`` (issue #27; IMPL-REMOTE-6): the calc batch with
``air run --headless --host local-ssh``, its runtime SIGKILLed once the first task completed;
``air resume`` runs the unfinished tasks on the host again, never silently here. The run's host
is recorded in ``session.created``; ``-p PROMPT --host`` is accepted as the batch's is."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from air.remote.hosts import HostConfig
from tests.remote.test_remote_batch import _home, _project

pytestmark = pytest.mark.slow


def _events(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_resume_runs_the_unfinished_tasks_on_the_runs_host(
    tmp_path: Path, remote_host: HostConfig
) -> None:
    home = _home(tmp_path)
    root = _project(tmp_path, "remote")
    env = {**os.environ, "HOME": str(home)}
    base = [sys.executable, "-m", "air.cli"]
    common = ["--project", str(root), "--cassette", str(root / "cassettes"), "--json"]
    batch = str(root / "batch.yaml")
    run = subprocess.Popen(
        [*base, "run", "--headless", batch, *common, "--host", remote_host.name],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert run.stdout is not None
    first: list[dict[str, Any]] = []
    try:
        for line in run.stdout:  # until the first task completed: then the runtime dies
            if line.startswith("{"):
                first.append(json.loads(line))
                if first[-1].get("type") == "task.completed":
                    break
    finally:
        run.send_signal(signal.SIGKILL)
        run.wait(timeout=30)
        run.stdout.close()
    assert [e for e in first if e.get("type") == "task.completed"]
    [created] = [e["payload"] for e in first if e.get("type") == "session.created"]
    assert created["host"] == remote_host.name

    resumed = subprocess.run(
        [*base, "resume", *common],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "completed: done 3/3" in resumed.stderr
    events = _events(resumed.stdout)
    started = [e["payload"] for e in events if e.get("type") == "command.started"]
    assert started, "the resumed tasks ran no command"
    work = os.path.realpath(remote_host.workdir)
    for payload in started:  # on the host, in a task's remote worktree: not here
        assert os.path.realpath(payload["cwd"]).startswith(work + os.sep), payload
    agents = [e["payload"] for e in events if e.get("type") == "agent.started"]
    assert agents
    assert all(a.get("remote", {}).get("host") == remote_host.name for a in agents), agents


def test_a_prompt_run_takes_host_as_a_batch_run_does(tmp_path: Path) -> None:
    """``air run -p PROMPT --host NAME``: the host is checked as for a batch (an unknown one is
    exit 2 saying where to declare it), not refused as an unknown option."""
    home = _home(tmp_path)
    root = _project(tmp_path, "calc")
    argv = ["run", "-p", "fix the tokenizer", "--host", "no-such-host", "--project", str(root)]
    done = subprocess.run(
        [sys.executable, "-m", "air.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HOME": str(home)},
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "no-such-host" in done.stderr
    assert "hosts.yaml" in done.stderr
    assert "Traceback" not in done.stderr
