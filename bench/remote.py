"""Remote workers over ssh (issue #27), each figure as a ratio to a local worker in the same run.

Run: ``.venv/bin/python bench/remote.py [--rounds R] [--trips N] [--host NAME] [--output]``
(default host: ``local-ssh`` of ``.remote/hosts.yaml``, which ``scripts/remote_setup.sh``
writes; needs root to read the remote user's processes for the canary).

1. Spawn-to-ready: launch, ``agent.start`` sent, until ``worker.ready`` is decoded — the real
   ``python -m air.roles`` — locally (``LocalLauncher``, no spare), over ssh with a fresh
   connection ("cold"), and over ssh through a ControlMaster air opened (``open_ssh_master``).
2. Round trips: the real ``WorkerManager`` serving N ``tool.call`` → ``tool.result`` of the
   ``pingpong`` worker, each call carrying 256 B, 4 KiB, 64 KiB or 1 MiB of padding; calls per
   second, remote vs local, and the per-call overhead over ssh (microseconds added per call).
3. Canary: a secret in the parent's environment is looked for on the remote side while a worker
   runs (every process of the remote user: ``/proc/PID/environ`` and ``cmdline``) and after
   (every file under the remote user's home): found 0 times is the goal.

5. Slurm (with ``--slurm``: ``local-slurm`` of ``.remote/slurm-hosts.yaml``, which
   ``scripts/slurm_setup.sh`` writes): spawn-to-ready through ``SrunLauncher`` (allocation, step
   launch, the guard, the worker connecting back) and the round trips above over the worker's
   side channel (IMPL-SLURM-5; srun's stdio before it), as ratios to local.

6. Per-tool-call overhead: ``fs.read`` of one file of the generated project through the real
   ToolRegistry (PermissionEngine, events in a real session), locally and for a task attached
   to the project's worktree on the host: through the task's kept executor session
   (IMPL-REMOTE-7), and with one connection per call (a fresh session each: what every call
   cost before the sessions were kept); milliseconds per call and ratios to local.

7. Command output (``--output``): ``shell.run`` of a command printing 10, 80 and 200 MB, locally
   and for a task on the host (a kept session); seconds, the ratio to local, and the longest the
   parent's Trio loop went without running meanwhile.

4. Workspace sync: a generated project (400 files, ~1.6 MiB, one dirty file) sent to the host
   (``push_base``) for a first and a second run (the second sends only what the host lacks),
   and a result taken back (``fetch_result``); bytes and seconds, against ``git worktree add``
   of the same base locally; then a result of 200 MB that does not compress: seconds against
   the small one and the parent's peak RSS growth (``--sync``: this part only).
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pwd
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import trio

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from air.contracts.ids import new_id  # noqa: E402
from air.contracts.task import TaskSpec, TaskType, WorkspaceRef  # noqa: E402
from air.contracts.tool_runs import ToolExecutionContext, ToolResultEnvelope  # noqa: E402
from air.ipc.launcher import Launcher, LaunchSpec, LocalLauncher  # noqa: E402
from air.ipc.process import WorkerProcess  # noqa: E402
from air.ipc.protocol import make_envelope  # noqa: E402
from air.remote.hosts import HostConfig, find_host, parse_hosts  # noqa: E402
from air.remote.srun import SrunLauncher, client_environment, job_id_of  # noqa: E402
from air.remote.ssh import SshLauncher, open_ssh_master  # noqa: E402
from air.remote.sync import fetch_result, gc_remote, push_base  # noqa: E402
from air.supervision.seams import SuperviseRequest  # noqa: E402
from air.supervision.worker_manager import SupervisionConfig, WorkerManager  # noqa: E402
from air.testing.workers import command_for  # noqa: E402
from air.testing.workers.harness import DirArtifacts, RecordingEvents  # noqa: E402
from air.workspace.gitsafe import locate_git  # noqa: E402
from bench.workers import _start  # noqa: E402

CANARY = "sk-ant-bench-canary-5e6f7a8b9c0d"
SIZES = (256, 4096, 65536, 1 << 20)
IDENTITY = ["-c", "user.name=bench", "-c", "user.email=bench@localhost"]


async def spawn_ready(launcher: Launcher) -> float:
    agent_id = new_id("agt")
    t0 = time.perf_counter()
    launched = await launcher.launch(LaunchSpec(agent_id=agent_id, marker=new_id("m")))
    proc = WorkerProcess(launched, agent_id=agent_id)
    start = _start(agent_id).model_dump(mode="json")
    await proc.send(make_envelope("control", start, session_id="ses_bench", agent_id=agent_id))
    msg = await proc.receive()
    elapsed = time.perf_counter() - t0
    assert msg is not None, msg
    assert not isinstance(msg, Exception), msg
    assert msg.payload.get("type") == "worker.ready", msg
    await proc.close_stdin()
    await proc.kill_tree(0.5)
    await proc.wait()
    return elapsed


def remote_processes(user: str) -> list[int]:
    uid = pwd.getpwnam(user).pw_uid
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid == uid:
                    pids.append(int(name))
            except OSError:
                continue
    return pids


def canary_in_processes(user: str) -> int:
    found = 0
    for pid in remote_processes(user):
        for part in ("environ", "cmdline"):
            try:
                found += CANARY.encode() in Path(f"/proc/{pid}/{part}").read_bytes()
            except OSError:
                continue
    return found


def canary_in_home(user: str) -> int:
    found = 0
    for dirpath, _dirs, files in os.walk(pwd.getpwnam(user).pw_dir):
        for name in files:
            path = os.path.join(dirpath, name)
            try:
                if os.path.islink(path) or os.path.getsize(path) > (8 << 20):
                    continue
                found += CANARY.encode() in Path(path).read_bytes()
            except OSError:
                continue
    return found


async def round_trips(
    launcher: Launcher, trips: int, size: int, tmp: str, seen: dict[str, int]
) -> float:
    marks: dict[str, float] = {}

    async def noop(
        name: str, input: dict[str, Any], ctx: ToolExecutionContext
    ) -> ToolResultEnvelope:
        now = time.perf_counter()
        marks.setdefault("first", now)
        marks["last"] = now
        if input.get("i") == 1 and isinstance(launcher, SshLauncher):
            user = launcher.host.user or "root"
            seen["processes"] = seen.get("processes", 0) + canary_in_processes(user)
        return ToolResultEnvelope(
            tool_run_id="tr_bench", tool_name=name, status="ok", output=input.get("i")
        )

    class NoProvider:
        def complete(self, request: Any) -> Any:
            raise RuntimeError("the benchmark worker makes no model calls")

    manager = WorkerManager(
        tools=noop,
        provider=NoProvider(),
        events=RecordingEvents(),
        artifacts=DirArtifacts(os.path.join(tmp, "artifacts")),
        config=SupervisionConfig(command=command_for("pingpong"), max_line_bytes=8 << 20),
        state_dir=os.path.join(tmp, "runs"),
        launcher=launcher,
    )
    request = SuperviseRequest(
        session_id="ses_bench",
        project_id="p",
        project_root=tmp,
        task_spec=TaskSpec(
            id=new_id("task"), type=TaskType.REVIEW, title="b", description=f"{trips + 1}:{size}"
        ),
        agent_id=new_id("agt"),
        attempt_index=0,
        workspace=WorkspaceRef(workspace_id="ws", strategy="main", path=tmp),
    )
    outcome = await manager.supervise(request)
    assert outcome.kind == "result", outcome
    return trips / (marks["last"] - marks["first"])


def _make_project(tmp: str, read_size: int = 0) -> tuple[Path, float]:
    """A generated project (one dirty file; ``read.txt`` of ``read_size`` bytes) and how long a
    local worktree of it takes."""
    repo = Path(tmp, "proj")
    repo.mkdir()
    if read_size:
        Path(repo, "read.txt").write_text(("x" * 63 + "\n") * (read_size // 64))
    for i in range(400):
        lines = (f"line {j} of file {i}: {os.urandom(24).hex()}\n" for j in range(60))
        Path(repo, f"f{i:03}.txt").write_text("".join(lines))
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "bench"]):
        subprocess.run(["git", *IDENTITY, *argv], cwd=repo, check=True)
    Path(repo, "f000.txt").write_text("dirty\n")
    t0 = time.perf_counter()
    subprocess.run(
        ["git", "worktree", "add", "-q", "--detach", str(Path(tmp, "wt")), "HEAD"],
        cwd=repo,
        check=True,
    )
    return repo, time.perf_counter() - t0


READ_SIZES = {"256 B": 256, "64 KiB": 65536}
"""The files part 6 reads: a reply under srun's 1 KiB message and one of many."""


