"""``air run --headless BATCH``: run a batch file of tasks without the console.

Owns: ``run_headless`` (the command body), ``run_batch_session`` (the Trio part shared with
``air resume``), the stderr progress reporter, the ``--json`` JSONL event stream, writing
the ``--junit`` report and the ``--json`` summary record (air/cli/junit.py), the signal
policy (first SIGINT/SIGTERM/SIGHUP cancels cooperatively, a second kills at once) and the
exit codes: 0 every task completed, 1 any failed or blocked, 2 bad input (refused before
anything is created), 130 cancelled. A closed stdout stops the ``--json``
stream quietly; the run goes on and its exit code is the run's (IMPL-CLI-4).

Usage (in ``air/cli/__init__.py``)::

  air run --headless BATCH [--project PATH] [--provider NAME] [--cassette PATH]
          [--record DIR] [--max-workers N] [--permission-mode MODE] [--isolation MODE] [--review]
          [--json] [--junit FILE]
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any

from air.cli.reporter import Progress

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
    "RunnerFactory",
    "run_headless",
]


RunnerFactory = Callable[["HeadlessOptions", Any, str], tuple[Any, Callable[[], None] | None]]
"""``factory(options, session, project_root) -> (runner, warm_up)``: how tests inject a fake
``TaskRunner`` through ``air.cli.main(argv, runner_factory=...)``. A runner so made keeps no
durable run records, so no orphan is reaped for it."""


@dataclass
class HeadlessOptions:
    """The options of ``air run --headless`` and ``air resume`` after parsing."""

    project: str
    batch: str | None = None
    session_id: str | None = None
    provider: str | None = None
    cassette: str | None = None
    record: str | None = None
    max_workers: int | None = None
    permission_mode: str = "default"
    isolation: str = "auto"
    review: bool = False
    json_stream: bool = False
    junit: str | None = None
    runner_factory: RunnerFactory | None = None
    """Builds the TaskRunner instead of the real workers (tests only; never from argv)."""
    spare: Any = None
    """A worker started ahead (``air.ipc.spare.SpareWorker``) for the first task."""
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
    if _opt(args, "--record") and _opt(args, "--cassette"):
        raise AirException.of(
            kind="validation_error",
            message="--record and --cassette exclude each other",
            user_action="Record against a real provider, or replay a cassette; not both.",
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
        record=_opt(args, "--record"),
        max_workers=workers,
        permission_mode=mode,
        isolation=isolation,
        review=bool(_opt(args, "--review")),
        json_stream=bool(_opt(args, "--json")),
        junit=_opt(args, "--junit"),
    )


def report_bad_input(exc: Any, stream: IO[str]) -> None:
    """Print an AirException as ``air: <message>`` plus what to do (message has file:line)."""
    print(f"air: {exc.kind.value}: {exc.error.message}", file=stream)
    if exc.error.detail:
        print(f"  detail: {exc.error.detail}", file=stream)
    if exc.user_action:
        print(f"  what to do: {exc.user_action}", file=stream)


def run_headless(argv_options: dict[str, Any], runner_factory: RunnerFactory | None = None) -> int:
    """``air run --headless BATCH``. Returns the exit code (0, 1, 2 or 130).

    ``runner_factory`` replaces the real workers (tests only, see ``air.cli.main``)."""
    # first: the spare imports on the other core (IMPL-START-2)
    spare = _start_up(argv_options, fake=runner_factory is not None)
    try:
        from air.cli.doctor import setup_logging

        setup_logging()  # air.log / air.developer.log (SDD §16.2), after the spare started
        return _run_headless(argv_options, spare, runner_factory)
    finally:
        if spare is not None:
            spare.close()  # unless a task adopted it
        from air.ipc.startup import release_gc

        release_gc()


def _start_up(args: dict[str, Any], *, fake: bool) -> Any:
    """Before any heavy import: hold the garbage collector, skip pydantic's plugin lookup and
    start the spare worker (None for a run with injected fake workers or a bad command line)."""
    from air.ipc.startup import hold_gc, skip_pydantic_plugins

    hold_gc()  # released once the run is set up (IMPL-START-2)
    skip_pydantic_plugins()
    if fake or not args.get("BATCH"):
        return None
    from air.ipc.spare import SpareWorker

    return SpareWorker.start(os.path.abspath(args.get("--project") or os.getcwd()))


def _run_headless(
    argv_options: dict[str, Any], spare: Any, runner_factory: RunnerFactory | None
) -> int:
    from air.contracts import AirException
    from air.nursery.batch import load_batch

    stderr = sys.stderr
    try:
        options = parse_options(argv_options)
        options.spare = spare
        if not options.batch:
            raise AirException.of(
                kind="validation_error",
                message="no batch file given",
                user_action="Run `air run --headless BATCH` with a YAML batch file.",
            )
        options.runner_factory = runner_factory
        batch = load_batch(options.batch)
    except AirException as exc:
        report_bad_input(exc, stderr)
        return EXIT_BAD_INPUT
    return run_batch_session(options, batch.specs)


# -- the run ------------------------------------------------------------------------------


@dataclass
class _Prepared:
    """What a run reads before it creates anything: the permission policy and the provider
    (every bad file or option is an AirException here, with nothing on disk yet)."""

    policy: Any = None
    redactor: Any = None
    """The run's SecretRedactor (the provider and the PermissionEngine share it)."""
    provider: Any = None
    model: str = "scripted/scripted"
    warm_up: Callable[[str], None] | None = None


