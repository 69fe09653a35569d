"""The console tells of background runs (issue 25 item 7, runner invariant 23; IMPL-DETACH-1):
the real ``air`` console in tmux lists the project's background sessions when it opens and
announces a detached batch once when it finishes; a run ``air wait`` consumed is not announced."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.test_detach import _detach, _project, go
from tests.ui.real_air import air_in
from tests.ui.tmux import Tmux


@pytest.mark.slow
def test_the_console_lists_background_runs_and_announces_a_finished_one_once(
    tmp_path: Path,
) -> None:
    root = _project(tmp_path)
    (root / "cas" / "main.jsonl").write_text("")  # the Main Agent is never asked here
    waited = _detach(root)
    go(root)
    done = subprocess.run(
        [sys.executable, "-m", "air.cli", "wait", waited], cwd=root, capture_output=True
    )
    assert done.returncode == 0
    go(root, now=False)
    sid = _detach(root)
    tmux = Tmux(tmp_path)
    try:
        tmux.start(air_in(root, "--cassette", "cas"))
        tmux.wait_for("Enter", timeout=60)  # the earlier sessions are listed first
        tmux.keys("Enter")
        tmux.wait_for("background sessions: 1 running, 1 finished", timeout=60)
        go(root)
        screen = tmux.wait_for(f"background session {sid} completed, 1/1 tasks done", timeout=60)
        assert waited not in screen  # consumed by air wait: never announced
        time.sleep(2.5)  # more polls: still once
        assert tmux.screen().count(f"background session {sid} completed") == 1
    finally:
        tmux.close()
