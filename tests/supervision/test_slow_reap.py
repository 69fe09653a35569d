"""An attempt whose reaping outlasts ``finish``'s bound (IMPL-REAP-1): a remote worker's kill
sweeps its host over a fresh connection, which to a black-holed host takes the sweep's whole
timeout (kill grace + 10 s); the drops matrix over ssh met it (tests/remote/test_drops.py).
The attempt still ends with its outcome, its terminal event and its run record; virtual time."""

from __future__ import annotations

import trio
import trio.testing

from air.supervision.runs import RunRecordStore
from air.supervision.worker_manager import SupervisionConfig, WorkerManager
from air.testing.launcher import FakeLauncher, scripted
from tests.supervision.conftest import NoProvider, Rig, bounded_nursery, echo_tool


async def test_a_reap_longer_than_its_bound_still_ends_the_attempt(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    worker = scripted([{"hang": True}])
    async with bounded_nursery() as nursery:
        launcher = FakeLauncher(nursery, worker, sweep_s=60)
        manager = WorkerManager(
            tools=echo_tool,
            provider=NoProvider(),
            events=rig.events,
            artifacts=rig.artifacts,
            config=SupervisionConfig(stall_after_s=0, kill_grace_s=1),
            state_dir=str(rig.tmp / "runs"),
            launcher=launcher,
        )
        request = rig.request(hard_timeout_ms=30_000)
        outcome = await manager.supervise(request)
    assert outcome.kind == "hard_timeout"
    assert outcome.exit_code == 5
    assert rig.event("agent.failed")["exit_code"] == 5
    assert launcher.launches[0][1].signals[0][1] == "SIGTERM"
    record = RunRecordStore(str(rig.tmp / "runs")).read(request.agent_id)
    assert record is not None
    assert record["state"] == "terminal"