def _bad(kind: str, message: str, user_action: str, **metadata: Any) -> Any:
    from air.contracts import AirException

    return AirException.of(kind=kind, message=message, user_action=user_action, metadata=metadata)


def _check_git() -> None:
    """git on PATH (checked first: without it nothing else about the run matters)."""
    import shutil

    if shutil.which("git") is None:
        raise _bad(
            "config_error",
            "git is not installed (no `git` on PATH): air keeps every task's work in git",
            "Install git (e.g. `apt-get install git`) or put it on PATH, and run again.",
            field="PATH",
        )


def _check_environment(options: HeadlessOptions) -> None:
    """git on PATH, an existing ``--project`` directory, a writable ``--junit`` path."""
    _check_git()
    if not os.path.isdir(options.project):
        what = "is not a directory" if os.path.exists(options.project) else "does not exist"
        raise _bad(
            "not_found",
            f"--project {options.project}: {what}",
            "Pass --project with an existing directory (or run air from inside it).",
            file=options.project,
            field="--project",
        )
    if options.junit:
        _check_writable(options.junit, "--junit")


def _check_writable(path: str, option: str) -> None:
    parent = os.path.dirname(os.path.abspath(path)) or "."
    reason = None
    if os.path.isdir(path):
        reason = "is a directory"
    elif not os.path.isdir(parent):
        reason = f"its directory {parent} does not exist"
    elif not os.access(parent, os.W_OK):
        reason = f"its directory {parent} is not writable"
    else:
        probe = path + ".tmp"  # the report is written there first (write_junit), then renamed
        try:
            with open(probe, "x", encoding="utf-8"):
                pass
            os.unlink(probe)
        except FileExistsError:
            pass
        except OSError as exc:
            reason = f"cannot be written ({exc.strerror or exc})"
    if reason is not None:
        raise _bad(
            "validation_error",
            f"{option} {path}: {reason}",
            f"Pass {option} with a file path in an existing, writable directory.",
            file=path,
            field=option,
            reason=reason,
        )


