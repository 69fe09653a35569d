"""The parent side of the drops matrix (tests/remote/test_drops.py), run by the test as
``unshare --pid --fork --mount-proc python -m tests.remote.drops_parent SPEC``: its own PID
namespace with its own /proc, so it can neither see nor signal the "remote" processes (sshd's
and slurmstepd's children live in the test's namespace).

It supervises every scenario of the spec at once in one trio nursery through the real
``WorkerManager`` over the real launcher (a lease renewed in that nursery for ssh), with a
provider whose call never answers (``turn``), ``shell.run`` through the real remote executor
over ssh (``shell``), and retries a dropped attempt once. It reports to the test on stdout, one
JSON line per fact, stamped with ``time.monotonic()`` (the same clock in both namespaces), and
takes ``cancel SCENARIO`` lines on stdin.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any, cast

import trio

from air.contracts.error import AirException, ErrorKind, make_air_error
from air.contracts.event import RuntimeEvent
from air.contracts.ids import new_id
from air.contracts.provider import ProviderErrorEvent
from air.contracts.task import TaskConstraints, TaskSpec, TaskType, WorkspaceRef
from air.contracts.tool import ToolDefinition
from air.contracts.tool_runs import ToolExecutionContext, ToolResultEnvelope
from air.ipc.launcher import Launched, Launcher, LaunchSpec, WorkerHandle
from air.ipc.procs import find_marked
from air.remote.hosts import HostConfig, parse_hosts
from air.remote.session import SessionPool
from air.remote.srun import SrunLauncher
from air.remote.ssh import SshLauncher
from air.remote.workspace import RemoteTarget, execute_remote
from air.security.redact import SecretRedactor
from air.supervision.seams import SuperviseRequest
from air.supervision.worker_manager import SupervisionConfig, WorkerManager
from air.testing.workers.harness import DirArtifacts
from air.tools.run import ToolRun
from air.tools.shell import register_shell_tool

WORKER = "air.testing.workers.drop_states"


def say(sc: str, ev: str, **fields: Any) -> None:
    sys.stdout.write(json.dumps({"t": time.monotonic(), "sc": sc, "ev": ev, **fields}) + "\n")
    sys.stdout.flush()


class Events:
    """The event sink: durable events (and command.started) reported to the test."""

    def __init__(self, sc: str) -> None:
        self.sc = sc

    async def ingest(self, event: RuntimeEvent) -> None:
        say(self.sc, "event", type=event.type)

    async def ingest_ephemeral(self, event: RuntimeEvent) -> None:
        return None


class Provider:
    """A model call that never answers (or, for a completing scenario, fails after a second)."""

    def __init__(self, sc: str, complete: bool) -> None:
        self.sc, self.complete_soon = sc, complete

    async def complete(self, request: Any) -> Any:
        say(self.sc, "model_call")
        if not self.complete_soon:
            await trio.sleep_forever()
        await trio.sleep(1)
        error = make_air_error(kind=ErrorKind.PROVIDER_ERROR, message="no model here")
        yield ProviderErrorEvent(error=error)


class Services:
    """What a ``ToolRun`` needs of a registry: events reported, artifacts in a directory."""

    def __init__(self, sc: str, artifacts: DirArtifacts) -> None:
        self.recorder = Events(sc)
        self.artifacts = artifacts
        self.redactor = SecretRedactor()
        self.read_observations: dict[tuple[str, str], str] = {}


class _Definitions:
    def __init__(self) -> None:
        self.found: dict[str, ToolDefinition] = {}

    def register_streaming(self, definition: ToolDefinition, fn: Any) -> None:
        self.found[definition.name] = definition


def shell_definition() -> ToolDefinition:
    defs = _Definitions()
    register_shell_tool(cast(Any, defs))
    return defs.found["shell.run"]


class Reporting:
    """The scenario's launcher, reporting each launch (marker, client pid, remote pid) and what
    this namespace sees of the remote worker."""

    def __init__(self, sc: str, inner: SshLauncher | SrunLauncher) -> None:
        self.sc, self.inner = sc, inner

    async def launch(self, spec: LaunchSpec) -> Launched:
        say(self.sc, "launch", marker=spec.marker, agent_id=spec.agent_id)
        launched = await self.inner.launch(spec)
        say(self.sc, "launched", marker=spec.marker, client_pid=launched.handle.identity.pid)
        NURSERY[0].start_soon(self.probe, launched.handle, spec.marker)
        return launched._replace(handle=ReportingHandle(self.sc, spec.marker, launched.handle))

    async def probe(self, handle: Any, marker: str) -> None:
        """Once the guard named itself: what this namespace sees of it."""
        while handle.remote is None and handle.returncode is None:  # noqa: ASYNC110 (processes and files of this test)
            await trio.sleep(0.05)
        pid = int((handle.remote or {}).get("pid", 0))
        try:
            os.kill(pid, 0)
            signal_result = "delivered"
        except ProcessLookupError:
            signal_result = "no such process"
        except PermissionError:
            signal_result = "not permitted"
        say(
            self.sc,
            "probe",
            marker=marker,
            remote_pid=pid,
            visible=pid > 0 and os.path.exists(f"/proc/{pid}"),  # noqa: ASYNC240 (processes and files of this test)
            kill_0=signal_result,
            marked_here=find_marked(marker, max_age_s=0.0),
        )


class ReportingHandle:
    """The launched worker's handle, reporting when the parent starts tearing the worker down
    (``kill_tree``: the moment it noticed the drop, or gave up on the cancelled worker)."""

    def __init__(self, sc: str, marker: str, inner: WorkerHandle) -> None:
        self.sc, self.marker, self.inner = sc, marker, inner
        self.identity = inner.identity

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @property
    def returncode(self) -> int | None:
        return self.inner.returncode

    async def kill_tree(self, grace_s: float) -> bool:
        say(self.sc, "teardown", marker=self.marker)
        return await self.inner.kill_tree(grace_s)

    async def wait(self) -> int:
        return await self.inner.wait()


NURSERY: list[trio.Nursery] = []


async def run_scenario(
    spec: dict[str, Any], sc: dict[str, Any], host: HostConfig, nursery: trio.Nursery
) -> None:
    name: str = sc["id"]
    if name in spec.get("proxy_ports", {}):  # the scenario's own FaultProxy in front of sshd
        host = host.model_copy(update={"port": spec["proxy_ports"][name]})
    launcher_kind: str = spec["launcher"]
    root = Path(spec["root"]) / name
    root.mkdir(parents=True, exist_ok=True)
    inner: SshLauncher | SrunLauncher = (
        SshLauncher(host, nursery=nursery) if launcher_kind == "ssh" else SrunLauncher(host)
    )
    launcher = Reporting(name, inner)
    complete = sc["drop"] == "completion"
    artifacts = DirArtifacts(str(root / "artifacts"))
    task_id = new_id("task")
    shell = shell_definition()

    async def tools(tool: str, input: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        run_id = new_id("tr")
        say(name, "tool_call", tool=tool, tool_run_id=run_id)
        if tool != "shell.run":
            return ToolResultEnvelope(tool_run_id=run_id, tool_name=tool, status="ok")
        ended = False

        async def watch() -> None:
            """Report the moment the parent cancels the call (the executor's cleanup, shielded,
            may hold the call's own unwinding for seconds after it)."""
            try:
                await trio.sleep_forever()
            except trio.Cancelled:
                if not ended:
                    say(name, "call_cancelled", tool_run_id=run_id)
                raise

        output: Any = None
        failure: AirException | None = None
        async with trio.open_nursery() as watching:
            watching.start_soon(watch)
            try:
                if launcher_kind == "ssh":
                    target = RemoteTarget(host, spec["remote_worktree"])
                    context = ctx.model_copy(update={"task_id": task_id})
                    services = cast(Any, Services(name, artifacts))
                    run = ToolRun(run_id, shell, context, services)
                    pool = SessionPool()  # the attempt's sessions, closed at its end
                    try:
                        output = await execute_remote(target, "shell.run", input, run, pool)
                    finally:
                        with trio.CancelScope(shield=True):
                            await pool.close(task_id)
                else:  # the matrix keeps a Slurm call in the parent (steps: test_remote_batch)
                    if complete:
                        await trio.sleep(1)
                    else:
                        await trio.sleep_forever()
                    output = {"exit_code": 0}
            except AirException as exc:
                failure = exc
            finally:
                ended = True
                watching.cancel_scope.cancel()
        if failure is not None:
            return ToolResultEnvelope(
                tool_run_id=run_id, tool_name=tool, status="error", error=failure.error
            )
        return ToolResultEnvelope(tool_run_id=run_id, tool_name=tool, status="ok", output=output)

    managers: dict[str, WorkerManager] = {}
    attempts = 2 if sc.get("retry") else 1
    for attempt in range(attempts):
        state = sc["state"] if attempt == 0 else "tree"
        end = "complete" if complete or attempt > 0 else "hang"
        command = "sleep 1" if complete else f"sleep {sc['sleep_arg']}"
        env = {"DROP_STATE": state, "DROP_END": end, "DROP_COMMAND": command}
        manager = WorkerManager(
            tools=tools,
            provider=cast(Any, Provider(name, complete)),
            events=Events(name),
            artifacts=artifacts,
            config=SupervisionConfig(
                command=[sys.executable, "-P", "-m", WORKER],
                env=env,
                kill_grace_s=0.5,
                exit_grace_s=1.0,  # the worker ignores agent.cancel: killed a second after it
            ),
            state_dir=str(root / "runs"),
            launcher=cast(Launcher, launcher),
        )
        agent_id = new_id("agt")
        managers[name] = manager
        CURRENT[name] = (manager, agent_id)
        constraints: dict[str, Any] = {"model_id": "fake/model"}
        if sc["drop"] == "hard_timeout" and attempt == 0:
            constraints["hard_timeout_ms"] = sc["hard_timeout_ms"]
        request = SuperviseRequest(
            session_id="ses_drops",
            project_id="proj_drops",
            project_root=str(root),
            task_spec=TaskSpec(
                id=task_id,
                type=TaskType.REVIEW,
                title=name,
                description=name,
                constraints=TaskConstraints(**constraints),
            ),
            agent_id=agent_id,
            attempt_index=attempt,
            workspace=WorkspaceRef(workspace_id="ws", strategy="main", path=str(root)),
        )
        outcome = await manager.supervise(request)
        handle_sweep = [getattr(h, "swept", None) for h in getattr(inner, "handles", [])]
        error = outcome.error.message if outcome.error else None
        say(name, "outcome", attempt=attempt, kind=outcome.kind, swept=handle_sweep, error=error)
        if outcome.kind == "result":
            break


CURRENT: dict[str, tuple[WorkerManager, str]] = {}


async def commands() -> None:
    """``cancel SCENARIO`` lines from the test."""
    stdin = trio.lowlevel.FdStream(os.dup(0))
    buffer = b""
    async for chunk in stdin:
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            verb, _, name = line.decode().partition(" ")
            if verb == "cancel" and name in CURRENT:
                manager, agent_id = CURRENT[name]
                await manager.cancel(agent_id, "test: cancel")


async def main(path: str) -> None:
    spec = json.loads(Path(path).read_text())  # noqa: ASYNC240 (processes and files of this test)
    [host] = parse_hosts(Path(spec["hosts_file"]).read_text(), spec["hosts_file"])  # noqa: ASYNC240 (processes and files of this test)
    host = host.model_copy(update=spec.get("host_overrides", {}))
    say("", "parent", pid=os.getpid(), pid_ns=os.readlink("/proc/self/ns/pid"))
    async with trio.open_nursery() as outer:
        outer.start_soon(commands)
        async with trio.open_nursery() as nursery:
            NURSERY.append(nursery)
            for sc in spec["scenarios"]:
                nursery.start_soon(run_scenario, spec, sc, host, nursery)
        say("", "done")
        outer.cancel_scope.cancel()


if __name__ == "__main__":
    trio.run(main, sys.argv[1])
