"""Scheduler benchmarks, each against a baseline measured in the same run.

(a) Throughput: N one-turn scripted tasks through ``air run --headless`` (real ``python -m
    air.roles`` workers replaying a one-turn cassette each, every event in SQLite) versus
    ``xargs -P W`` launching the same worker command directly (``python -m air.roles`` fed its
    ``agent.start``; it answers ``worker.ready`` and ends at end of input), each in its own
    session (``setsid -w``) as air starts its workers. Goal: >= 0.9x.
    ``--rounds`` pairs (air, then xargs), the median of each pair's ratio; also the CPU time
    per task of each side (the process and all it waited for), which barely moves with load.
(b) Idle slots: a mixed-length batch (task lengths 1-8 units, hard dependencies) through the
    Scheduler with the fake runner under Trio's virtual clock (the real EventStore on a SQLite
    file), versus the lower bound of any pool of W: max(critical path, total work / W), and
    versus an ideal greedy pool of W simulated on the same work. Goal: makespan <= 1.15x the
    lower bound.
(c) Scale: CPU time per task of a batch of 500 versus 10,000 tasks (independent and chained
    shapes) through the same fake-runner setup (the best of 3 runs of each, the sizes
    alternating, a collected heap before each). Goal: per-task time at 10,000 <= 1.5x at 500.
(e) Scale through the real supervision: (c) with the FakeLauncher (``air.testing.launcher``) under
    the real WorkerManager (handshake, read loop, result checks, run records on disk), the real
    Scheduler and a real session (SQLite file, ingestor, bus) under the virtual clock; review
    tasks (no workspace), each worker answers ``worker.ready`` and one ``worker.result``. Goal:
    per-task CPU time at 10,000 <= 1.5x at 500 (issue #11 item 5).
(d) Cancel-to-all-reaped latency for a wave of 16 workers, each with a setsid grandchild:
    workers that obey SIGTERM (goal <= 50 ms) and workers that ignore it (goal <= grace + 50 ms);
    the median of ``--rounds``.

Run: ``.venv/bin/python bench/scheduler.py [--tasks 200] [--workers W] [--scale 10000]
[--repeat 3] [--only a,b,c,d,e]``.
"""

from __future__ import annotations

import argparse
import gc
import heapq
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import trio
import trio.lowlevel
import trio.testing

from air.contracts.event import EventSource, new_event
from air.contracts.task import TaskConstraints, TaskDependencySpec, TaskScope, TaskSpec
from air.contracts.task_results import SchedulerRunResult
from air.events.store import EventStore
from air.ipc.procs import find_marked, scans_done
from air.llm.manager import ProviderManager
from air.nursery.ledger import SessionLedger
from air.nursery.planner import default_max_workers
from air.nursery.scheduler import Scheduler, SchedulerOptions
from air.session.manager import SessionManager
from air.session.project import ProjectStore
from air.store.session_db import open_session_database
from air.supervision.runs import RunRecordStore
from air.supervision.worker_manager import SupervisionConfig, WorkerManager
from air.testing.fake_runner import FakeStep, FakeTaskRunner
from air.testing.launcher import FakeLauncher, scripted

GRACE_S = 0.5