def _prepare(options: HeadlessOptions, project_root: str) -> _Prepared:
    """Read the permission policy and the provider configuration, and pick the model.

    Raises:
        AirException: a bad permissions.yaml / models.yaml / cassette, an unknown
            ``--provider``, or no model configured at all (``config_error`` naming the file
            and field to set).
    """
    if options.runner_factory is not None:
        return _Prepared()
    from air.llm import ProviderManager
    from air.nursery.task_cassettes import TaskCassettes
    from air.security import SecretRedactor
    from air.security.policy import load_policy

    redactor = SecretRedactor()
    redactor.register_environment(os.environ)  # values of *_TOKEN, *_API_KEY... (SDD §9.2)
    prepared = _Prepared(
        redactor=redactor,
        policy=load_policy(
            [
                os.path.join(os.path.expanduser("~"), ".air", "permissions.yaml"),
                os.path.join(project_root, ".air", "shared", "permissions.yaml"),
            ]
        ),
    )
    if options.cassette and os.path.isdir(options.cassette):
        directory = os.path.abspath(options.cassette)
        for name in sorted(os.listdir(directory)):
            if name.endswith(".jsonl"):
                _check_cassette(os.path.join(directory, name))
        prepared.provider = TaskCassettes(directory)
    elif options.cassette:
        _check_cassette(os.path.abspath(options.cassette))
        prepared.provider = ProviderManager.for_cassette(os.path.abspath(options.cassette))
    else:
        manager = ProviderManager(load_models_checked(project_root), redactor=redactor)
        prepared.provider = manager
        prepared.model = _configured_model(manager, options.provider)
        prepared.warm_up = manager.warm_up
        if options.record:
            from air.llm.cassette import TaskRecorder

            prepared.provider = TaskRecorder(manager, options.record, secrets=manager.secrets())
    return prepared


def load_models_checked(project_root: str | None) -> Any:
    """``load_models_config``, with a file that is not UTF-8 or nested too deeply for the YAML
    parser reported as ``config_error`` naming it (the loader lets those through).

    Raises:
        AirException(config_error): any bad models.yaml.
    """
    from air.llm.config import load_models_config

    try:
        return load_models_config(project_root)
    except (UnicodeDecodeError, RecursionError) as exc:
        raise _models_file_problem(project_root, exc) from None


def _models_file_problem(project_root: str | None, exc: BaseException) -> Any:
    """The models.yaml that is not UTF-8 or nested too deeply, named (the loader could not)."""
    import yaml

    from air.llm.config import project_models_path, user_models_path

    reason = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else "nested too deeply"
    culprit = "models.yaml"
    paths = [user_models_path()]
    if project_root is not None:
        paths.append(project_models_path(project_root))
    for path in paths:
        try:
            with open(path, encoding="utf-8") as handle:
                yaml.compose(handle.read(), Loader=yaml.SafeLoader)
        except FileNotFoundError:
            continue
        except (UnicodeDecodeError, RecursionError):
            culprit = path
            break
        except (OSError, yaml.YAMLError):
            continue
    return _bad(
        "config_error",
        f"{culprit}: file: not valid YAML ({reason})",
        f"Fix {culprit} (see docs/decisions.md IMPL-LLM-2 for the format).",
        file=culprit,
        field="file",
        reason=reason,
    )


def _check_cassette(path: str) -> None:
    """Validate a cassette now, so a bad one is refused before the run starts."""
    from air.llm import load_cassette

    if not os.path.isfile(path):
        what = "is not a regular file" if os.path.exists(path) else "does not exist"
        raise _bad(
            "not_found",
            f"--cassette {path}: {what}",
            "Pass --cassette with a cassette file (.jsonl) or a directory of <task id>.jsonl.",
            file=path,
            field="--cassette",
        )
    try:
        load_cassette(path)
    except (UnicodeDecodeError, ValueError) as exc:
        raise _bad(
            "validation_error",
            f"{path}: not a cassette: {exc.__class__.__name__}: not UTF-8 JSON lines",
            "Pass a cassette recorded by air (format: air/llm/schemas/cassette.schema.json).",
            file=path,
            field="--cassette",
        ) from None
    except RecursionError:
        raise _bad(
            "validation_error",
            f"{path}: not a cassette: nested too deeply",
            "Pass a cassette recorded by air (format: air/llm/schemas/cassette.schema.json).",
            file=path,
            field="--cassette",
        ) from None


