"""``air run --headless BATCH``: run a batch file of tasks without the console.

Owns: ``run_headless`` (the command body), ``run_batch_session`` (the Trio part shared with
``air resume``), the stderr progress reporter, the ``--json`` JSONL event stream, the
``--junit`` report, the signal policy (first SIGINT/SIGTERM cancels cooperatively, a second
kills at once) and the exit codes: 0 every task completed, 1 any failed or blocked, 2 bad
input, 130 cancelled.

Usage (in ``air/cli/__init__.py``)::

  air run --headless BATCH [--project PATH] [--provider NAME] [--cassette PATH]
          [--max-workers N] [--permission-mode MODE] [--isolation MODE] [--review]
          [--json] [--junit FILE] [--fake-script FILE]
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any
from xml.etree import ElementTree

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_CANCELLED = 130

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_CANCELLED",
    "EXIT_FAILED",
    "EXIT_OK",
    "HeadlessOptions",
    "run_headless",
]


@dataclass
class HeadlessOptions:
    """The options of ``air run --headless`` and ``air resume`` after parsing."""

    project: str
    batch: str | None = None
    session_id: str | None = None
    provider: str | None = None
    cassette: str | None = None
    max_workers: int | None = None
    permission_mode: str = "default"
    isolation: str = "auto"
    review: bool = False
    json_stream: bool = False
    junit: str | None = None
    fake_script: str | None = None
    stderr: IO[str] = field(default_factory=lambda: sys.stderr)
    stdout: IO[str] = field(default_factory=lambda: sys.stdout)


def _opt(args: dict[str, Any], name: str) -> Any:
    return args.get(name)


def parse_options(args: dict[str, Any]) -> HeadlessOptions:
    """Translate docopt's dict into HeadlessOptions.

    Raises:
        AirException: ``validation_error`` for a bad ``--max-workers``/``--isolation``/mode.
    """
    from air.contracts import AirException

    max_workers = _opt(args, "--max-workers")
    workers: int | None = None
    if max_workers is not None:
        try:
            workers = int(max_workers)
        except ValueError:
            workers = 0
        if workers < 1:
            raise AirException.of(
                kind="validation_error",
                message=f"--max-workers must be a positive integer, not {max_workers!r}",
                user_action="Pass --max-workers N with N >= 1.",
            )
    isolation = _opt(args, "--isolation") or "auto"
    if isolation not in ("auto", "main", "worktree", "isolated_copy"):
        raise AirException.of(
            kind="validation_error",
            message=f"--isolation must be auto, main, worktree or isolated_copy, not {isolation!r}",
            user_action="Pick one of: auto, main, worktree, isolated_copy.",
        )
    mode = _opt(args, "--permission-mode") or "default"
    if mode not in ("default", "allow-ask"):
        raise AirException.of(
            kind="validation_error",
            message=f"unknown --permission-mode {mode!r}",
            user_action="Pick default (a question fails closed) or allow-ask.",
        )
    return HeadlessOptions(
        project=os.path.abspath(_opt(args, "--project") or os.getcwd()),
        batch=_opt(args, "BATCH"),
        session_id=_opt(args, "--session"),
        provider=_opt(args, "--provider"),
        cassette=_opt(args, "--cassette"),
        max_workers=workers,
        permission_mode=mode,
        isolation=isolation,
        review=bool(_opt(args, "--review")),
        json_stream=bool(_opt(args, "--json")),
        junit=_opt(args, "--junit"),
        fake_script=_opt(args, "--fake-script"),
    )


def report_bad_input(exc: Any, stream: IO[str]) -> None:
    """Print an AirException as ``air: <message>`` plus what to do (message has file:line)."""
    print(f"air: {exc.kind.value}: {exc.error.message}", file=stream)
    if exc.error.detail:
        print(f"  detail: {exc.error.detail}", file=stream)
    if exc.user_action:
        print(f"  what to do: {exc.user_action}", file=stream)


def run_headless(argv_options: dict[str, Any]) -> int:
    """``air run --headless BATCH``. Returns the exit code (0, 1, 2 or 130)."""
    from air.contracts import AirException
    from air.nursery.batch import load_batch

    stderr = sys.stderr
    try:
        options = parse_options(argv_options)
        if not options.batch:
            raise AirException.of(
                kind="validation_error",
                message="no batch file given",
                user_action="Run `air run --headless BATCH` with a YAML batch file.",
            )
        batch = load_batch(options.batch)
    except AirException as exc:
        report_bad_input(exc, stderr)
        return EXIT_BAD_INPUT
    return run_batch_session(options, batch.specs)


# -- the run ------------------------------------------------------------------------------


class Progress:
    """Human progress on stderr: one line per task end, and a summary."""

    def __init__(self, stream: IO[str], json_out: IO[str] | None) -> None:
        self.stream = stream
        self.json_out = json_out
        self.started = time.monotonic()
        self.status: dict[str, str] = {}

    def elapsed(self) -> str:
        return f"{time.monotonic() - self.started:6.1f}s"

    def counts(self) -> tuple[int, int, int, int]:
        values = list(self.status.values())
        done = values.count("completed")
        running = values.count("running")
        failed = sum(values.count(s) for s in ("failed", "blocked"))
        return done, running, failed, len(values)

    def replay(self, history: list[Any]) -> None:
        """Take the statuses of a resumed session from its log (printing nothing)."""
        for event in history:
            if event.type == "task.created":
                self.status[event.payload["task_spec"]["id"]] = "pending"
            elif event.type.startswith("task.") and "task_id" in event.payload:
                kind = event.type.split(".", 1)[1]
                self.status[event.payload["task_id"]] = {
                    "started": "running",
                    "interrupted": "pending",
                }.get(kind, kind)

    def on_event(self, event: Any) -> None:
        if self.json_out is not None:
            self.json_out.write(event.model_dump_json() + "\n")
            self.json_out.flush()
        kind: str = event.type
        payload = event.payload
        if kind == "task.created":
            self.status[payload["task_spec"]["id"]] = "pending"
            return
        if not kind.startswith("task.") or kind == "task.progress":
            return
        task_id = payload.get("task_id", "?")
        new = kind.split(".", 1)[1]
        self.status[task_id] = {"started": "running", "interrupted": "pending"}.get(new, new)
        if new == "started":
            return
        done, running, failed, total = self.counts()
        detail = ""
        if new == "failed" and payload.get("error"):
            detail = f": {payload['error'].get('message', '')}"
        elif payload.get("reason") and new != "completed":
            detail = f": {payload['reason']}"
        print(
            f"air [{self.elapsed()}] {task_id} {new}{detail} "
            f"(done {done}/{total}, running {running}, failed {failed})",
            file=self.stream,
            flush=True,
        )


def write_junit(path: str, result: Any, specs: dict[str, Any], outcomes: dict[str, Any]) -> None:
    """Write a JUnit XML report: one testcase per task; failed/blocked are failures,
    cancelled/interrupted are skipped."""
    suite = ElementTree.Element(
        "testsuite",
        name=f"air session {result.session_id}",
        tests=str(len(specs)),
        failures=str(len(result.failed_task_ids) + len(result.blocked_task_ids)),
        skipped=str(len(result.cancelled_task_ids)),
    )
    for task_id, spec in specs.items():
        case = ElementTree.SubElement(suite, "testcase", classname="air.task", name=task_id)
        case.set("file", spec.title)
        status = outcomes.get(task_id, "pending")
        if status in ("failed", "blocked"):
            failure = ElementTree.SubElement(case, "failure", message=f"task {status}")
            failure.text = f"{spec.title}: {status}"
        elif status != "completed":
            ElementTree.SubElement(case, "skipped", message=f"task {status}")
    tree = ElementTree.ElementTree(suite)
    tmp = path + ".tmp"
    tree.write(tmp, encoding="utf-8", xml_declaration=True)
    os.replace(tmp, path)


def _load_fake_runner(path: str) -> Any:
    import yaml

    from air.contracts import AirException
    from air.testing.fake_runner import FakeStep, FakeTaskRunner

    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle) or {}
        default = FakeStep(**data.pop("default", {"duration": 0.05}))
        script = {str(k): [FakeStep(**step) for step in v] for k, v in data.items()}
    except (OSError, yaml.YAMLError, TypeError, AttributeError) as exc:
        raise AirException.of(
            kind="validation_error",
            message=f"{path}: bad fake script: {exc}",
            user_action="A fake script maps task ids to lists of {duration, ending} steps.",
        ) from exc
    return FakeTaskRunner(script, default=default, heartbeat_interval=1.0)


def _make_runner(
    options: HeadlessOptions, session: Any, project_root: str
) -> tuple[Any, Callable[[], None] | None]:
    """The TaskRunner and its provider warm-up (None when there is nothing to warm).

    The runner is the scripted fake (``--fake-script``) or the real WorkerManager with the
    session's ingestor and artifact store, the built-in tools under the PermissionEngine and
    the provider (``--cassette DIR`` of per-task cassettes, ``--cassette FILE``, or the
    configured models, whose adapter the warm-up builds in a thread)."""
    if options.fake_script:
        return _load_fake_runner(options.fake_script), None
    from air.llm import ProviderManager
    from air.llm.config import load_models_config
    from air.nursery.task_cassettes import TaskCassettes
    from air.nursery.worker_manager import WorkerManager
    from air.security import PermissionEngine, SecretRedactor
    from air.security.policy import load_policy
    from air.tools import ToolRegistry, register_builtin_tools

    redactor = SecretRedactor()
    engine = PermissionEngine(
        policy=load_policy(
            [
                os.path.join(os.path.expanduser("~"), ".air", "permissions.yaml"),
                os.path.join(project_root, ".air", "shared", "permissions.yaml"),
            ]
        ),
        redactor=redactor,
        sink=session.ingestor.ingest,
        headless_allow_ask=options.permission_mode == "allow-ask",
    )
    registry = ToolRegistry(
        engine=engine, recorder=session.ingestor, artifacts=session.artifacts, redactor=redactor
    )
    register_builtin_tools(registry)
    provider: Any
    model = "scripted/scripted"
    warm_up: Callable[[str], None] | None = None
    if options.cassette and os.path.isdir(options.cassette):
        provider = TaskCassettes(os.path.abspath(options.cassette))
    elif options.cassette:
        provider = ProviderManager.for_cassette(os.path.abspath(options.cassette))
    else:
        provider = ProviderManager(load_models_config(project_root))
        model = _configured_model(provider, options.provider)
        warm_up = provider.warm_up
    specs = [
        {"name": d.name, "description": d.description, "input_schema": d.input_schema}
        for d in registry.list()
    ]
    runner = WorkerManager(
        tools=registry.call,
        tool_streams=registry.call_streaming,
        provider=provider,
        events=session.ingestor,
        artifacts=session.artifacts,
        model=model,
        tool_specs=specs,
        state_dir=_runs_dir(project_root),
    )
    if warm_up is None:
        return runner, None
    provider_id = model.partition("/")[0]
    return runner, lambda: warm_up(provider_id)


def _configured_model(manager: Any, wanted: str | None) -> str:
    """The ``provider_id/model_id`` the session's workers use, fixed when the run starts.

    ``--provider`` may name a provider (its best fitting model is taken) or a
    ``provider_id/model_id``; without it the models.yaml default (or role pin) applies.

    Raises:
        AirException(config_error): nothing configured fits, with what to put in models.yaml.
    """
    from air.contracts import ModelRequirement

    if wanted and "/" in wanted:
        requirement = ModelRequirement(role="executor", model=wanted)
    else:
        requirement = ModelRequirement(role="executor", provider_id=wanted)
    chosen = manager.select_model(requirement)
    return f"{chosen.provider_id}/{chosen.model_id}"


def _reaper(project_root: str) -> Any:
    """Recovery's reaper: the WorkerManager's orphan reaping over the durable run records."""
    from air.nursery.ledger import StoredAgent
    from air.nursery.runs import reap_orphans

    root = _runs_dir(project_root)

    async def reap(agent: StoredAgent) -> bool:
        results = await reap_orphans(root)
        return any(r.agent_id == agent.agent_id for r in results)

    return reap


def run_batch_session(options: HeadlessOptions, specs: list[Any] | None) -> int:
    """Open the project and session, submit ``specs`` (if any), recover, run, report.

    Returns:
        The exit code.
    """
    import trio

    from air.contracts import AirException
    from air.tools.shell import check_sandbox_available

    outcome: dict[str, int] = {}
    try:
        check_sandbox_available()  # no sandbox, no run: never a silent unsandboxed mode
    except AirException as exc:
        report_bad_input(exc, options.stderr)
        return EXIT_BAD_INPUT
    try:
        trio.run(_main, options, specs, outcome)
    except AirException as exc:
        report_bad_input(exc, options.stderr)
        from air.cli import is_bad_input

        return EXIT_BAD_INPUT if is_bad_input(exc) else EXIT_FAILED
    return outcome.get("code", EXIT_FAILED)


def _make_monitor(session: Any) -> Any:
    """The AgentMonitor of a headless run: liveness and the hard-deadline safety net.

    The ingestor already writes the heartbeat columns (IMPL-EVT-4), so the monitor's flush does
    nothing; it learns each worker's pid from ``agent.started`` (to tell a silent worker from a
    gone one) and that it is alive from ``agent.heartbeat``, both read off the session's bus.
    """
    from air.contracts import EventFilter
    from air.nursery.monitor import AgentMonitor

    monitor = AgentMonitor(flush=lambda *_: None)

    def on_event(event: Any) -> None:
        payload = event.payload
        agent = monitor.agents.get(str(payload.get("agent_id")))
        if agent is None:
            return
        if event.type == "agent.heartbeat":
            monitor.record_heartbeat(agent.agent_id, payload)
        elif payload.get("pid"):
            agent.pid = int(payload["pid"])
            start = str(payload.get("pid_start_time") or "")
            agent.pid_start_time = int(start) if start.isdigit() else None

    session.bus.subscribe(EventFilter(types=["agent.started", "agent.heartbeat"]), on_event)
    return monitor


def _warm_up_on_first_agent(session: Any, warm_up: Callable[[], None]) -> None:
    """Build the provider's client (httpx, ~50-80 ms of imports) in a thread once the first
    worker has answered its handshake: it then imports its runtime on another core while this
    process idles, and the warm-up does not compete with the spawn (IMPL-START-1)."""
    from air.contracts import EventFilter

    started: list[bool] = []

    def on_event(_event: Any) -> None:
        if not started:
            started.append(True)
            warm_up()

    session.bus.subscribe(EventFilter(types=["agent.started"]), on_event)


async def _main(options: HeadlessOptions, specs: list[Any] | None, outcome: dict[str, int]) -> None:
    import trio

    from air.contracts import AirException, OpenSessionOptions
    from air.nursery.ledger import SessionLedger
    from air.nursery.planner import WavePlanner, default_max_workers
    from air.nursery.recovery import recover_session
    from air.nursery.runs import claim_session
    from air.nursery.scheduler import Scheduler, SchedulerOptions
    from air.session.manager import SessionManager, list_session_ids
    from air.session.project import ProjectStore
    from air.workspace.manager import WorkspaceManager

    project = _open_project(ProjectStore(), options.project)
    session_id = options.session_id
    if specs is None and session_id is None:
        known = list_session_ids(project)
        if not known:
            raise AirException.of(
                kind="not_found",
                message=f"no session to resume in {project.project_root}",
                user_action="Start one with `air run --headless BATCH`.",
            )
        session_id = known[-1]
    session = SessionManager().open_session(
        project,
        OpenSessionOptions(
            session_id=session_id, mode="headless", model_provider_id=options.provider
        ),
    )
    try:
        progress = Progress(options.stderr, options.stdout if options.json_stream else None)
        ledger = SessionLedger.for_session(session)
        print(
            f"air: session {ledger.session_id} in {project.project_root}",
            file=options.stderr,
            flush=True,
        )
        progress.replay(ledger.history())
        claim_session(_runs_dir(project.project_root), ledger.session_id)
        # every event of the session (the scheduler's, the workers', the tools') reaches the
        # progress display and the --json stream through the session's bus
        subscription = session.bus.subscribe(None, progress.on_event)
        async with session.bus.serving():
            workspaces = WorkspaceManager(project.project_root, ledger.record)
            runner, warm_up = _make_runner(options, session, project.project_root)
            reap = None
            if not options.fake_script:
                from air.nursery.runs import reap_orphans

                # orphans of a killed runtime, found by their durable run records (and markers)
                await reap_orphans(_runs_dir(project.project_root))
                reap = _reaper(project.project_root)
            await recover_session(
                ledger,
                workspaces=workspaces,
                reap=reap,
                referential_check=getattr(session.store, "referential_check", None),
            )
            monitor = _make_monitor(session)
            scheduler = Scheduler(
                ledger,
                runner,
                project_root=project.project_root,
                workspaces=workspaces,
                planner=WavePlanner(
                    isolation=options.isolation,  # type: ignore[arg-type]
                    git_repo=await workspaces.is_git_repo(),
                ),
                options=SchedulerOptions(
                    max_workers=options.max_workers or default_max_workers(),
                    review="wave" if options.review else "none",
                ),
                reap=reap,
                monitor=monitor,
            )
            monitor.on_overdue = scheduler.on_overdue
            if specs:
                await scheduler.create_tasks(specs)
            if warm_up is not None:
                _warm_up_on_first_agent(session, warm_up)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(
                    _watch_signals,
                    scheduler,
                    None if options.fake_script else _runs_dir(project.project_root),
                    options.stderr,
                )
                result = await scheduler.run_until_idle()
                nursery.cancel_scope.cancel(reason="run finished")
        subscription.close()
        done, _running, failed, total = progress.counts()
        print(
            f"air [{progress.elapsed()}] {result.status}: done {done}/{total}, failed {failed}, "
            f"waves {result.waves}",
            file=options.stderr,
            flush=True,
        )
        if options.junit:
            all_specs = {n.task_id: n.spec for n in scheduler.graph.tasks.values()}
            statuses = {n.task_id: n.status.value for n in scheduler.graph.tasks.values()}
            write_junit(options.junit, result, all_specs, statuses)
        if result.status == "cancelled":
            outcome["code"] = EXIT_CANCELLED
        elif result.status == "completed":
            outcome["code"] = EXIT_OK
        else:
            outcome["code"] = EXIT_FAILED
    finally:
        session.close()


def _runs_dir(project_root: str) -> str:
    return os.path.join(project_root, ".air", "local", "state", "runs")


def _open_project(store: Any, root: str) -> Any:
    """The air project at ``root`` (initialised on first use)."""
    project = store.locate(root)
    if project is None or os.path.realpath(project.project_root) != os.path.realpath(root):
        project = store.initialize(root)
    return project


async def _watch_signals(scheduler: Any, runs_dir: str | None, stderr: IO[str]) -> None:
    """First SIGINT/SIGTERM: cancel cooperatively. Second: SIGKILL every worker and exit 130.

    Everything already recorded stays recorded (each event is its own committed transaction);
    ``air resume`` recovers the rest.
    """
    import trio

    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        count = 0
        async for signum in signals:
            count += 1
            name = signal.Signals(signum).name
            if count == 1:
                print(
                    f"air: {name}: cancelling the run (again to kill at once)",
                    file=stderr,
                    flush=True,
                )
                scheduler.cancel(f"{name} received")
                continue
            print(f"air: {name}: killing every worker now", file=stderr, flush=True)
            if runs_dir is not None:
                from air.nursery.runs import reap_orphans

                with trio.move_on_after(2.0, shield=True):
                    # why shielded: the kill must happen even though the run is unwinding
                    await reap_orphans(runs_dir, grace_s=0.0, own=True)
            stderr.flush()
            os._exit(EXIT_CANCELLED)
