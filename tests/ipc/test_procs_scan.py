"""``find_marked`` with ``started_since`` (IMPL-IPC-5): a worker's descendants are found by its
run marker among the processes started no earlier than the worker; older processes are not
read. Real processes, real ``/proc``."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from functools import partial

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


def test_the_kills_of_a_cancelled_wave_share_their_proc_scans() -> None:
    """Sixteen process trees (each a group leader and a setsid grandchild, as a worker and what
    it started) killed at once, as a cancelled wave: every process is gone, and the kills read
    ``/proc`` fewer times than there are kills (IMPL-IPC-6), not twice or more each."""
    import trio

    from air.ipc.procs import kill_tree, scans_done

    code = (
        "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\ntime.sleep(60)\n"
    )
    trees = []
    for i in range(16):
        marker = f"m{os.getpid()}-wave{i}"
        proc = subprocess.Popen(
            [sys.executable, "-c", code],
            env={**os.environ, MARKER_ENV: marker},
            start_new_session=True,
        )
        trees.append((proc, marker))
        time.sleep(0.015)  # start times (clock ticks) apart, as a wave's workers are
    try:
        for _ in range(1000):  # every grandchild forked and its environment readable
            if all(len(find_marked(m)) == 2 for _, m in trees):
                break
            time.sleep(0.01)
        pids = [pid for _, m in trees for pid in find_marked(m)]
        assert len(pids) == 32
        time.sleep(0.1)  # no snapshot of the wait above is recent enough to serve the kills
        before = scans_done()

        async def cancel_wave() -> None:
            async with trio.open_nursery() as nursery:
                for proc, marker in reversed(trees):  # the youngest first
                    kill = partial(kill_tree, read_identity(proc.pid), marker=marker, grace_s=3)
                    nursery.start_soon(kill)

        trio.run(cancel_wave)
        scans = scans_done() - before
        assert all(find_marked(m) == [] for _, m in trees)
        assert scans < 16, scans  # fewer than one per kill (two or more each without sharing)
    finally:
        for proc, _ in trees:
            proc.kill()
            proc.wait()


def test_one_snapshot_serves_the_first_look_of_workers_started_at_different_times() -> None:
    """The first look of each kill in a wave (``find_marked`` with a shared age and the worker's
    own start time), the youngest worker first: one ``/proc`` pass serves them all, since the
    markers are read from every process no older than this one (IMPL-IPC-6); what each finds
    is still bounded by its own start time."""
    from air.ipc.procs import scans_done

    children = []
    for i in range(4):
        marker = f"m{os.getpid()}-first{i}"
        child = subprocess.Popen(
            [sys.executable, "-c", "import sys; sys.stdin.read()"],
            stdin=subprocess.PIPE,
            env={**os.environ, MARKER_ENV: marker},
        )
        children.append((child, marker))
        time.sleep(0.015)  # start times (clock ticks) apart
    try:
        for _ in range(1000):
            if all(find_marked(m) for _, m in children):
                break
            time.sleep(0.01)
        starts = [int(read_identity(c.pid).start_time or 0) for c, _ in children]
        assert starts == sorted(starts)
        assert starts[0] < starts[-1]
        time.sleep(1.0)  # the snapshots of the wait above are too old to serve
        before = scans_done()
        found = [
            find_marked(m, max_age_s=0.9, started_since=start)
            for (_, m), start in reversed(list(zip(children, starts, strict=True)))
        ]
        assert scans_done() - before == 1
        assert found == [[c.pid] for c, _ in reversed(children)]
        assert find_marked(children[0][1], max_age_s=60, started_since=starts[-1] + 10**6) == []
    finally:
        for child, _ in children:
            assert child.stdin is not None
            child.stdin.close()
            child.wait()
