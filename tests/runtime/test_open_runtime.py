"""``open_runtime()``: one composition root. Each service is built once, recovery runs once, the
root nursery closes with no worker left, and two clients (a run, then a resume) share it."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

import air.nursery.recovery as recovery_module
import air.nursery.runtime as runtime_module
import air.nursery.scheduler as scheduler_module
from air.cli.factory import RuntimeFactory
from air.cli.options import HeadlessOptions
from air.context.worker_pack import WorkerContextBuilder
from air.contracts.platform import ProcessIdentity
from air.contracts.project import OpenSessionOptions
from air.contracts.task import TaskConstraints, TaskScope, TaskSpec
from air.ipc.procs import find_marked, is_same_process
from air.nursery.ledger import SessionLedger
from air.nursery.runtime import RuntimeConfig, RuntimeServices, open_runtime
from air.nursery.scheduler import Scheduler
from air.security.engine import PermissionEngine
from air.session.project import ProjectStore
from air.supervision.monitor import AgentMonitor
from air.supervision.runs import RunRecordStore, runs_dir
from air.supervision.worker_manager import WorkerManager
from air.testing.fake_runner import FakeStep, FakeTaskRunner
from air.tools import ToolRegistry
from air.workspace.manager import WorkspaceManager
from tests.trusted import trust_project


def _spec(task_id: str, **fields: Any) -> TaskSpec:
    return TaskSpec(id=task_id, type="execute", title=task_id, description=task_id, **fields)


def _count_inits(monkeypatch: pytest.MonkeyPatch, *classes: type) -> dict[str, int]:
    counts = {cls.__name__: 0 for cls in classes}
    for cls in classes:
        original: Callable[..., None] = cls.__init__  # type: ignore[misc]

        def counting(
            self: Any, *a: Any, __o: Any = original, __n: str = cls.__name__, **k: Any
        ) -> None:
            counts[__n] += 1
            __o(self, *a, **k)

        monkeypatch.setattr(cls, "__init__", counting)
    return counts


def _count_recoveries(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = recovery_module.recover_session

    def counted(where: str) -> Any:
        async def recover(*args: Any, **kwargs: Any) -> Any:
            calls.append(where)
            return await real(*args, **kwargs)

        return recover

    monkeypatch.setattr(runtime_module, "recover_session", counted("runtime"))
    monkeypatch.setattr(scheduler_module, "recover_session", counted("scheduler"))
    return calls


async def test_each_service_is_built_once_and_recovery_runs_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = ProjectStore().initialize(tmp_path)
    counts = _count_inits(
        monkeypatch,
        SessionLedger,
        WorkspaceManager,
        PermissionEngine,
        ToolRegistry,
        WorkerContextBuilder,
        WorkerManager,
        AgentMonitor,
        Scheduler,
    )
    recoveries = _count_recoveries(monkeypatch)
    reads: list[str] = []

    def services() -> RuntimeServices:
        reads.append("services")
        return RuntimeServices()

    config = RuntimeConfig(
        project=project,
        session=OpenSessionOptions(mode="headless"),
        new_session=True,
        services=services,
    )
    async with open_runtime(config) as rt:
        result = await rt.run_until_idle()  # nothing to run: the Scheduler must not recover
        # one object of each, shared by everything that uses it
        assert rt.scheduler.ledger is rt.ledger
        assert rt.scheduler.runner is rt.runner
        assert rt.scheduler.monitor is rt.monitor
        assert rt.scheduler.workspaces is rt.workspaces
        assert rt.registry.engine is rt.engine
        assert isinstance(rt.runner, WorkerManager)
    assert str(result.status) == "completed"
    assert counts == {name: 1 for name in counts}, counts
    assert recoveries == ["runtime"]
    assert reads == ["services"]


async def test_the_client_sees_recovery_and_the_scheduler_does_not_repeat_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session killed with a task running: the runtime's one recovery interrupts it (the
    client's subscriber sees it), the task runs again, and the Scheduler recovers nothing."""
    project = ProjectStore().initialize(tmp_path)
    runner = FakeTaskRunner(default=FakeStep(duration=0.01))
    first = RuntimeConfig(
        project=project,
        session=OpenSessionOptions(mode="headless"),
        new_session=True,
        runner=lambda _session: (runner, None),
    )
    async with open_runtime(first) as rt:
        session_id = rt.session_id
        await rt.submit([_spec("t1")])
        # what a killed runtime leaves: the task started, no end recorded
        await rt.ledger.record(
            "task.started",
            {"task_id": "t1", "agent_id": "agt_dead", "agent_type": "executor", "attempt_index": 1},
        )
    recoveries = _count_recoveries(monkeypatch)
    seen: list[str] = []
    resume = RuntimeConfig(
        project=project,
        session=OpenSessionOptions(session_id=session_id, mode="headless"),
        new_session=False,
        runner=lambda _session: (runner, None),
        subscribers=[lambda event: seen.append(event.type)],
    )
    async with open_runtime(resume) as rt:
        assert rt.recovery.interrupted_tasks == ["t1"]
        result = await rt.run_until_idle()
        await rt.settle()
    assert str(result.status) == "completed"
    assert recoveries == ["runtime"]
    assert seen.count("task.interrupted") == 1
    assert "task.completed" in seen
    assert [r.task_id for r in runner.log.records] == ["t1"]


