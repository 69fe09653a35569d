"""Worker benchmarks: spawn-to-ready latency and NDJSON round trips, each against a baseline
measured in the same run.

Run: ``.venv/bin/python bench/workers.py [--rounds R] [--trips N] [--cancels C] [--only-cancel]``.

1. Spawn-to-ready: ``WorkerProcess.spawn`` of ``python -m air.roles`` (own session, marker env),
   ``agent.start`` sent, until ``worker.ready`` is decoded — 1 worker, then 16 at once — vs a
   bare ``python -c`` child that prints one line, spawned the same way. Goal: <= 5x bare (set
   when ``worker.ready`` came from a stdlib fast path; since IMPL-START-2 it is sent once the
   worker has imported its runtime and validated its task, so this includes those imports).
2. Round trips: a worker makes N ``tool.call`` → ``tool.result`` round trips through the real
   ``WorkerRuntime`` and the real ``WorkerManager`` (validation, routing, envelopes) vs a raw
   pipe echo (a Python child echoing lines, the parent writing a line and reading it back; the
   line is the encoded ``tool.result`` the worker run sends, so sizes match). Goals (issue
   #11): >= 0.3x raw with both on one core, >= 0.5x on one core each. A bare Trio echo child
   is printed too, for context. Round trips are measured twice, with the parent and the child
   pinned to one core, then to one core each (see ``placements``); both ratios are printed.
   Each also prints the CPU time a round trip costs the parent and the child together
   (``/proc/PID/schedstat``), worker vs raw echo: unlike the wall-clock rates, that figure
   barely moves when other processes compete for the cores.
3. Cancel of 16 workers: ``--cancels`` times (default 10), 16 real workers each with a setsid
   grandchild are cancelled through the Scheduler, timed until all 32 processes are gone; the
   median, with the load average. Goal: <= 25 ms (one ``/proc`` scan per cancel, not per
   worker).
4. Memory per task (``--memory``): the parent's resident set after N review tasks through the
   real Scheduler, the real WorkerManager (handshake, read loop, result checks, run records)
   and a real session (SQLite file, ingestor, bus, projections), the workers being FakeLauncher
   tasks over memory streams under Trio's virtual clock; N = 1,000 and 10,000, each in a fresh
   process. Goal (issue 28 item 7): RSS at 10,000 <= 1.3x RSS at 1,000. With ``--before TREE``
   (another checkout of air, e.g. a ``git worktree`` of the base commit) the same children run
   from that tree too, alternating with this one's round by round, both printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from air.contracts.ids import new_id  # noqa: E402
from air.contracts.ipc import AgentStartControl  # noqa: E402
from air.contracts.runtime import AgentRuntimeContext, ContextPack, PermissionTemplate  # noqa: E402
from air.contracts.task import TaskSpec, TaskType, WorkspaceRef  # noqa: E402
from air.contracts.tool_runs import ToolExecutionContext, ToolResultEnvelope  # noqa: E402
from air.ipc.process import WorkerProcess  # noqa: E402
from air.ipc.protocol import WorkerProtocol, make_envelope, message_id  # noqa: E402
from air.supervision.seams import SuperviseRequest  # noqa: E402
from air.supervision.worker_manager import SupervisionConfig, WorkerManager  # noqa: E402
from air.testing.workers import command_for  # noqa: E402
from air.testing.workers.harness import DirArtifacts, RecordingEvents  # noqa: E402

BARE = [sys.executable, "-c", "print('ready', flush=True)"]
ECHO = [
    sys.executable,
    "-c",
    "import sys\nfor line in sys.stdin.buffer:\n    sys.stdout.buffer.write(line)\n"
    "    sys.stdout.buffer.flush()\n",
]

TRIO_ECHO = [
    sys.executable,
    "-c",
    "import os, trio\n"
    "async def main():\n"
    "    rx, tx = trio.lowlevel.FdStream(os.dup(0)), trio.lowlevel.FdStream(os.dup(1))\n"
    "    while data := await rx.receive_some(65536):\n"
    "        await tx.send_all(data)\n"
    "trio.run(main)\n",
]


def pinned(command: list[str], cpu: int | None) -> list[str]:
    """``command`` (a ``python -c`` or ``python -m`` line) run with its affinity set to ``cpu``."""
    if cpu is None:
        return command
    pin = f"import os; os.sched_setaffinity(0, {{{cpu}}})\n"
    if command[1] == "-c":
        return [command[0], "-c", pin + command[2]]
    assert command[1] == "-m", command
    run = f"import runpy; runpy.run_module({command[2]!r}, run_name='__main__', alter_sys=True)"
    return [command[0], "-c", pin + run]


def _start(agent_id: str) -> AgentStartControl:
    return AgentStartControl(
        task_spec=TaskSpec(id=new_id("task"), type=TaskType.REVIEW, title="b", description="b"),
        context_pack=ContextPack(),
        runtime=AgentRuntimeContext(
            session_id="ses_bench",
            project_id="p",
            agent_id=agent_id,
            permission_template=PermissionTemplate.REVIEWER,
        ),
    )


async def spawn_worker_ready() -> float:
    agent_id = new_id("agt")
    t0 = time.perf_counter()
    proc = await WorkerProcess.spawn(agent_id=agent_id, marker=new_id("m"))
    start = _start(agent_id).model_dump(mode="json")
    await proc.send(make_envelope("control", start, session_id="ses_bench", agent_id=agent_id))
    msg = await proc.receive()
    elapsed = time.perf_counter() - t0
    assert msg is not None, msg
    assert not isinstance(msg, Exception), msg
    assert msg.payload.get("type") == "worker.ready"
    await proc.close_stdin()
    await proc.kill_tree(0.5)
    await proc.wait()
    return elapsed


async def spawn_bare_ready() -> float:
    t0 = time.perf_counter()
    proc = await trio.lowlevel.open_process(
        BARE, stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True
    )
    assert proc.stdout is not None
    data = b""
    while b"\n" not in data:
        chunk = await proc.stdout.receive_some(1024)
        if not chunk:
            break
        data += chunk
    elapsed = time.perf_counter() - t0
    await proc.wait()
    return elapsed


async def many(fn: Any, n: int) -> float:
    """Wall time until all of ``n`` concurrent spawns are ready."""
    t0 = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for _ in range(n):
            nursery.start_soon(fn)
    return time.perf_counter() - t0


def _tool_result_line() -> bytes:
    env = ToolResultEnvelope(tool_run_id="tr_bench", tool_name="noop", status="ok", output=1)
    msg = make_envelope(
        "tool.result",
        env.model_dump(mode="json"),
        session_id="ses_bench",
        agent_id=new_id("agt"),
        correlation_id=message_id(),
    )
    return WorkerProtocol.encode(msg)


def cpu_ns(pid: int | str = "self") -> int:
    """Nanoseconds ``pid`` has run on a CPU (``/proc/PID/schedstat``, first field)."""
    with open(f"/proc/{pid}/schedstat") as fh:
        return int(fh.read().split()[0])


CPU: dict[str, list[float]] = {"worker": [], "raw": []}
"""CPU microseconds per round trip (parent + child) of each measured run."""


async def raw_echo(trips: int, command: list[str] = ECHO, cpu: int | None = None) -> float:
    proc = await trio.lowlevel.open_process(
        pinned(command, cpu), stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    # the very line the worker benchmark's parent sends back for each call (same size)
    line = _tool_result_line()
    # warm up (interpreter start-up is not part of the round trip)
    await proc.stdin.send_all(line)
    await proc.stdout.receive_some(65536)
    c0 = cpu_ns() + cpu_ns(proc.pid)
    t0 = time.perf_counter()
    for _ in range(trips):
        await proc.stdin.send_all(line)
        got = b""
        while not got.endswith(b"\n"):
            got += await proc.stdout.receive_some(65536)
    elapsed = time.perf_counter() - t0
    if command is ECHO:
        CPU["raw"].append((cpu_ns() + cpu_ns(proc.pid) - c0) / trips / 1000)
    await proc.stdin.aclose()
    await proc.wait()
    return trips / elapsed


async def worker_round_trips(trips: int, tmp: str, cpu: int | None = None) -> float:
    marks: dict[str, float] = {}
    pids: list[int] = []

    async def noop(
        name: str, input: dict[str, Any], ctx: ToolExecutionContext
    ) -> ToolResultEnvelope:
        if "first" not in marks:
            marks["first"] = time.perf_counter()
            pids.extend(run.proc.pid for run in manager._live.values() if run.proc)
            marks["cpu0"] = cpu_ns() + sum(cpu_ns(p) for p in pids)
        marks["last"] = time.perf_counter()
        if input.get("i") == trips:
            marks["cpu1"] = cpu_ns() + sum(cpu_ns(p) for p in pids)
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
        config=SupervisionConfig(command=pinned(command_for("pingpong"), cpu)),
        state_dir=os.path.join(tmp, "runs"),
    )
    request = SuperviseRequest(
        session_id="ses_bench",
        project_id="p",
        project_root=tmp,
        task_spec=TaskSpec(
            id=new_id("task"), type=TaskType.REVIEW, title="b", description=str(trips + 1)
        ),
        agent_id=new_id("agt"),
        attempt_index=0,
        workspace=WorkspaceRef(workspace_id="ws", strategy="main", path=tmp),
    )
    outcome = await manager.supervise(request)
    assert outcome.kind == "result", outcome
    # trips+1 calls; the first (start-up) is excluded: `trips` gaps from first to last call
    CPU["worker"].append((marks["cpu1"] - marks["cpu0"]) / trips / 1000)
    return trips / (marks["last"] - marks["first"])


def placements() -> list[tuple[str, int, int]]:
    """(label, parent cpu, child cpu): both on one core, then one core each (if there are two).

    Pinning makes the two measurements of a ratio see the same placement: unpinned, the kernel
    sometimes keeps a ping-pong pair on one core (cheap wake-ups) and sometimes splits it
    (cross-core wake-ups cost ~20 us here), which moved the raw echo between ~17k and ~75k/s
    from one run to the next while the worker's rate barely changed.
    """
    cpus = sorted(os.sched_getaffinity(0))
    modes = [("one core ", cpus[0], cpus[0])]
    if len(cpus) > 1:
        modes.append(("two cores", cpus[0], cpus[1]))
    return modes


async def main(rounds: int, trips: int, spawn: bool = True) -> None:
    spawn_w, spawn_b, many_w, many_b = [], [], [], []
    rt: dict[str, tuple[list[float], list[float], list[float]]] = {}
    allowed = os.sched_getaffinity(0)
    with tempfile.TemporaryDirectory() as tmp:
        await spawn_worker_ready()
        await spawn_bare_ready()
        for _ in range(rounds if spawn else 0):
            spawn_b.append(await spawn_bare_ready())
            spawn_w.append(await spawn_worker_ready())
            many_b.append(await many(spawn_bare_ready, 16))
            many_w.append(await many(spawn_worker_ready, 16))
        cpu: dict[str, tuple[float, float]] = {}
        for label, parent_cpu, child_cpu in placements():
            rt_w, rt_r, rt_t = rt.setdefault(label, ([], [], []))
            CPU["worker"].clear()
            CPU["raw"].clear()
            os.sched_setaffinity(0, {parent_cpu})
            try:
                for _ in range(rounds):
                    rt_r.append(await raw_echo(trips, ECHO, child_cpu))
                    rt_t.append(await raw_echo(trips, TRIO_ECHO, child_cpu))
                    rt_w.append(await worker_round_trips(trips, tmp, child_cpu))
            finally:
                os.sched_setaffinity(0, allowed)
            cpu[label] = (statistics.median(CPU["worker"]), statistics.median(CPU["raw"]))
    med = statistics.median
    print(f"cores: {os.cpu_count()}  rounds: {rounds}  trips: {trips}")
    for label, w, b in (("x1 ", spawn_w, spawn_b), ("x16", many_w, many_b)) if spawn else ():
        print(
            f"spawn-to-ready {label}: worker {med(w) * 1000:7.1f} ms  bare {med(b) * 1000:7.1f} ms"
            f"  ratio {med(w) / med(b):5.2f}x  (goal <= 5x)"
        )
    goals = {"one core ": 0.3, "two cores": 0.5}
    for label, (rt_w, rt_r, rt_t) in rt.items():
        print(
            f"round trips/s, {label}: worker {med(rt_w):7.0f}  raw echo {med(rt_r):7.0f}"
            f"  ratio {med(rt_w) / med(rt_r):5.2f}x  (goal >= {goals.get(label, 0.5)}x)"
        )
        cpu_w, cpu_r = cpu[label]
        print(
            f"  CPU per round trip (parent + child): worker {cpu_w:6.1f} us  raw echo"
            f" {cpu_r:6.1f} us  ratio {cpu_r / cpu_w:5.2f}x"
        )
        print(
            f"  context: a bare Trio echo child {med(rt_t):7.0f}/s = {med(rt_t) / med(rt_r):5.2f}x"
            f" raw; worker vs Trio echo {med(rt_w) / med(rt_t):5.2f}x"
        )


def cancel_wave(runs: int) -> None:
    """Cancel of 16 real workers, each with a setsid grandchild: from ``Scheduler.cancel`` until
    all 32 processes are gone (``bench/scheduler.py``'s (d), workers that obey SIGTERM)."""
    from bench.scheduler import cancel_measured

    times: list[float] = []
    scans: list[int] = []
    loads: list[float] = []
    for _ in range(runs):
        loads.append(os.getloadavg()[0])
        took, passes = trio.run(cancel_measured, False)
        times.append(took)
        scans.append(passes)
    print(
        f"cancel of 16 workers (+16 grandchildren), {runs} runs: median"
        f" {statistics.median(times) * 1000:6.1f} ms (min {min(times) * 1000:.1f},"
        f" max {max(times) * 1000:.1f})  (goal <= 25 ms)  /proc scans per cancel: median"
        f" {statistics.median(scans):.0f} (max {max(scans)})  load average"
        f" {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores"
    )


_APPROVED = {"status": "completed", "summary": "ok", "result": {"verdict": "approved"}}


def _rss_kib() -> tuple[int, int]:
    """This process's resident set now and at its peak (``VmRSS``, ``VmHWM``), in KiB."""
    found: dict[str, int] = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                found[key] = int(value.split()[0])
    return found["VmRSS"], found["VmHWM"]


def memory_child(n: int) -> None:
    """(In a fresh process.) Run ``n`` review tasks through the real supervision and session;
    print ``rss_kib peak_kib`` measured with the session still open, after a full collection."""
    import gc

    import trio.testing

    from air.llm.manager import ProviderManager
    from air.nursery.ledger import SessionLedger
    from air.nursery.scheduler import Scheduler, SchedulerOptions
    from air.session.manager import SessionManager
    from air.session.project import ProjectStore
    from air.testing.launcher import FakeLauncher, scripted

    def specs(start: int) -> list[TaskSpec]:
        # the batch is handed over in parts and not kept: what is measured is what the
        # parent keeps per task, not the caller's list of inputs
        return [
            TaskSpec(id=f"t{i}", type=TaskType.REVIEW, title=f"t{i}", description="d")
            for i in range(start, min(n, start + 500))
        ]

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "proj"
        root.mkdir()
        session = SessionManager().open_session(ProjectStore().initialize(str(root)))
        try:
            ledger = SessionLedger.for_session(session)
            measured: list[tuple[int, int]] = []

            async def no_tools(*args: object) -> object:
                raise AssertionError("no tool calls")

            async def main() -> None:
                async with trio.open_nursery() as nursery:
                    manager = WorkerManager(
                        tools=no_tools,  # type: ignore[arg-type]
                        provider=ProviderManager.for_cassette(str(Path(tmp) / "none.jsonl")),
                        events=session.ingestor,
                        artifacts=session.artifacts,
                        config=SupervisionConfig(),
                        state_dir=str(Path(tmp) / "runs"),
                        launcher=FakeLauncher(
                            nursery, scripted([{"result": _APPROVED}]), keep=False
                        ),
                    )
                    sched = Scheduler(
                        ledger, manager, project_root=str(root), options=SchedulerOptions()
                    )
                    for start in range(0, n, 500):
                        await sched.create_tasks(specs(start))
                    result = await sched.run_until_idle()
                    if result.status != "completed":
                        raise SystemExit(f"the batch ended {result.status}")
                    gc.collect()
                    measured.append(_rss_kib())
                    nursery.cancel_scope.cancel()

            trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
        finally:
            session.close()
    print(*measured[0])


def task_memory(n: int, tree: Path = REPO) -> tuple[int, int]:
    """(rss, peak) KiB of a fresh process after ``n`` tasks (``memory_child``), its air and
    this script taken from ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, str(tree / "bench" / "workers.py"), "--memory-child", str(n)],
        capture_output=True,
        text=True,
        check=True,
        timeout=3600,
        cwd=tree,
        env=env,
    ).stdout.split()
    return int(out[-2]), int(out[-1])


def memory(rounds: int, small: int = 1000, large: int = 10_000, before: Path | None = None) -> None:
    """RSS after ``small`` and ``large`` tasks, alternating (and alternating with the ``before``
    tree's children), the median of ``rounds`` each."""
    trees = {"before": before, "after": REPO} if before is not None else {"this tree": REPO}
    sizes: dict[tuple[str, int], list[tuple[int, int]]] = {
        (name, n): [] for name in trees for n in (small, large)
    }
    for tree in trees.values():
        # every child loads air from bytecode: a module compiled from its source at import
        # leaves the process ~6 MiB larger, and PYTHONDONTWRITEBYTECODE may be set
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", str(tree / "air"), str(tree / "bench")],
            check=True,
            timeout=600,
        )
    print(
        f"memory per task: {small} vs {large} tasks, {rounds} rounds, load {os.getloadavg()[0]:.1f}"
    )
    for _ in range(rounds):
        for n in (small, large):
            for name, tree in trees.items():
                sizes[name, n].append(task_memory(n, tree))
                print(f"    {name} {n}: RSS, peak {sizes[name, n][-1]} KiB", flush=True)
    med = statistics.median
    for name, tree in trees.items():
        rss = {n: med(r for r, _ in sizes[name, n]) for n in (small, large)}
        peak = {n: med(p for _, p in sizes[name, n]) for n in (small, large)}
        print(f"  {name} ({tree}):")
        for n in (small, large):
            print(f"  {n:>6} tasks: RSS {rss[n] / 1024:7.1f} MiB  peak {peak[n] / 1024:7.1f} MiB")
        print(
            f"  RSS {large} / {small}: {rss[large] / rss[small]:4.2f}x  (goal <= 1.3x);"
            f" {(rss[large] - rss[small]) / (large - small):5.2f} KiB per task;"
            f" load {os.getloadavg()[0]:.1f}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--trips", type=int, default=2000)
    parser.add_argument("--no-spawn", action="store_true", help="measure round trips only")
    parser.add_argument("--cancels", type=int, default=10, help="cancels of 16 workers timed")
    parser.add_argument("--only-cancel", action="store_true", help="time the cancels only")
    parser.add_argument(
        "--memory", action="store_true", help="measure the parent's memory per task only"
    )
    parser.add_argument(
        "--before", type=Path, help="with --memory: another air checkout measured alternately"
    )
    parser.add_argument("--memory-child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        memory_child(args.memory_child)
    elif args.memory:
        memory(args.rounds, before=args.before)
    else:
        if not args.only_cancel:
            trio.run(main, args.rounds, args.trips, not args.no_spawn)
        if args.cancels:
            cancel_wave(args.cancels)
