"""Tasks that run on another host (issue #27 items 4 and 5; IMPL-REMOTE-5, IMPL-REMOTE-6).

Owns ``RemotePlan`` (which host each task runs on: its ``host:``, else the run's ``--host``),
``RoutingLauncher`` (the WorkerManager's launcher: a remote attempt's worker starts in the
task's remote worktree — over ssh, or as a Slurm job step whose job also runs the attempt's
tool calls (IMPL-SLURM-3) — every other one locally) and ``RemoteTaskRunner`` (the TaskRunner
around the WorkerManager: for a remote attempt the task's workspace goes to the host as a git
bundle, the attempt's tool calls are routed to that worktree, and a result comes back as a
bundle, is checked for ancestry and laid into the local workspace, where the same write-area
check and merge as for a local task take it). A remote attempt whose worktree could not be made
never starts a worker; its calls are refused while it is not attached.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

import trio

from air.contracts.error import AirException, ErrorKind
from air.ipc.launcher import Launched, Launcher, LaunchSpec
from air.remote.hosts import HostConfig
from air.remote.srun import SrunLauncher
from air.remote.ssh import SshLauncher
from air.remote.sync import RemoteRun, fetch_result, gc_remote, push_base
from air.remote.workspace import RemoteTarget, RoutingWorkspaceExecutor
from air.workspace.gitsafe import GitLocation, locate_git, run_git

if TYPE_CHECKING:
    from air.supervision.seams import SuperviseRequest, TaskRunner
    from air.supervision.task_outcome import TaskOutcome

__all__ = ["RemotePlan", "RemoteTaskRunner", "RoutingLauncher"]


class RemotePlan(NamedTuple):
    """Where tasks run: ``tasks`` (task id → its ``host:``) over ``default`` (``--host``)."""

    hosts: Mapping[str, HostConfig]
    tasks: Mapping[str, str]
    default: str | None = None

    def host_for(self, task_id: str) -> HostConfig | None:
        name = self.tasks.get(task_id, self.default)
        return self.hosts[name] if name is not None else None


class RoutingLauncher:
    """Launches a remote attempt's worker through its own ``SshLauncher`` or ``SrunLauncher``."""

    def __init__(self, local: Launcher) -> None:
        self.local = local
        self.remote: dict[str, SshLauncher | SrunLauncher] = {}
        """agent id → the launcher of its attempt."""

    async def launch(self, spec: LaunchSpec) -> Launched:
        launcher = self.remote.get(spec.agent_id)
        return await (launcher or self.local).launch(spec)


class RemoteTaskRunner:
    """A TaskRunner whose remote attempts run on their host (module docstring)."""

    def __init__(
        self,
        inner: TaskRunner,
        plan: RemotePlan,
        launcher: RoutingLauncher,
        executor: RoutingWorkspaceExecutor,
    ) -> None:
        self.inner = inner
        self.plan = plan
        self.launcher = launcher
        self.executor = executor

    async def supervise(self, request: SuperviseRequest) -> TaskOutcome:
        task_id = request.task_spec.id
        host = self.plan.host_for(task_id)
        if host is None:
            return await self.inner.supervise(request)
        self.executor.attach(task_id, None)  # from now on nothing of it runs here
        run = f"{task_id}-{request.agent_id}"[-80:]
        try:  # a workspace not in git cannot travel: the task fails, nothing runs here
            location = locate_git(request.workspace.path, project_root=request.project_root)
            remote = await push_base(host, location, run, _lifetime(request))
        except AirException as exc:
            return _unstarted(request, exc)
        try:
            outcome = await self._attempt(request, host, remote)
            if outcome.kind == "result":
                result = await fetch_result(location, remote)
                await _lay_into(location, result)
            return outcome
        finally:
            self.executor.attach(task_id, None)
            self.launcher.remote.pop(request.agent_id, None)
            with trio.move_on_after(30, shield=True):
                # why shielded: the run's repository on the host goes even as the run unwinds
                await self.executor.close(task_id)  # its executor sessions first (IMPL-REMOTE-7)
                await gc_remote(remote)

    async def _attempt(
        self, request: SuperviseRequest, host: HostConfig, remote: RemoteRun
    ) -> TaskOutcome:
        async with trio.open_nursery() as nursery:  # the workers' lease renewals
            target = RemoteTarget(host, remote.worktree)
            launcher: SshLauncher | SrunLauncher
            if host.launcher == "slurm":
                launcher = SrunLauncher(host, cwd=remote.worktree)
                target = target._replace(job=launcher.job_id)
            else:
                launcher = SshLauncher(host, nursery=nursery, cwd=remote.worktree)
            self.launcher.remote[request.agent_id] = launcher
            self.executor.attach(request.task_spec.id, target)
            try:
                return await self.inner.supervise(request)
            finally:
                nursery.cancel_scope.cancel()


def _lifetime(request: SuperviseRequest) -> float:
    """How long the run may live on the host: to the task's deadline (IMPL-DEADLINE-1), else
    its hard timeout; the host's gc never takes it as stale before (``air.remote.cache_gc``)."""
    if request.deadline_at is not None:
        return max(request.deadline_at - trio.current_time(), 0.0)
    return request.task_spec.constraints.hard_timeout_ms / 1000


def _unstarted(request: SuperviseRequest, exc: AirException) -> TaskOutcome:
    """The worktree could not be made on the host: no worker started (a spawn error)."""
    from air.supervision.task_outcome import TaskOutcome

    return TaskOutcome(
        task_id=request.task_spec.id,
        agent_id=request.agent_id,
        kind="spawn_error",
        error=exc.error,
        transient=False,
    )


async def _lay_into(location: GitLocation, result: str) -> None:
    """The remote result's files into the local workspace, as if the task had written them
    there (the index stays at the base): the local merge takes them from here."""
    for args in (("read-tree", "-u", "--reset", result), ("reset", "-q")):
        done = await run_git(location, *args)
        if done.returncode != 0:
            raise AirException.of(
                kind=ErrorKind.WORKSPACE_ERROR,
                message=f"cannot lay the remote result {result[:12]} into the workspace",
                detail=done.stderr.decode("utf-8", "replace")[-2000:],
                user_action="Check the task's workspace; the result is at refs/air/remote/.",
            )
