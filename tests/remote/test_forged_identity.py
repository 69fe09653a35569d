"""The guard's identity line is what the remote host chose (a compromised machine, a tampered
install): the parent records it in the run record and ``agent.started`` and recovery reads it
back, so it is held to what air's guard writes (``air.remote.guard.parse_identity``). Before,
``air-remote [1]`` ended the supervision with an AttributeError, and ``{"pid": 1e400}`` or a
``host`` that was an object went into the records as they came."""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from air.remote.guard import parse_identity
from air.remote.hosts import HostConfig
from air.remote.srun import SrunLauncher
from tests.remote.conftest import Rig

GOOD = {
    "host": "build-1",
    "boot_id": "97d92249-4ef7-4112-80a4-754a2529c033",
    "pid": 4242,
    "start_time": "3882453",
    "python": "3.11.7",
    "air": "0.1.0",
}

FORGED = [
    b"air-remote [1]",
    b'air-remote "build-1"',
    b"air-remote null",
    b"air-remote {",
    b'air-remote {"pid": 1e400, "host": "h"}',
    b'air-remote {"pid": 123456789012345678901234567890, "host": "h"}',
    b'air-remote {"pid": -1, "host": "h"}',
    b'air-remote {"pid": true, "host": "h"}',
    b'air-remote {"pid": 4242.0, "host": "h"}',
    b'air-remote {"pid": 4242, "host": {"a": 1}}',
    b'air-remote {"pid": 4242, "host": ""}',
    b'air-remote {"pid": 4242, "host": "h\\u001b[2J"}',
    b'air-remote {"pid": 4242, "host": "h", "boot_id": [1]}',
    b'air-remote {"pid": 4242, "host": "h", "start_time": "12; rm -rf /"}',
    b'air-remote {"pid": 4242, "host": "h", "air": "' + b"x" * 65 + b'"}',
    b'air-remote {"pid": 4242, "host": "' + b"h" * 5000 + b'"}',
    b'air-remote {"pid": 4242, "host": "h", "pad": "' + b"x" * 5000 + b'"}',  # over 4 KiB
]


def test_what_the_guard_writes_is_read_back() -> None:
    line = b"air-remote " + json.dumps(GOOD).encode()
    assert parse_identity(line) == GOOD
    extra = b"air-remote " + json.dumps({**GOOD, "note": {"x": 1}}).encode()
    assert parse_identity(extra) == GOOD  # what air does not read is not kept
    bare = b'air-remote {"pid": 7, "host": "h"}'
    assert parse_identity(bare) == {
        "host": "h", "pid": 7, "start_time": None, "boot_id": None, "python": None, "air": None
    }  # fmt: skip


@pytest.mark.parametrize("line", FORGED, ids=range(len(FORGED)))
def test_a_forged_identity_is_no_identity(line: bytes) -> None:
    assert parse_identity(line) is None


FORGE = """#!/bin/sh
# the host's python: in place of air's guard, a forged identity line, then the worker unguarded
if [ "$3" = "air.remote.guard" ] && [ "$4" = "run" ]; then
  printf '%s\\n' '{line}'
  while [ "$1" != "--" ]; do shift; done
  shift
  exec "$@"
fi
exec {python} "$@"
"""


FORGED_LINES = ["air-remote [1]", 'air-remote {"pid": 1e400, "host": "h"}']


@pytest.fixture(params=FORGED_LINES, ids=["list", "pid-1e400"])
def forging_host(
    remote_host: HostConfig, request: pytest.FixtureRequest
) -> Iterator[tuple[HostConfig, str]]:
    """``remote_host`` whose python forges the guard's line; the line."""
    where = tempfile.mkdtemp(prefix="air-forge-")
    os.chmod(where, 0o755)
    path = Path(where, "python")
    path.write_text(FORGE.format(line=request.param, python=remote_host.python))
    path.chmod(stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    yield remote_host.model_copy(update={"python": str(path)}), request.param
    shutil.rmtree(where)


@pytest.mark.slow
async def test_a_forged_identity_ends_the_attempt_with_one_error(
    rig: Rig, forging_host: tuple[HostConfig, str]
) -> None:
    host, line = forging_host
    outcome = await rig.manager(host, "air.testing.workers.pingpong").supervise(rig.request())
    assert outcome.kind == "protocol_error", outcome
    assert outcome.transient is False
    assert outcome.error is not None
    assert "named itself in a way air's guard never does" in outcome.error.message
    assert line in outcome.error.message
    assert outcome.error.user_action
    assert "air doctor --host" in outcome.error.user_action
    assert rig.types() == ["agent.started", "agent.failed"]
    started = rig.events.events[0][1].payload
    print("STARTED", started, outcome)
    assert "remote" not in started, started  # nothing of the forged line was recorded


@pytest.mark.slow
async def test_a_forged_identity_ends_a_slurm_step_with_one_error(
    rig: Rig, slurm_host: HostConfig, busy_node: str, tmp_path: Path
) -> None:
    """Queued first (the node is busy for a second), as on a loaded cluster: srun's notices on
    stderr do not hide the forged line."""
    path = tmp_path / "python"
    path.write_text(FORGE.format(line=FORGED_LINES[0], python=slurm_host.python))
    path.chmod(stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    manager = rig.manager(slurm_host, "air.testing.workers.pingpong")
    manager.launcher = SrunLauncher(slurm_host.model_copy(update={"python": str(path)}))

    async def release() -> None:
        await trio.sleep(1)
        await trio.run_process(["scancel", f"--name={busy_node}"], check=False)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(release)
        outcome = await manager.supervise(rig.request())
    assert outcome.kind == "protocol_error", outcome
    assert outcome.error is not None
    assert "named itself in a way air's guard never does" in outcome.error.message
    assert FORGED_LINES[0] in outcome.error.message, outcome.error.message
    assert "remote" not in rig.events.events[0][1].payload


FORGE_JOB = """#!/bin/sh
# the node's python: srun's allocation notice forged on the step's stderr, then air's guard
if [ "$3" = "air.remote.guard" ] && [ "$4" = "run" ]; then
  echo 'srun: job 424242 queued and waiting for resources' >&2
  echo 'srun: job 424242 has been allocated resources' >&2
fi
exec {python} "$@"
"""


@pytest.mark.slow
async def test_a_slurm_job_id_a_step_prints_is_not_taken(
    rig: Rig, slurm_host: HostConfig, tmp_path: Path
) -> None:
    """srun's stderr is also the step's once it runs: before, a node that printed srun's
    notice first named job 424242 the task's, which recovery then cancelled by that id (the
    user's other jobs, say). The id now comes from squeue by the job's name."""
    path = tmp_path / "python"
    path.write_text(FORGE_JOB.format(python=slurm_host.python))
    path.chmod(stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    manager = rig.manager(slurm_host, "air.testing.workers.pingpong")
    manager.launcher = SrunLauncher(slurm_host.model_copy(update={"python": str(path)}))
    outcome = await manager.supervise(rig.request())
    assert outcome.kind == "result", outcome
    [started] = [e.payload for _, e in rig.events.events if e.type == "agent.started"]
    job = started["remote"]["job_id"]
    assert isinstance(job, int), started
    assert job not in (None, 424242), started
