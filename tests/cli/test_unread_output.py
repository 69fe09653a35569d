"""A headless run never waits on its output's reader (IMPL-OUT-2).

Found: ``air run --json | less`` with nobody scrolling (a terminal stopped by Ctrl-S the same)
filled the pipe, the run's next ``print`` blocked its Trio thread, and the task's deadline ran
on while nothing could happen: the task failed ``timeout``. Real pipes, a real run.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from air.cli.outlet import Outlet, OutletStopped
from tests.cassette_turns import done_turn, tool_turn
from tests.gitrepo import init_repo
from tests.headless import session_events

F_SETPIPE_SZ = 1031  # fcntl.F_SETPIPE_SZ (Linux), a page: the smallest pipe there is


def _small_pipe() -> tuple[int, int]:
    read, write = os.pipe()
    fcntl.fcntl(write, F_SETPIPE_SZ, 4096)
    return read, write


def _read_all(fd: int) -> bytes:
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


@pytest.mark.slow
def test_a_run_whose_output_nobody_reads_still_meets_its_deadline(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "cas").mkdir(parents=True)
    (root / "cas" / "t.jsonl").write_text(
        tool_turn("t", "shell.run", command="sleep 2") + "\n" + done_turn() + "\n"
    )
    (root / "batch.yaml").write_text(
        "tasks:\n  - id: t\n    title: wait a little\n    scope: {write_area: []}\n"
        "    constraints: {soft_timeout_ms: 5000, hard_timeout_ms: 6000, retry_budget: 0}\n"
    )
    init_repo(root, message="start")
    out_r, out_w = _small_pipe()
    err_r, err_w = _small_pipe()
    argv = ["run", "--headless", "batch.yaml", "--cassette", "cas", "--json"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "air", *argv], stdout=out_w, stderr=err_w, cwd=root
    )
    os.close(out_w)
    os.close(err_w)
    time.sleep(9)  # nobody reads: longer than the task's whole deadline
    err: list[bytes] = []
    reader = threading.Thread(target=lambda: err.append(_read_all(err_r)))
    reader.start()
    out = _read_all(out_r)
    assert proc.wait(timeout=60) == 0
    reader.join()
    ends = [
        e["type"] for e in session_events(root) if e["type"] in ("task.completed", "task.failed")
    ]
    assert ends == ["task.completed"]
    streamed = [json.loads(line) for line in out.decode().splitlines()]
    assert streamed[-1]["type"] == "air.summary"  # every line came, in order, at the reader's pace
    assert "tool.completed" in [e["type"] for e in streamed]
    assert b"completed: done 1/1" in err[0]


def test_a_write_only_queues_and_everything_comes_in_order() -> None:
    read, write = _small_pipe()
    outlet = Outlet(os.fdopen(write, "w"), strict=True, limit=1 << 20)
    lines = [f"line {i:05d} " + "x" * 100 + "\n" for i in range(5000)]  # 0.5 MB into 4 KiB
    started = time.monotonic()
    for line in lines:
        outlet.write(line)
    queued_s = time.monotonic() - started
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(_read_all(read)))
    reader.start()
    outlet.close()
    outlet.target.close()
    reader.join()
    assert got[0].decode() == "".join(lines)
    assert queued_s < 30  # (a blocked write would never have returned: the pipe holds 4 KiB)


def test_the_json_stream_stops_when_its_reader_falls_too_far_behind() -> None:
    read, write = _small_pipe()
    outlet = Outlet(os.fdopen(write, "w"), strict=True, limit=20_000)
    written = 0

    def fill() -> None:
        nonlocal written
        for _ in range(1000):
            outlet.write("y" * 99 + "\n")
            written += 1

    with pytest.raises(OutletStopped) as stopped:
        fill()
    assert stopped.value.lagged
    assert 150 < written < 250  # 20,000 held plus what the pipe took
    with pytest.raises(OutletStopped):
        outlet.write("more\n")  # stopped for good
    os.close(read)
    outlet.close()


def test_the_progress_drops_lines_past_the_limit_and_says_how_many() -> None:
    read, write = _small_pipe()
    outlet = Outlet(os.fdopen(write, "w"), strict=False, limit=5_000)
    for i in range(1000):
        outlet.write(f"progress {i:04d}\n")  # never raises, never waits
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(_read_all(read)))
    reader.start()
    deadline = time.monotonic() + 30
    while outlet.held and time.monotonic() < deadline:  # the reader catches up
        time.sleep(0.01)
    outlet.write("after\n")
    outlet.close()
    outlet.target.close()
    reader.join()
    text = got[0].decode().splitlines()
    kept = [line for line in text if line.startswith("progress")]
    assert kept == [f"progress {i:04d}" for i in range(len(kept))]  # the first ones, in order
    assert len(kept) < 1000
    assert text[-2] == (
        f"air: {1000 - len(kept)} lines not shown: this output's reader fell behind "
        "(`air history` has every event)"
    )
    assert text[-1] == "after"


def test_a_reader_gone_stops_the_json_stream() -> None:
    read, write = os.pipe()
    os.close(read)
    outlet = Outlet(os.fdopen(write, "w"), strict=True)
    outlet.write("first\n")
    deadline = time.monotonic() + 30

    def keep_writing() -> None:
        while time.monotonic() < deadline:
            outlet.write("next\n")
            time.sleep(0.01)

    with pytest.raises(OutletStopped) as stopped:
        keep_writing()
    assert not stopped.value.lagged
    outlet.close()