def _make_runner(
    options: HeadlessOptions, session: Any, project_root: str, prepared: _Prepared
) -> tuple[Any, Callable[[], None] | None]:
    """The TaskRunner and its provider warm-up (None when there is nothing to warm).

    The runner is the injected one (``options.runner_factory``, tests only) or the real
    WorkerManager with the session's ingestor and artifact store, the built-in tools under the
    PermissionEngine and the provider ``_prepare`` chose (``--cassette DIR`` of per-task
    cassettes, ``--cassette FILE``, or the configured models, whose adapter the warm-up builds
    in a thread)."""
    if options.runner_factory is not None:
        return options.runner_factory(options, session, project_root)
    from air.capabilities import load_capabilities
    from air.nursery.worker_manager import WorkerManager
    from air.security import PermissionEngine
    from air.tools import ToolRegistry, register_builtin_tools

    redactor = prepared.redactor
    engine = PermissionEngine(
        policy=prepared.policy,
        redactor=redactor,
        sink=session.ingestor.ingest,
        headless_allow_ask=options.permission_mode == "allow-ask",
    )
    registry = ToolRegistry(
        engine=engine, recorder=session.ingestor, artifacts=session.artifacts, redactor=redactor
    )
    sandbox = register_builtin_tools(registry)
    load_capabilities(
        registry,
        record=session.ingestor.ingest_sync,
        session_id=session.session_id,
        project_root=project_root,
        sandbox=sandbox,
    )
    provider = prepared.provider
    model = prepared.model
    warm_up = prepared.warm_up
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
        context=_worker_context(session, provider, model),
        state_dir=_runs_dir(project_root),
        redactor=redactor,
        spare=options.spare,
    )
    if warm_up is None:
        return runner, None
    provider_id = model.partition("/")[0]
    return runner, lambda: warm_up(provider_id)


def _worker_context(session: Any, provider: Any, model: str) -> Any:
    """The ContextPack builder of the run's workers, sized by the model's window (IMPL-CTX-6)."""
    from importlib import resources

    from air.context.worker_pack import WorkerContextBuilder

    rows: list[Any] = getattr(provider, "list_models", list)()
    ref = model.partition("/")
    window = next((r.context_window for r in rows if (r.provider_id, r.model_id) == ref[::2]), None)
    prompts = resources.files("air.roles").joinpath("prompts")
    return WorkerContextBuilder.for_session(
        session, role_prompt_dir=str(prompts), context_window=window
    )


def _configured_model(manager: Any, wanted: str | None) -> str:
    """The ``provider_id/model_id`` the session's workers use, fixed when the run starts.

    ``--provider`` may name a provider (its best fitting model is taken) or a
    ``provider_id/model_id``; without it the models.yaml default (or role pin) applies.

    Raises:
        AirException(config_error): nothing configured fits, with what to put in models.yaml.
    """
    from air.contracts import AirException, ModelRequirement

    if wanted and "/" in wanted:
        requirement = ModelRequirement(role="executor", model=wanted)
    else:
        requirement = ModelRequirement(role="executor", provider_id=wanted)
    try:
        chosen = manager.select_model(requirement)
    except AirException as exc:
        said = f"{exc.error.message} {exc.user_action or ''}"
        if wanted and not (wanted in said and "models.yaml" in said):
            # the selector's message does not name the --provider value and the file: say it
            _check_provider_flag(manager.config, wanted)
        raise
    return f"{chosen.provider_id}/{chosen.model_id}"