def _options(root: Path, **kwargs: Any) -> HeadlessOptions:
    return HeadlessOptions(project=str(root), stderr=io.StringIO(), **kwargs)


async def test_a_run_and_a_resume_are_two_clients_of_the_same_runtime(tmp_path: Path) -> None:
    """The headless run is cancelled after its first task; ``air resume``'s configuration
    (RuntimeFactory) opens the same session and finishes it; nothing runs twice."""
    runner = FakeTaskRunner(default=FakeStep(duration=1.0))

    def factory(_options: Any, _session: Any, _root: str) -> tuple[Any, None]:
        return runner, None

    run = RuntimeFactory(_options(tmp_path, runner_factory=factory, max_workers=1))
    async with open_runtime(run.create(resume=False)) as rt:
        session_id = rt.session_id
        await rt.submit([_spec("a"), _spec("b"), _spec("c")])

        def cancel_after_first(event: Any) -> None:
            if event.type == "task.completed":
                rt.cancel("the person pressed Ctrl-C")

        rt.bus.subscribe(None, cancel_after_first)
        first = await rt.run_until_idle()
    assert str(first.status) == "cancelled"
    done_first = [r.task_id for r in runner.log.records if r.kind == "completed"]
    assert len(done_first) >= 1

    resume = RuntimeFactory(_options(tmp_path, runner_factory=factory, session_id=session_id))
    async with open_runtime(resume.create(resume=True)) as rt:
        assert rt.session_id == session_id
        second = await rt.run_until_idle()
        statuses = {n.task_id: n.status.value for n in rt.scheduler.graph.tasks.values()}
    assert str(second.status) == "completed"
    assert statuses == {"a": "completed", "b": "completed", "c": "completed"}
    completed = [r.task_id for r in runner.log.records if r.kind == "completed"]
    assert sorted(completed) == ["a", "b", "c"]  # none twice


