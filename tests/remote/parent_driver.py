"""A parent air process for the recovery tests: ``python -m tests.remote.parent_driver HOSTS
TMP`` (the project is ``TMP/proj``). It supervises one task whose worker hangs
(``hang_with_grandchild``: a ``setsid`` grandchild, SIGTERM ignored) on the host of the file
HOSTS through the real WorkerManager and that host's launcher, with the project's run records;
the test SIGKILLs it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import trio

from air.remote.hosts import parse_hosts
from air.remote.srun import SrunLauncher
from air.remote.ssh import SshLauncher
from air.supervision.runs import runs_dir
from air.supervision.worker_manager import SupervisionConfig, WorkerManager
from air.testing.workers.harness import DirArtifacts, RecordingEvents
from tests.remote.conftest import Rig, noop_tool


async def main(hosts_file: str, project: str) -> None:
    [host] = parse_hosts(await trio.Path(hosts_file).read_text(), hosts_file)
    rig = Rig(Path(project), RecordingEvents(), DirArtifacts(os.path.join(project, "artifacts")))
    launcher = SrunLauncher(host) if host.launcher == "slurm" else SshLauncher(host)
    manager = WorkerManager(
        tools=noop_tool,
        provider=None,  # type: ignore[arg-type]  # the worker makes no model calls
        events=rig.events,
        artifacts=rig.artifacts,
        config=SupervisionConfig(
            command=[sys.executable, "-P", "-m", "air.testing.workers.hang_with_grandchild"],
            env={"IGNORE_TERM": "1"},
        ),
        state_dir=runs_dir(os.path.join(project, "proj")),
        launcher=launcher,
    )
    await manager.supervise(rig.request("x", hard_timeout_ms=600_000))


if __name__ == "__main__":
    trio.run(main, sys.argv[1], sys.argv[2])