def _check_provider_flag(config: Any, wanted: str) -> None:
    """``--provider NAME`` or ``NAME/MODEL`` names something models.yaml configures."""
    provider_id, _, model_id = wanted.partition("/")
    files = " and ".join(config.sources) or "~/.air/models.yaml (there is none)"
    provider = config.providers.get(provider_id)
    reason = None
    if provider is None:
        known = ", ".join(sorted(config.providers)) or "none"
        reason = f"no provider {provider_id!r} in {files} (configured: {known})"
    elif model_id and model_id not in provider.models:
        known = ", ".join(sorted(provider.models)) or "none"
        reason = f"provider {provider_id!r} has no model {model_id!r} in {files} (models: {known})"
    if reason is not None:
        raise _bad(
            "config_error",
            f"--provider {wanted}: {reason}",
            "Pass --provider with a provider (or provider/model) from `air provider list`, "
            "or add it to ~/.air/models.yaml.",
            field="--provider",
            reason=reason,
        )


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

    problems = []
    # no git or no sandbox, no run (never a silent unsandboxed mode): say every missing tool
    for check in (_check_git, check_sandbox_available):
        try:
            check()
        except AirException as refused:
            problems.append(refused)
    if not problems:
        try:
            _check_environment(options)  # an existing --project, a writable --junit
        except AirException as refused:
            problems.append(refused)
    for each in problems:
        report_bad_input(each, options.stderr)
    if problems:
        return EXIT_BAD_INPUT
    outcome: dict[str, int] = {}
    try:
        trio.run(_main, options, specs, outcome)
    except BaseExceptionGroup as group:
        # an AirException raised under a nursery (the session's bus, the signal watcher)
        # arrives wrapped in a group; it is still the user's problem, not a crash
        found = first_air_exception(group)
        if found is None:
            raise
        report_bad_input(found, options.stderr)
        from air.cli import is_bad_input

        return EXIT_BAD_INPUT if is_bad_input(found) else EXIT_FAILED
    except AirException as exc:
        report_bad_input(exc, options.stderr)
        from air.cli import is_bad_input

        return EXIT_BAD_INPUT if is_bad_input(exc) else EXIT_FAILED
    return outcome.get("code", EXIT_FAILED)


def first_air_exception(exc: BaseException) -> Any:
    """The first ``AirException`` in ``exc`` or its (nested) exception groups, else None."""
    from air.contracts import AirException

    if isinstance(exc, AirException):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = first_air_exception(inner)
            if found is not None:
                return found
    return None


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


def _release_gc_on_first_agent(session: Any) -> None:
    """Resume the garbage collector ``run_headless`` held (IMPL-START-2) once the first worker
    has started, or the first attempt ended without one: start-up is then over."""
    from air.contracts import EventFilter
    from air.ipc.startup import release_gc

    ends = ["task.completed", "task.failed", "task.blocked", "task.cancelled", "task.interrupted"]
    session.bus.subscribe(EventFilter(types=["agent.started", *ends]), lambda _e: release_gc())