def _sleeping_cassette(task_id: str, seconds: int) -> str:
    turn = {
        "content": [
            {
                "type": "tool_use",
                "id": f"toolu_{task_id}",
                "name": "shell.run",
                "input": {"command": f"sleep {seconds}"},
            }
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    return json.dumps(turn) + "\n"


async def test_leaving_the_runtime_closes_the_root_nursery_with_no_orphan(tmp_path: Path) -> None:
    """Real workers (real processes in the real sandbox) are running a long command when the
    client leaves the runtime: every one is killed and its run record closed."""
    root = tmp_path / "proj"
    (root / "cas").mkdir(parents=True)
    for task_id in ("w1", "w2"):
        (root / "cas" / f"{task_id}.jsonl").write_text(_sleeping_cassette(task_id, 60))
    factory = RuntimeFactory(_options(root, cassette=str(root / "cas"), max_workers=2))
    config = factory.create(resume=False)
    running: set[str] = set()
    with trio.fail_after(120):
        async with open_runtime(config) as rt:
            readers = {"scope": TaskScope(write_area=[])}  # no writes: both run at once
            await rt.submit([_spec("w1", **readers), _spec("w2", **readers)])
            both = trio.Event()

            def on_event(event: Any) -> None:
                if event.type == "tool.started" or event.type == "command.started":
                    running.add(str(event.payload.get("task_id")))
                if len(running) == 2:
                    both.set()

            rt.bus.subscribe(None, on_event)
            rt.nursery.start_soon(rt.run_until_idle)
            await both.wait()
            records = RunRecordStore(runs_dir(str(root))).list()
            assert len(records) == 2
            assert all(r["state"] == "running" for r in records)
        # the block is left with both workers mid-command
    records = RunRecordStore(runs_dir(str(root))).list()
    assert len(records) == 2
    for record in records:
        assert record["state"] != "running", record
        identity = ProcessIdentity.from_record(record)
        assert identity is not None
        assert not is_same_process(identity)
        assert find_marked(record["marker"]) == []


class _DeafRunner:
    """A runner that ignores its own hard timeout (only a cancel ends it)."""

    def __init__(self) -> None:
        self.cancelled: list[str] = []

    async def supervise(self, request: Any) -> Any:
        try:
            await trio.sleep_forever()
        finally:
            self.cancelled.append(request.task_spec.id)


async def test_the_monitor_gets_the_schedulers_overdue_callback_when_it_starts(
    tmp_path: Path, autojump_clock: Any
) -> None:
    """No reference is patched in after construction: the Scheduler hands the runtime's
    AgentMonitor its ``on_overdue`` when it starts it, so a task past its hard deadline is
    cancelled by the safety net even when the runner never ends it."""
    project = ProjectStore().initialize(tmp_path)
    deaf = _DeafRunner()
    config = RuntimeConfig(
        project=project,
        session=OpenSessionOptions(mode="headless"),
        new_session=True,
        runner=lambda _session: (deaf, None),
    )
    async with open_runtime(config) as rt:
        assert rt.monitor.on_overdue is None  # nothing assigned after construction
        # read-only: a writer in `main` takes a backup snapshot first (real git, IMPL-MERGE-1),
        # and a real child process has no place next to the autojump clock
        slow = _spec(
            "slow",
            scope=TaskScope(write_area=[]),
            constraints=TaskConstraints(hard_timeout_ms=2000),
        )
        await rt.submit([slow])
        with trio.fail_after(600):
            await rt.run_until_idle()
        status = rt.scheduler.graph.tasks["slow"].status.value
    assert deaf.cancelled == ["slow"]
    assert status != "running"


async def test_the_models_yaml_escalation_ladder_reaches_the_retry_planner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """models.yaml ``escalation`` (read by ``prepare``) is the ladder the Scheduler's
    RetryPlanner climbs: without it ``air run`` could never change a retry's model."""
    from air.cli.prepare import prepare

    root = tmp_path / "proj"
    (root / ".air" / "shared").mkdir(parents=True)
    (root / ".air" / "shared" / "models.yaml").write_text(
        "default: local/small\nescalation: [local/small, local/big]\nproviders:\n"
        "  local:\n    kind: openai_compatible\n    base_url: http://127.0.0.1:9/v1\n"
        "    models: {small: {}, big: {}}\n"
    )
    monkeypatch.setenv("HOME", str(tmp_path))
    trust_project(root)
    services = prepare(HeadlessOptions(project=str(root)), str(root))
    assert services.escalation == ("local/small", "local/big")
    config = RuntimeConfig(
        project=ProjectStore().initialize(root),
        session=OpenSessionOptions(mode="headless"),
        new_session=True,
        services=lambda: services,
    )
    async with open_runtime(config) as rt:
        assert rt.scheduler.retry.escalation_models == ("local/small", "local/big")