@asynccontextmanager
async def _bench_project(host: HostConfig, read_size: int = 0) -> AsyncIterator[Any]:
    """A generated project sent to ``host``: its remote run, a maker of registries on its
    session (local, or through a workspace executor) and a task's call context; the session is
    closed and the host's run collected after."""
    from air.remote.workspace import RoutingWorkspaceExecutor
    from air.security.engine import PermissionEngine
    from air.session.manager import SessionManager
    from air.session.project import ProjectStore
    from air.tools import ToolRegistry, register_builtin_tools

    with tempfile.TemporaryDirectory() as tmp:
        repo, _ = _make_project(tmp, read_size=read_size)
        location = locate_git(str(repo), project_root=str(repo))
        remote = await push_base(host, location, "bench_" + os.urandom(4).hex())
        session = SessionManager().open_session(ProjectStore().initialize(repo))

        def registry(workspace: RoutingWorkspaceExecutor | None) -> ToolRegistry:
            engine = PermissionEngine(sink=session.ingestor.ingest)
            made = ToolRegistry(
                engine=engine,
                recorder=session.ingestor,
                artifacts=session.artifacts,
                workspace=workspace,
            )
            register_builtin_tools(made)
            return made

        ctx = ToolExecutionContext(
            session_id=session.session_id,
            task_id="task_bench",
            project_root=str(repo),
            workspace_root=str(repo),
        )
        try:
            yield remote, registry, ctx
        finally:
            session.close()
            await gc_remote(remote)


