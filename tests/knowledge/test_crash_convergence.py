"""kill -9 between the external write and the completion event, at many random points.

A child process (forked from a forkserver that has air imported, so each run costs a fork, not
an interpreter start) runs the knowledge scenario on real SQLite files and real rule files and
is SIGKILLed at a seeded kill point (``crash_child``) or after a random delay. Then recovery
runs, the converged state is checked (no orphan record, no lost candidate, no duplicate
promotion, events and rows agree), the resumed session replays the scenario, and the final
state is exactly the crash-free one.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import shutil
import signal
from pathlib import Path

import pytest
import trio

from air.session.knowledge_recovery import converge
from tests.knowledge import crash_child
from tests.knowledge import scenario as sc

SEEDED_RUNS = 50
DELAY_RUNS = 6


async def _recover_then_replay(root: Path) -> None:
    db, ledger = sc.open_ledger(root)
    service = sc.service_for(root, ledger)
    await converge(service)
    sc.check_converged(root, ledger.history(), final=False)
    await sc.run_scenario(service)
    sc.check_converged(root, ledger.history(), final=True)
    settled = ledger.history()
    await converge(service)
    assert ledger.history() == settled
    service.close()
    db.close()


@pytest.mark.slow
def test_kill_minus_nine_at_random_points_converges(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["tests.knowledge.crash_child"])
    template = tmp_path / "template"
    sc.seed(template)
    ref = tmp_path / "ref"
    shutil.copytree(template, ref)
    p = ctx.Process(target=crash_child.run_child, args=(str(ref), -1))
    p.start()
    p.join(60)
    total = p.exitcode
    assert total is not None
    assert 20 <= total < 200, total  # kill points in a crash-free run
    rng = random.Random(14)
    killed = 0
    for i in range(SEEDED_RUNS + DELAY_RUNS):
        root = tmp_path / f"r{i}"
        shutil.copytree(template, root)
        if i < SEEDED_RUNS:
            p = ctx.Process(target=crash_child.run_child, args=(str(root), rng.randint(1, total)))
            p.start()
        else:
            ready = ctx.Event()
            p = ctx.Process(target=crash_child.run_child, args=(str(root), 0, ready))
            p.start()
            assert ready.wait(30)
            trio.run(trio.sleep, rng.uniform(0, 0.05))
            if p.is_alive() and p.pid is not None:
                os.kill(p.pid, signal.SIGKILL)
        p.join(60)
        assert p.exitcode is not None
        killed += p.exitcode == -signal.SIGKILL
        trio.run(_recover_then_replay, root)
    assert killed >= SEEDED_RUNS
