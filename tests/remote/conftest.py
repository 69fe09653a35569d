"""The remote host of these tests: this machine's sshd on 127.0.0.1 with its own user and venv,
set up (idempotently) by scripts/remote_setup.sh; the real WorkerManager over the real
SshLauncher, with file-backed sinks. Needs root (the setup creates a user and starts sshd)."""

from __future__ import annotations

import fcntl
import os
import pwd
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from air.contracts.ids import new_id
from air.contracts.task import TaskConstraints, TaskSpec, TaskType, WorkspaceRef
from air.contracts.tool_runs import ToolExecutionContext, ToolResultEnvelope
from air.ipc.procs import find_marked
from air.remote.hosts import HostConfig, parse_hosts
from air.remote.ssh import SshLauncher
from air.supervision.seams import SuperviseRequest
from air.supervision.worker_manager import SupervisionConfig, WorkerManager
from air.testing.workers.harness import DirArtifacts, RecordingEvents
from tests.tools.conftest import Env

CHECKOUT = Path(__file__).resolve().parents[2]
REMOTE_DIR = CHECKOUT / ".remote"
REMOTE_USER = "airremote"


def _host_after(script: str, hosts: str) -> HostConfig:
    """The one host of ``.remote/HOSTS`` once ``scripts/SCRIPT`` made sure it is there (the
    scripts only do what is missing: a second run costs about a second)."""
    done = subprocess.run(
        ["bash", str(CHECKOUT / "scripts" / script)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, f"scripts/{script} failed:\n{done.stderr}"
    path = REMOTE_DIR / hosts
    [host] = parse_hosts(path.read_text(), str(path))
    return host


@pytest.fixture(scope="session")
def remote_host() -> HostConfig:
    """``local-ssh``: the server, the user and the wheel of this checkout are there."""
    return _host_after("remote_setup.sh", "hosts.yaml")


SLURM_LOCK = Path(tempfile.gettempdir()) / "air-tests-slurm.lock"
"""Held by every test on the one-node Slurm, which all checkouts of this machine share: one of
them holds the node busy on purpose, others time a placement. (pytest-xdist's `xdist_group` does
not group on pytest 9: it rewrites a node id attribute pytest no longer reads.)"""


@pytest.fixture(scope="session")
def _slurm_ready() -> HostConfig:
    return _host_after("slurm_setup.sh", "slurm-hosts.yaml")


@pytest.fixture
def slurm_host(_slurm_ready: HostConfig) -> Iterator[HostConfig]:
    """``local-slurm``: munge, slurmctld and slurmd run and the node is idle; this test has it
    to itself (``SLURM_LOCK``) until it ends."""
    with open(SLURM_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield _slurm_ready


@pytest.fixture
def busy_node(slurm_host: HostConfig) -> Iterator[str]:
    """The node held by a whole-node allocation of its own until the test cancels it (by the
    name it yields) or ends."""
    name = "air-test-hold-" + os.urandom(4).hex()
    hold = subprocess.Popen(
        ["srun", "-N1", "-n1", "--exclusive", f"--job-name={name}", "sleep", "120"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        for _ in range(300):
            if any(j.endswith(" RUNNING") for j in _squeue(name)):
                break
            time.sleep(0.1)
        else:
            raise AssertionError(f"the holding job {name} never ran")
        yield name
    finally:
        subprocess.run(["scancel", f"--name={name}"], check=False)
        hold.kill()
        hold.wait()


def _squeue(name: str) -> list[str]:
    done = subprocess.run(
        ["squeue", "-h", "-n", name, "-o", "%i %T"], capture_output=True, text=True, check=True
    )
    return done.stdout.split("\n")[:-1]


def remote_uid() -> int:
    return pwd.getpwnam(REMOTE_USER).pw_uid


def process_uid(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def process_environ(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return fh.read()
    except OSError:
        return b""


def remote_marked(marker: str) -> list[int]:
    """The processes of a run on the "remote" host (its user's, carrying the marker)."""
    return [p for p in find_marked(marker) if process_uid(p) == remote_uid()]


async def noop_tool(
    name: str, input: dict[str, Any], ctx: ToolExecutionContext
) -> ToolResultEnvelope:
    return ToolResultEnvelope(
        tool_run_id=new_id("tr"), tool_name=name, status="ok", output=input.get("i")
    )


@dataclass
class Rig:
    tmp: Path
    events: RecordingEvents
    artifacts: DirArtifacts

    def manager(self, host: HostConfig, module: str, **cfg: Any) -> WorkerManager:
        return WorkerManager(
            tools=noop_tool,
            provider=None,  # type: ignore[arg-type]  # these workers make no model calls
            events=self.events,
            artifacts=self.artifacts,
            config=SupervisionConfig(command=[sys.executable, "-P", "-m", module], **cfg),
            state_dir=str(self.tmp / "runs"),
            launcher=SshLauncher(host),
        )

    def request(self, description: str = "3", **constraints: Any) -> SuperviseRequest:
        root = self.tmp / "proj"
        root.mkdir(exist_ok=True)
        return SuperviseRequest(
            session_id="ses_remote",
            project_id="proj_remote",
            project_root=str(root),
            task_spec=TaskSpec(
                id=new_id("task"),
                type=TaskType.REVIEW,
                title="t",
                description=description,
                constraints=TaskConstraints(**constraints),
            ),
            agent_id=new_id("agt"),
            attempt_index=0,
            workspace=WorkspaceRef(workspace_id="ws", strategy="main", path=str(root)),
        )

    def types(self) -> list[str]:
        return [e.type for _, e in self.events.events]


@pytest.fixture
def rig(tmp_path: Path) -> Rig:
    return Rig(tmp_path, RecordingEvents(), DirArtifacts(str(tmp_path / "artifacts")))


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    """A parent's session, engine and registry (``tests.tools.conftest.Env``)."""
    made = Env(tmp_path)
    yield made
    made.close()