async def _main(options: HeadlessOptions, specs: list[Any] | None, outcome: dict[str, int]) -> None:
    import trio

    from air.contracts import OpenSessionOptions
    from air.nursery.ledger import SessionLedger
    from air.nursery.planner import WavePlanner, default_max_workers
    from air.nursery.recovery import recover_session
    from air.nursery.runs import claim_session
    from air.nursery.scheduler import Scheduler, SchedulerOptions
    from air.session.manager import SessionManager
    from air.session.project import ProjectStore
    from air.workspace.backups import BackupRepository
    from air.workspace.manager import WorkspaceManager

    prepared: _Prepared | None = None
    if specs is None:
        # resume: the session is checked first (opening it creates nothing), then the config
        project, session_id = _session_to_resume(ProjectStore(), options)
    else:
        prepared = _prepare(options, options.project)
        project = _open_project(ProjectStore(), options.project)
        session_id = None
    # a new session's session.created is written with its task.created events, in one
    # transaction (below): a kill in between leaves no session rather than an empty one
    session = SessionManager().open_session(
        project,
        OpenSessionOptions(
            session_id=session_id, mode="headless", model_provider_id=options.provider
        ),
        defer_created=specs is not None,
        must_exist=specs is None,
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
        if specs is None and not progress.status:
            raise _bad(
                "not_found",
                f"session {ledger.session_id} has no tasks: nothing to resume",
                "Start the batch again with `air run --headless BATCH`.",
                field="--session",
            )
        if prepared is None:
            prepared = _prepare(options, project.project_root)
        # every event of the session (the scheduler's, the workers', the tools') reaches the
        # progress display and the --json stream through the session's bus
        subscription = session.bus.subscribe(None, progress.on_event)
        async with session.bus.serving():
            workspaces = WorkspaceManager(
                project.project_root,
                ledger.record,
                backups=BackupRepository(project.project_root, session_id=ledger.session_id),
            )
            runner, warm_up = _make_runner(options, session, project.project_root, prepared)
            if warm_up is not None:
                warm_up()  # a thread: it runs while this one waits on the disk (IMPL-START-2)
            reap = None
            if options.runner_factory is None:
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
                with session.creating():
                    await scheduler.create_tasks(specs)
            _release_gc_on_first_agent(session)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(
                    _watch_signals,
                    scheduler,
                    None if options.runner_factory else _runs_dir(project.project_root),
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
        if result.status == "cancelled":
            outcome["code"] = EXIT_CANCELLED
        elif result.status == "completed":
            outcome["code"] = EXIT_OK
        else:
            outcome["code"] = EXIT_FAILED
        if options.junit or progress.json_out is not None:
            from air.cli.junit import summary_record, write_junit
            from air.cli.session_report import summarise

            summary = summarise(ledger.history())
            for node in scheduler.graph.tasks.values():  # the Scheduler's word is final
                if node.task_id in summary.tasks:
                    summary.tasks[node.task_id].status = node.status.value
            if options.junit:
                write_junit(options.junit, summary)
            if progress.json_out is not None:
                record = summary_record(
                    summary,
                    exit_code=outcome["code"],
                    status=str(result.status),
                    duration_s=time.monotonic() - progress.started,
                )
                progress.stream_line(json.dumps(record) + "\n")
    finally:
        session.close()


def _runs_dir(project_root: str) -> str:
    return os.path.join(project_root, ".air", "local", "state", "runs")


def _session_to_resume(store: Any, options: HeadlessOptions) -> tuple[Any, str]:
    """The project and the session ``air resume`` continues; creates nothing.

    Raises:
        AirException: ``not_found`` outside a project, for an unknown ``--session`` or when
            the project has no session.
    """
    from air.session.manager import list_session_ids

    project = store.locate(options.project)
    if project is None:
        raise _bad(
            "not_found",
            f"no air project at {options.project} or above it: nothing to resume",
            "Run `air resume` inside the project (or pass --project PATH).",
            file=options.project,
            field="--project",
        )
    known = list_session_ids(project)
    if options.session_id is not None:
        if options.session_id not in known:
            raise _bad(
                "not_found",
                f"--session {options.session_id!r}: no such session in {project.project_root}",
                "Pick a session id from `air session list`.",
                field="--session",
            )
        return project, options.session_id
    if not known:
        raise _bad(
            "not_found",
            f"no session to resume in {project.project_root}",
            "Start one with `air run --headless BATCH`.",
            field="--session",
        )
    return project, known[-1]


def _open_project(store: Any, root: str) -> Any:
    """The air project at ``root`` (initialised on first use)."""
    project = store.locate(root)
    if project is None or os.path.realpath(project.project_root) != os.path.realpath(root):
        project = store.initialize(root)
    return project


async def _watch_signals(scheduler: Any, runs_dir: str | None, stderr: IO[str]) -> None:
    """First SIGINT/SIGTERM/SIGHUP (the terminal closed): cancel cooperatively. Second: SIGKILL
    every worker and exit 130.

    Everything already recorded stays recorded (each event is its own committed transaction);
    ``air resume`` recovers the rest.
    """
    import trio

    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
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
