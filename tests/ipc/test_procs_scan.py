"""``find_marked`` with ``started_since`` (IMPL-IPC-5): a worker's descendants are found by its
run marker among the processes started no earlier than the worker; older processes are not
read. Real processes, real ``/proc``."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from air.ipc.procs import MARKER_ENV, find_marked, read_identity


def test_a_marked_process_is_found_from_its_own_start_time_and_not_from_a_later_one() -> None:
    marker = f"m{os.getpid()}-scan"
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"],
        stdin=subprocess.PIPE,
        env={**os.environ, MARKER_ENV: marker},
    )
    try:
        start = read_identity(child.pid).start_time
        assert start is not None
        assert start.isdigit()
        # Popen returns once exec has closed its error pipe, a moment before the kernel sets
        # the new environment's bounds: until then /proc/PID/environ reads empty
        for _ in range(1000):
            if find_marked(marker):
                break
            time.sleep(0.01)
        assert find_marked(marker) == [child.pid]
        assert find_marked(marker, started_since=int(start)) == [child.pid]
        assert find_marked(marker, started_since=int(start) - 100) == [child.pid]
        # a process older than the bound is not read: no marker, even shared snapshots
        assert find_marked(marker, started_since=int(start) + 10**9) == []
        assert find_marked(marker, max_age_s=60, started_since=0) == [child.pid]
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait()
    assert find_marked(marker) == []