def _one_turn(task_id: str) -> str:
    result = json.dumps(
        {"status": "completed", "summary": task_id, "result": {"changes_made": False}}
    )
    turn = {
        "content": [{"type": "text", "text": f"done\n```json:result\n{result}\n```\n"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    return json.dumps(turn) + "\n"


def _start_message() -> str:
    spec = {"id": "t", "type": "execute", "title": "t", "description": "t"}
    runtime = {
        "session_id": "ses_b",
        "project_id": "p",
        "agent_id": "agt_b",
        "permission_template": "executor",
    }
    payload = {
        "type": "agent.start",
        "version": 1,
        "task_spec": spec,
        "context_pack": {},
        "runtime": runtime,
    }
    envelope = {
        "v": 1,
        "id": "m1",
        "kind": "control",
        "ts": "2026-01-01T00:00:00Z",
        "session_id": "ses_b",
        "agent_id": "agt_b",
        "payload": payload,
    }
    return json.dumps(envelope) + "\n"


def _children_cpu() -> float:
    """CPU seconds of every waited-for descendant so far (workers included: each parent waits
    for its own)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def throughput(tasks: int, workers: int) -> tuple[float, float, float, float]:
    """(air tasks/s, xargs tasks/s, air CPU s/task, xargs CPU s/task); CPU: the air process and
    its workers, xargs and its shells and workers."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "proj"
        (root / "cas").mkdir(parents=True)
        lines = ["tasks:"]
        for i in range(tasks):
            lines += [f"  - id: t{i}", f"    title: task {i}", "    scope: {write_area: []}"]
            (root / "cas" / f"t{i}.jsonl").write_text(_one_turn(f"t{i}"))
        (root / "batch.yaml").write_text("\n".join(lines) + "\n")
        cpu0 = _children_cpu()
        start = time.perf_counter()
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "air.cli",
                "run",
                "--headless",
                "batch.yaml",
                "--cassette",
                "cas",
                "--max-workers",
                str(workers),
            ],
            cwd=root,
            capture_output=True,
            text=True,
        )
        air_s = time.perf_counter() - start
        air_cpu = _children_cpu() - cpu0
        if proc.returncode != 0:
            raise SystemExit(f"air run failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
        start_file = Path(tmp) / "start.ndjson"
        start_file.write_text(_start_message())
        worker = f"{sys.executable} -m air.roles < {start_file} > /dev/null"
        cpu0 = _children_cpu()
        start = time.perf_counter()
        # exit codes are ignored: the worker ends early (input closed) and reports it so;
        # each job in its own session, as air starts each worker: with autogroup scheduling a
        # session is a scheduling group, so under load the comparison is fair only so
        subprocess.run(
            ["xargs", "-P", str(workers), "-I{}", "setsid", "-w", "sh", "-c", worker + " || true"],
            input="\n".join(str(i) for i in range(tasks)) + "\n",
            text=True,
            check=True,
            cwd=tmp,
        )
        xargs_s = time.perf_counter() - start
        xargs_cpu = _children_cpu() - cpu0
    return tasks / air_s, tasks / xargs_s, air_cpu / tasks, xargs_cpu / tasks


def _running(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return False
    return data[data.rfind(b")") + 2 : data.rfind(b")") + 3] not in (b"Z", b"X")


async def cancel_latency(ignore_term: bool) -> float:
    """Seconds from ``Scheduler.cancel`` until all 32 processes are gone."""
    return (await cancel_measured(ignore_term))[0]


async def cancel_measured(ignore_term: bool) -> tuple[float, int]:
    """``cancel_latency`` and the ``/proc`` passes the cancel made meanwhile."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "proj"
        root.mkdir()
        project = ProjectStore().initialize(str(root))
        session = SessionManager().open_session(project)
        try:
            (Path(tmp) / "empty.jsonl").write_text("")
            state_dir = str(Path(tmp) / "runs")

            async def no_tools(*args: object) -> object:
                raise AssertionError("no tool calls")

            manager = WorkerManager(
                tools=no_tools,  # type: ignore[arg-type]
                provider=ProviderManager.for_cassette(str(Path(tmp) / "empty.jsonl")),
                events=session.ingestor,
                artifacts=session.artifacts,
                config=SupervisionConfig(
                    command=[sys.executable, "-m", "air.testing.workers.hang_with_grandchild"],
                    env={**os.environ, "IGNORE_TERM": "1" if ignore_term else "0"},
                    kill_grace_s=GRACE_S,
                ),
                state_dir=state_dir,
            )
            ledger = SessionLedger.for_session(session)
            sched = Scheduler(
                ledger, manager, project_root=str(root), options=SchedulerOptions(max_workers=16)
            )
            await sched.create_tasks(
                [
                    TaskSpec(
                        id=f"t{i}",
                        type="review",
                        title="hang",
                        description="hang",
                        scope=TaskScope(write_area=[]),
                        constraints=TaskConstraints(
                            soft_timeout_ms=600_000, hard_timeout_ms=600_000
                        ),
                    )
                    for i in range(16)
                ]
            )
            records = RunRecordStore(state_dir)

            def markers() -> list[str]:
                return [r["marker"] for r in records.list() if r.get("marker")]

            box: list[SchedulerRunResult] = []
            async with trio.open_nursery() as nursery:

                async def run() -> None:
                    box.append(await sched.run_until_idle())

                nursery.start_soon(run)
                for _ in range(3000):  # up to 60 s for 16 workers + grandchildren to be up
                    if len(markers()) == 16 and all(len(find_marked(m)) >= 2 for m in markers()):
                        break
                    await trio.sleep(0.02)
                pids = sorted({p for m in markers() for p in find_marked(m)})
                assert len(pids) >= 32, pids
                gone_at: list[float] = []

                async def watch() -> None:
                    # cheap per-pid checks while the kill runs; the reaping moment is when the
                    # last of the 32 processes is gone (the bookkeeping after it is not counted)
                    while any(_running(p) for p in pids):  # noqa: ASYNC110 (polls /proc)
                        await trio.sleep(0.0005)
                    gone_at.append(time.perf_counter())

                nursery.start_soon(watch)
                await trio.lowlevel.checkpoint()
                start = time.perf_counter()
                scans = scans_done()
                sched.cancel("bench")
            assert box[0].status == "cancelled"
            assert gone_at, "the watcher did not see every process go"
            # nothing marked may be left anywhere (descendants the watcher did not know of)
            scans = scans_done() - scans
            assert not any(find_marked(m) for m in markers())
            return gone_at[0] - start, scans
        finally:
            session.close()


def _spec(task_id: str, deps: list[str], type: str = "execute") -> TaskSpec:
    return TaskSpec(
        id=task_id,
        type=type,
        title=task_id,
        description=task_id,
        scope=TaskScope(write_area=[f"src/{task_id}.py"] if type == "execute" else []),
        dependencies=[TaskDependencySpec(depends_on_task_id=d) for d in deps],
    )


def _fake_run(
    specs: list[TaskSpec], script: dict[str, list[FakeStep]], workers: int
) -> tuple[float, float]:
    """Run ``specs`` through the Scheduler and the fake runner on a real session DB under the
    virtual clock. Returns (CPU seconds of this process for create + run, virtual makespan):
    CPU time, not wall time, so that other processes on a shared machine do not skew it."""
    with tempfile.TemporaryDirectory() as tmp:
        db = open_session_database(Path(tmp) / "session.db")
        try:
            events = EventStore(db)
            events.append(
                new_event(
                    "session.created",
                    {"session_id": "ses_b", "project_id": "prj_b", "mode": "headless"},
                    session_id="ses_b",
                    project_id="prj_b",
                    source=EventSource(kind="system"),
                )
            )
            ledger = SessionLedger(events, session_id="ses_b", project_id="prj_b")
            runner = FakeTaskRunner(script, default=FakeStep(duration=1.0), heartbeat_interval=1e6)
            sched = Scheduler(
                ledger, runner, project_root=tmp, options=SchedulerOptions(max_workers=workers)
            )

            async def main() -> float:
                await sched.create_tasks(specs)
                result = await sched.run_until_idle()
                if result.status != "completed":
                    raise SystemExit(f"the fake batch ended {result.status}")
                return trio.current_time()

            start = time.process_time()
            makespan = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
            return time.process_time() - start, makespan
        finally:
            db.close()


def _mixed_batch(n: int, seed: int = 7) -> tuple[list[TaskSpec], dict[str, float]]:
    rnd = random.Random(seed)
    specs: list[TaskSpec] = []
    length: dict[str, float] = {}
    for i in range(n):
        deps = [f"t{rnd.randrange(max(0, i - 20), i)}"] if i and rnd.random() < 0.3 else []
        specs.append(_spec(f"t{i}", deps))
        length[f"t{i}"] = float(rnd.randint(1, 8))
    return specs, length


def _ideal_pool(specs: list[TaskSpec], length: dict[str, float], workers: int) -> float:
    """Makespan of an ideal greedy pool of ``workers``: a task starts the moment its
    dependencies are done and a worker is free (creation order among the ready ones)."""
    deps = {s.id: [d.depends_on_task_id for d in s.dependencies] for s in specs}
    order = {s.id: i for i, s in enumerate(specs)}
    done: dict[str, float] = {}
    running: list[tuple[float, str]] = []
    pending = [s.id for s in specs]
    now = 0.0
    while pending or running:
        ready = [t for t in pending if all(d in done and done[d] <= now for d in deps[t])]
        for t in sorted(ready, key=order.__getitem__)[: workers - len(running)]:
            pending.remove(t)
            heapq.heappush(running, (now + length[t], t))
        end, t = heapq.heappop(running)
        now = end
        done[t] = end
    return now


def idle_slots(n: int, workers: int) -> tuple[float, float, float]:
    specs, length = _mixed_batch(n)
    finish: dict[str, float] = {}
    for s in specs:  # dependencies point backwards: one pass gives the critical path
        start = max((finish[d.depends_on_task_id] for d in s.dependencies), default=0.0)
        finish[s.id] = start + length[s.id]
    bound = max(max(finish.values()), sum(length.values()) / workers)
    script = {t: [FakeStep(duration=d)] for t, d in length.items()}
    _, makespan = _fake_run(specs, script, workers)
    return makespan, bound, _ideal_pool(specs, length, workers)


_APPROVED = {"status": "completed", "summary": "ok", "result": {"verdict": "approved"}}


def _launcher_run(specs: list[TaskSpec], workers: int) -> float:
    """Run ``specs`` through the Scheduler and the real WorkerManager, whose workers are
    FakeLauncher tasks over memory streams (handshake, one ``worker.result``, exit), on a real
    session (SQLite file, ingestor, bus, artifact store, run records) under the virtual clock.
    Returns the CPU seconds of this process for create + run."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "proj"
        root.mkdir()
        project = ProjectStore().initialize(str(root))
        session = SessionManager().open_session(project)
        try:
            ledger = SessionLedger.for_session(session)

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
                        launcher=FakeLauncher(nursery, scripted([{"result": _APPROVED}])),
                    )
                    sched = Scheduler(
                        ledger,
                        manager,
                        project_root=str(root),
                        options=SchedulerOptions(max_workers=workers),
                    )
                    await sched.create_tasks(specs)
                    result = await sched.run_until_idle()
                    if result.status != "completed":
                        raise SystemExit(f"the fake-launcher batch ended {result.status}")
                    nursery.cancel_scope.cancel()

            start = time.process_time()
            trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
            return time.process_time() - start
        finally:
            session.close()


def _scale_specs(n: int, shape: str, type: str = "execute") -> list[TaskSpec]:
    return [
        _spec(f"t{i}", [f"t{i - 1}"] if shape == "chained" and i % 10 else [], type)
        for i in range(n)
    ]


def scale(n: int, shape: str, workers: int) -> float:
    specs = _scale_specs(n, shape)
    gc.collect()
    cpu, _ = _fake_run(specs, {}, workers)
    return cpu / n


def scale_launcher(n: int, shape: str, workers: int) -> float:
    specs = _scale_specs(n, shape, "review")
    gc.collect()
    return _launcher_run(specs, workers) / n


def _interleaved(
    fn: Callable[[int, str, int], float], shape: str, n: int, repeat: int
) -> tuple[float, float]:
    """The least per-task time at 500 and at ``n`` tasks, the two sizes run alternately so that
    both see the same machine load (run all of one size first and a change of load between
    them shows up as a ratio)."""
    small: list[float] = []
    large: list[float] = []
    for _ in range(repeat):
        small.append(fn(500, shape, 4))
        large.append(fn(n, shape, 4))
    return min(small), min(large)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--workers", type=int, default=default_max_workers())
    parser.add_argument("--scale", type=int, default=10_000)
    parser.add_argument("--only", default="a,b,c,d,e")
    parser.add_argument(
        "--repeat", type=int, default=3, help="(c), (e): the best of this many runs"
    )
    parser.add_argument(
        "--rounds", type=int, default=10, help="(a), (d): the median of this many runs"
    )
    args = parser.parse_args()
    only = set(args.only.split(","))
    if "a" in only:
        if shutil.which("xargs") is None:
            raise SystemExit("xargs is needed for the baseline")
        runs = [throughput(args.tasks, args.workers) for _ in range(args.rounds)]
        med = statistics.median
        air_tps, xargs_tps = med(r[0] for r in runs), med(r[1] for r in runs)
        ratio = med(r[0] / r[1] for r in runs)
        cpu_ratio = med(r[3] / r[2] for r in runs)
        print(
            f"(a) throughput, {args.tasks} one-turn tasks, {args.workers} workers, median of"
            f" {args.rounds} alternating runs (load average {os.getloadavg()[0]:.2f}):"
        )
        print(f"  air run --headless : {air_tps:8.1f} tasks/s")
        print(f"  xargs -P {args.workers:<2}        : {xargs_tps:8.1f} tasks/s")
        print(f"  ratio              : {ratio:8.2f}x   (goal >= 0.9x; each run's own pair)")
        print(
            f"  CPU per task       : air {med(r[2] for r in runs) * 1e3:6.1f} ms, xargs"
            f" {med(r[3] for r in runs) * 1e3:6.1f} ms, ratio {cpu_ratio:5.2f}x (barely moves"
            " with load)"
        )
    if "b" in only:
        makespan, bound, ideal = idle_slots(300, 4)
        print("(b) mixed lengths 1-8 with dependencies, 300 tasks, 4 slots (virtual time):")
        print(f"  air makespan       : {makespan:8.1f}")
        print(f"  ideal greedy pool  : {ideal:8.1f}   ratio {makespan / ideal:5.2f}x")
        print(
            f"  lower bound        : {bound:8.1f}   ratio {makespan / bound:5.2f}x (goal <= 1.15x)"
        )
    if "c" in only:
        print(f"(c) CPU time per task, fake runner, 4 slots, 500 vs {args.scale} tasks:")
        for shape in ("independent", "chained"):
            small, large = _interleaved(scale, shape, args.scale, args.repeat)
            print(
                f"  {shape:<11}: {small * 1e3:6.2f} ms vs {large * 1e3:6.2f} ms per task, "
                f"ratio {large / small:5.2f}x (goal <= 1.5x)"
            )
    if "e" in only:
        print(
            f"(e) CPU time per task, FakeLauncher + WorkerManager, 4 slots, "
            f"500 vs {args.scale} tasks:"
        )
        for shape in ("independent", "chained"):
            small, large = _interleaved(scale_launcher, shape, args.scale, args.repeat)
            print(
                f"  {shape:<11}: {small * 1e3:6.2f} ms vs {large * 1e3:6.2f} ms per task, "
                f"ratio {large / small:5.2f}x (goal <= 1.5x)"
            )
    if "d" not in only:
        return
    loads = [os.getloadavg()[0]]
    obey = [trio.run(cancel_latency, False) for _ in range(args.rounds)]
    ignore = [trio.run(cancel_latency, True) for _ in range(args.rounds)]
    loads.append(os.getloadavg()[0])
    print(
        f"(d) cancel-to-all-reaped, 16 workers + 16 grandchildren, median of {args.rounds}"
        f" (load average {min(loads):.2f}-{max(loads):.2f}):"
    )
    print(f"  obey SIGTERM   : {statistics.median(obey) * 1000:8.1f} ms   (goal <= 50 ms)")
    print(
        f"  ignore SIGTERM : {statistics.median(ignore) * 1000:8.1f} ms"
        f"   (goal <= grace {GRACE_S * 1000:.0f} + 50 ms)"
    )


if __name__ == "__main__":
    main()