async def _holding_job(nursery: trio.Nursery) -> int:
    """A job of this user's on the slurm host to run the sessions' steps in (``--overlap``),
    cancelled when ``nursery`` is."""
    name = "air-bench-hold-" + os.urandom(4).hex()
    argv = ["srun", "-N1", "-n1", f"--job-name={name}", "--time=15:00", "sleep", "900"]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "check": False}
    nursery.start_soon(partial(trio.run_process, argv, env=client_environment(), **quiet))
    while (job := await job_id_of(name)) is None or not await _running(job):  # noqa: ASYNC110
        await trio.sleep(0.2)
    return job


async def _running(job: int) -> bool:
    done = await trio.run_process(
        ["squeue", "-h", "-j", str(job), "-o", "%T"], capture_stdout=True, check=False
    )
    return done.stdout.strip() == b"RUNNING"


async def tool_call_figures(host: HostConfig, rounds: int, calls: int) -> None:
    async with trio.open_nursery() as nursery:
        job = await _holding_job(nursery) if host.launcher == "slurm" else None
        for label, size in READ_SIZES.items():
            await _tool_call_figures(host, rounds, calls, job, label, size)
        nursery.cancel_scope.cancel()


async def _tool_call_figures(
    host: HostConfig, rounds: int, calls: int, job: int | None, label: str, size: int
) -> None:
    from air.remote.workspace import RemoteTarget, RoutingWorkspaceExecutor
    from air.tools import ToolRegistry

    async with _bench_project(host, size) as (remote, registry, ctx):

        async def per_call(
            made: ToolRegistry, fresh: RoutingWorkspaceExecutor | None, n: int = calls
        ) -> float:
            t0 = time.perf_counter()
            for _ in range(n):
                result = await made.call("fs.read", {"path": "read.txt"}, ctx)
                assert result.status == "ok", result
                if fresh is not None:  # one connection per call: the session ends after it
                    await fresh.close("task_bench")
            return (time.perf_counter() - t0) / n

        local = registry(None)
        kept_exec, cold_exec = RoutingWorkspaceExecutor(), RoutingWorkspaceExecutor()
        for executor in (kept_exec, cold_exec):
            executor.attach("task_bench", RemoteTarget(host, remote.worktree, lambda: job))
        kept, cold = registry(kept_exec), registry(cold_exec)
        await per_call(kept, None)  # the session's one connection, not counted
        times: dict[str, list[float]] = {"local": [], "kept session": [], "fresh session": []}
        for _ in range(rounds):  # the kept session is never idle long enough to retire
            times["local"].append(await per_call(local, None))
            times["kept session"].append(await per_call(kept, None))
        await kept_exec.close("task_bench")
        for _ in range(rounds):
            times["fresh session"].append(await per_call(cold, cold_exec, max(2, calls // 4)))
    base = statistics.median(times["local"])
    print(
        f"per tool call on {host.name} (fs.read of {label} through the registry, {calls} calls,"
        f" median of {rounds}):"
    )
    for name, values in times.items():
        med = statistics.median(values)
        print(
            f"  {name:<13} {med * 1000:8.2f} ms  {med / base:7.1f}x local"
            f"  (+{(med - base) * 1000:.2f} ms per call)"
        )


OUTPUT_MB = (10, 80, 200)
"""Part 7's command outputs, in MB."""


async def output_figures(host: HostConfig, rounds: int) -> None:
    """Part 7: ``shell.run`` of a command printing N MB, locally and for a task on the host
    (its kept session); seconds, ratio to local and the longest the parent's Trio loop went
    without running (a 10 ms ticker beside the call)."""
    from air.remote.workspace import RemoteTarget, RoutingWorkspaceExecutor
    from air.tools import ToolRegistry

    async with _bench_project(host) as (remote, registry, ctx):
        executor = RoutingWorkspaceExecutor()
        executor.attach("task_bench", RemoteTarget(host, remote.worktree, None))
        where = {"local": registry(None), "remote": registry(executor)}

        async def timed(made: ToolRegistry, mb: int) -> tuple[float, float]:
            gaps = [0.0]

            async def ticker() -> None:
                last = time.perf_counter()
                while True:
                    await trio.sleep(0.01)
                    now = time.perf_counter()
                    gaps.append(now - last - 0.01)
                    last = now

            command = f"head -c {mb}000000 /dev/zero | tr '\\0' a"
            t0 = time.perf_counter()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(ticker)
                result = await made.call("shell.run", {"command": command}, ctx)
                nursery.cancel_scope.cancel()
            assert result.status == "ok", result
            return time.perf_counter() - t0, max(gaps)

        await timed(where["remote"], 1)  # the session's connection, not counted
        print(f"shell.run output on {host.name} (median of {rounds}; loop gap: the longest):")
        for mb in OUTPUT_MB:
            secs: dict[str, list[float]] = {"local": [], "remote": []}
            gap: dict[str, float] = {"local": 0.0, "remote": 0.0}
            for _ in range(rounds):
                for name, made in where.items():
                    took, longest = await timed(made, mb)
                    secs[name].append(took)
                    gap[name] = max(gap[name], longest)
            loc, rem = statistics.median(secs["local"]), statistics.median(secs["remote"])
            print(
                f"  {mb:>4} MB  local {loc:6.2f} s  remote {rem:6.2f} s  {loc / rem:5.2f}x local"
                f"  loop gap local {gap['local'] * 1000:.0f} ms,"
                f" remote {gap['remote'] * 1000:.0f} ms"
            )
        await executor.close("task_bench")


async def sync_figures(host: HostConfig) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        repo, local = _make_project(tmp)
        location = locate_git(str(repo), project_root=str(repo))
        print(f"workspace sync (local `git worktree add`: {local * 1000:.0f} ms):")
        runs = []
        for label in ("first run", "second run"):
            run = "bench_" + os.urandom(4).hex()
            t0 = time.perf_counter()
            remote = await push_base(host, location, run)
            took = time.perf_counter() - t0
            runs.append(remote)
            print(
                f"  {label:<10} push {remote.sent_bytes:>9} B  {took * 1000:6.0f} ms  "
                f"{took / local:5.1f}x local"
            )
        t0 = time.perf_counter()
        await fetch_result(location, runs[-1])
        took = time.perf_counter() - t0
        print(f"  result back          {took * 1000:6.0f} ms  {took / local:5.1f}x local")
        # a result of BIG_RESULT_MB new bytes that do not compress: time and the parent's peak
        # RSS growth (a result bundle used to be read whole into memory, then written)
        big = Path(runs[-1].worktree, "big.bin")
        big.write_bytes(os.urandom(BIG_RESULT_MB << 20))  # noqa: ASYNC240 (the bench's files)
        os.chown(big, *_owner(runs[-1].worktree))
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t0 = time.perf_counter()
        await fetch_result(location, runs[-1])
        big_took = time.perf_counter() - t0
        grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak) / 1024
        print(
            f"  result of {BIG_RESULT_MB} MB    {big_took * 1000:6.0f} ms  "
            f"{big_took / took:5.1f}x the small one; parent peak RSS +{grew:.0f} MiB"
        )
        for remote in runs:
            await gc_remote(remote)


BIG_RESULT_MB = 200


def _owner(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_uid, st.st_gid


def _slurm_host() -> HostConfig:
    path = REPO / ".remote" / "slurm-hosts.yaml"
    [host] = parse_hosts(path.read_text(), str(path))
    return host


async def slurm_figures(rounds: int, trips: int) -> None:
    host = _slurm_host()
    local, srun = LocalLauncher(), SrunLauncher(host)
    spawn: dict[str, list[float]] = {"local": [], "srun": []}
    for _ in range(rounds):
        spawn["local"].append(await spawn_ready(local))
        spawn["srun"].append(await spawn_ready(srun))
    base = statistics.median(spawn["local"])
    print(f"slurm host {host.name} (srun {' '.join(host.srun_options)}):")
    for name, times in spawn.items():
        med = statistics.median(times)
        print(f"  spawn {name:<6} {med * 1000:7.1f} ms  {med / base:5.2f}x local")
    with tempfile.TemporaryDirectory() as tmp:
        for size in SIZES:
            rates: dict[str, list[float]] = {"local": [], "srun": []}
            for _ in range(rounds):
                rates["local"].append(await round_trips(local, trips, size, tmp, {}))
                rates["srun"].append(await round_trips(srun, trips, size, tmp, {}))
            loc, rem = statistics.median(rates["local"]), statistics.median(rates["srun"])
            print(
                f"  {size:>8} B  local {loc:8.0f}/s  srun {rem:8.0f}/s  {rem / loc:5.2f}x local"
                f"  (+{(1 / rem - 1 / loc) * 1e6:.0f} us per call)"
            )


def _host(name: str | None) -> HostConfig:
    if name:
        return find_host(name, None)
    path = REPO / ".remote" / "hosts.yaml"
    [host] = parse_hosts(path.read_text(), str(path))
    return host


async def main(rounds: int, trips: int, host: HostConfig) -> None:
    os.environ["ANTHROPIC_API_KEY"] = CANARY
    local = LocalLauncher()
    cold = SshLauncher(host)
    print(f"host {host.name} ({host.destination()}:{host.port}), load {os.getloadavg()[0]:.1f}")
    async with open_ssh_master(host) as control:
        master = SshLauncher(host, control_path=control)
        spawn: dict[str, list[float]] = {"local": [], "ssh cold": [], "ssh master": []}
        for _ in range(rounds):  # interleaved, so drift hits all three alike
            spawn["local"].append(await spawn_ready(local))
            spawn["ssh cold"].append(await spawn_ready(cold))
            spawn["ssh master"].append(await spawn_ready(master))
        base = statistics.median(spawn["local"])
        print("spawn-to-ready (median of", rounds, "):")
        for name, times in spawn.items():
            med = statistics.median(times)
            print(f"  {name:<10} {med * 1000:7.1f} ms  {med / base:5.2f}x local")
        seen: dict[str, int] = {}
        print(f"round trips ({trips} calls, median of {rounds}; calls/s, remote over master):")
        with tempfile.TemporaryDirectory() as tmp:
            for size in SIZES:
                rates: dict[str, list[float]] = {"local": [], "ssh": []}
                for _ in range(rounds):
                    rates["local"].append(await round_trips(local, trips, size, tmp, seen))
                    rates["ssh"].append(await round_trips(master, trips, size, tmp, seen))
                loc, rem = statistics.median(rates["local"]), statistics.median(rates["ssh"])
                extra_us = (1 / rem - 1 / loc) * 1e6
                print(
                    f"  {size:>8} B  local {loc:8.0f}/s  ssh {rem:8.0f}/s  {rem / loc:5.2f}x local"
                    f"  (+{extra_us:.0f} us per call)"
                )
    await tool_call_figures(host, rounds, 20)
    await sync_figures(host)
    user = host.user or "root"
    print(
        f"canary: {seen.get('processes', 0)} in the remote user's processes while workers ran, "
        f"{canary_in_home(user)} in its home"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--trips", type=int, default=200)
    parser.add_argument("--host", default=None)
    parser.add_argument("--slurm", action="store_true", help="only the srun figures (part 5)")
    parser.add_argument("--calls", action="store_true", help="only the tool-call figures (part 6)")
    parser.add_argument("--output", action="store_true", help="only the output figures (part 7)")
    parser.add_argument("--sync", action="store_true", help="only the sync figures (part 4)")
    args = parser.parse_args()
    if args.output:
        print(f"load {os.getloadavg()[0]:.1f}")
        trio.run(output_figures, _host(args.host), args.rounds)
    elif args.calls:  # with --slurm: on the slurm host, in a job of the bench's
        print(f"load {os.getloadavg()[0]:.1f}")
        host = _slurm_host() if args.slurm else _host(args.host)
        with open("/tmp/air-tests-slurm.lock", "a") as lock:  # the node is the tests' too
            if args.slurm:
                fcntl.flock(lock, fcntl.LOCK_EX)
            trio.run(tool_call_figures, host, args.rounds, 20)
    elif args.slurm:
        trio.run(slurm_figures, args.rounds, args.trips)
    elif args.sync:
        print(f"load {os.getloadavg()[0]:.1f}")
        trio.run(sync_figures, _host(args.host))
    else:
        trio.run(main, args.rounds, args.trips, _host(args.host))
