"""``open_runtime()``: the one composition root of a session's runtime (SDD RuntimeApp, §2).

Owns: ``open_runtime`` (an async context manager), its inputs ``RuntimeConfig`` and
``RuntimeServices`` (built by ``air.cli.factory.RuntimeFactory`` from the command line and the
configuration files) and the handle it yields, ``Runtime``. In order, once each:

1. open the session (a new one defers ``session.created`` to the first tasks, IMPL-START-1;
   an existing one must exist) and its ``SessionLedger``; ``on_open`` lets the client look
   at it (print, replay, refuse) before anything is recorded; claim the session for this
   process (``claim_session``);
2. read the services (``RuntimeServices``: policy, redactor, provider, model) — late, so a
   resume refuses a session with nothing to resume before it reads any configuration;
3. open the root nursery and serve the session's EventBus in it;
4. build the WorkspaceManager, the PermissionEngine + ToolRegistry (built-in tools, then the
   capabilities through ``extend_tools``), the worker ContextPack builder, the WorkerManager
   (or the injected runner), the AgentMonitor and the Scheduler; the workers' context builder
   compacts the session when a task's context passes the compaction threshold
   (``air.nursery.worker_context``, IMPL-COMPACT-1) and ``Runtime.compactor`` gives the Main
   Agent its compactor over the same lock; with ``.air/shared/architecture.yaml`` the Scheduler's
   architecture gate is the ArchitectureDesigner's (fail closed headless, IMPL-COMPACT-3);
   every call of the run's provider is recorded in the session's usage ledger
   (``air.nursery.usage``, IMPL-USAGE-1);
5. recover the session once (SDD §16.3: orphans of a dead runtime reaped by their durable run
   records, lost agents, interrupted tasks, FK-off scan, workspace GC) — the Scheduler is told
   it was done (``SchedulerOptions.recover=False``);
6. yield ``Runtime``; on exit the root nursery is cancelled and the session closed; an
   exception group leaving it is translated once (``one_error``), so no client unwraps one.

Nothing is patched in after construction: the Scheduler hands the AgentMonitor its callbacks
when it starts it. Clients (``air run --headless``, ``air resume``, the console) only submit
tasks, run, observe the bus and cancel.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import trio

from air.contracts.error import AirException, ErrorKind, machine_failure
from air.contracts.event import EventFilter
from air.contracts.platform import ProcessIdentity
from air.contracts.project import OpenSessionOptions, ProjectContext
from air.contracts.prompt import PermissionPrompt
from air.contracts.task import TaskSpec
from air.nursery.ledger import SessionLedger, StoredAgent
from air.nursery.person_waits import OffTheClock
from air.nursery.planner import IsolationPolicy, WavePlanner, default_max_workers
from air.nursery.recovery import Reaper, RecoveryReport, recover_session
from air.nursery.retry import RetryPlanner
from air.nursery.scheduler import Scheduler, SchedulerOptions
from air.nursery.usage import counting_usage
from air.nursery.worker_context import session_compactor, worker_context
from air.session.knowledge_recovery import recover_knowledge
from air.session.local_owner import claim_local_state
from air.session.manager import OpenSession, SessionManager
from air.supervision.monitor import AgentMonitor
from air.supervision.runs import claim_session, live_owners, reap_orphans, runs_dir
from air.supervision.seams import TaskRunner
from air.workspace.backups import BackupRepository
from air.workspace.manager import WorkspaceManager
from air.workspace.tracked_state import refuse_tracked_state

if TYPE_CHECKING:
    from air.context.compactor import SessionCompactor
    from air.contracts.task_results import SchedulerRunResult
    from air.nursery.architecture_gate import ArchitectureGate

__all__ = ["Runtime", "RuntimeConfig", "RuntimeServices", "one_error", "open_runtime"]

RunnerBuilder = Callable[[OpenSession], tuple[TaskRunner, Callable[[], None] | None]]
"""``build(session) -> (runner, warm_up)``: an injected TaskRunner (tests: fake workers). Such
a runner keeps no durable run records, so no orphan is reaped for it."""

GateBuilder = Callable[[OpenSession, "RuntimeServices", Any], "ArchitectureGate | None"]
"""``build(session, services, registry) -> gate | None``: the Scheduler's architecture gate
(the ArchitectureDesigner's, which ``air/nursery`` may not import); None: no gate."""

ToolSource = Callable[[trio.Nursery, Any, OpenSession], Awaitable[None]]
"""``await start(nursery, registry, session)``: tools other processes serve (the MCP servers,
which ``air/nursery`` may not import), started in the root nursery after ``extend_tools`` and
before the workers' tool list is taken; they stop when the root nursery is cancelled."""

ToolExtender = Callable[[Any, OpenSession, Any], None]
"""``extend(registry, session, sandbox)``: registers more tools after the built-in ones (the
capabilities, which ``air/nursery`` may not import: ARCHITECTURE §1)."""


@dataclass(repr=False, eq=False)
class RuntimeServices:
    """What the tools and workers are built from, read and checked before anything exists."""

    policy: Any = None
    """The merged PermissionPolicy (None: the engine's default)."""
    redactor: Any = None
    """The run's SecretRedactor (the provider and the PermissionEngine share it)."""
    provider: Any = None
    """The ProviderManager, a per-task cassette set or a recorder around the manager."""
    model: str = "scripted/scripted"
    warm_up: Callable[[str], None] | None = None
    """Builds the provider's adapter (``warm_up(provider_id)``, in a thread of its own)."""
    escalation: tuple[str, ...] = ()
    """models.yaml ``escalation``: the model ladder the RetryPlanner climbs (IMPL-REVIEW-2)."""
    tool_room: Callable[[str], Any] | None = None
    """What bounds the tools of one request to a model (``ProviderManager.tool_room``)."""


@dataclass(repr=False, eq=False)
class RuntimeConfig:
    """The inputs of ``open_runtime``."""

    project: ProjectContext
    session: OpenSessionOptions
    new_session: bool
    """True: a new session (its ``session.created`` waits for the first tasks); False: the
    session ``session.session_id`` must exist."""
    services: Callable[[], RuntimeServices] = RuntimeServices
    """Called once, after ``on_open``: reads and checks the configuration."""
    isolation: IsolationPolicy = "auto"
    branch: str | None = None
    """``--branch NAME``: checked out (made from HEAD when new) before any task runs."""
    max_workers: int | None = None
    review: bool = False
    allow_ask: bool = False
    """``--permission-mode allow-ask``: a question about a non-sensitive item is announced."""
    prompts: PermissionPrompt | None = None
    """Who answers ``ask_user`` (the console); None: headless, fail closed."""
    spare: Any = None
    """A worker started ahead (``air.ipc.spare.SpareWorker``) for the first task."""
    runner: RunnerBuilder | None = None
    extend_tools: ToolExtender | None = None
    tool_sources: ToolSource | None = None
    architecture_gate: GateBuilder | None = None
    """Builds the Scheduler's architecture gate once the tools exist (IMPL-COMPACT-3)."""
    on_open: Callable[[OpenSession, SessionLedger], None] | None = None
    """Called with the open session before anything is recorded; may raise AirException."""
    subscribers: Sequence[Callable[[Any], None]] = field(default_factory=tuple)
    """Bus handlers for every event of the session, subscribed before anything is recorded."""
    remote: Any = None
    """``air.nursery.remote_tasks.RemotePlan``: tasks that run on other hosts (IMPL-REMOTE-5)."""
    interactive: bool = False
    """The console: a new session's ``session.created`` is recorded at once (its first events
    are the person's messages, not tasks) and the workers' ``ask_user`` questions go to
    ``prompts`` (``SchedulerOptions.headless`` False); False: headless."""


@dataclass(repr=False, eq=False)
class Runtime:
    """The handle clients use: submit, run, watch the bus, cancel."""

    session: OpenSession
    ledger: SessionLedger
    scheduler: Scheduler
    workspaces: WorkspaceManager
    monitor: AgentMonitor
    runner: TaskRunner
    services: RuntimeServices
    recovery: RecoveryReport
    nursery: trio.Nursery
    """The root nursery: long-lived client services (a signal watcher, the console) run here."""
    runs_dir: str
    real_workers: bool
    """False when the runner was injected (no durable run records)."""
    registry: Any = None
    engine: Any = None
    compaction_lock: trio.Lock = field(default_factory=trio.Lock)
    """One per session: every compactor of the session summarises under it."""

    def compactor(self, models: Any = None) -> SessionCompactor:
        """The session's compactor over ``models`` (default the run's provider), with the
        project's compaction rules and the session's compaction lock."""
        models = models or self.services.provider
        return session_compactor(self.session, self.ledger, models, self.compaction_lock)

    @property
    def session_id(self) -> str:
        return self.session.session_id

    @property
    def project_root(self) -> str:
        return self.session.project.project_root

    @property
    def bus(self) -> Any:
        return self.session.bus

    @property
    def store(self) -> Any:
        return self.session.events

    async def submit(self, specs: Sequence[TaskSpec]) -> None:
        """Create tasks; a new session's ``session.created`` commits with them.

        Raises:
            AirException: ``validation_error`` before anything is created when more than one
                task forks the Main Agent's conversation or one does in a session without
                one (``air.context.fork.fork_refusal``, IMPL-FORK-1).
        """
        if any(s.context == "fork" for s in specs):
            from air.context.fork import fork_refusal, forked_conversation
            from air.context.session_rows import readers_from_store

            readers = readers_from_store(self.session.store)
            refusal = fork_refusal(specs, len(forked_conversation(readers, self.session_id)))
            if refusal is not None:
                raise refusal
        with self.session.creating():
            await self.scheduler.create_tasks(list(specs))

    async def run_until_idle(self) -> SchedulerRunResult:
        return await self.scheduler.run_until_idle()

    def cancel(self, reason: str) -> None:
        """Cancel the run cooperatively (tasks end cancelled/interrupted; resumable)."""
        self.scheduler.cancel(reason)

    async def kill_workers(self) -> None:
        """SIGKILL every worker this process started, now (a second Ctrl-C)."""
        if not self.real_workers:
            return
        with trio.move_on_after(2.0, shield=True):
            # why shielded: the kill must happen even though the run is unwinding
            await reap_orphans(self.runs_dir, grace_s=0.0, own=True, remote=_sweep_remote)

    async def settle(self) -> None:
        """Deliver every event queued on the bus now (bounded), e.g. before a summary."""
        with trio.move_on_after(5, shield=True):
            await self.session.bus.drain()


@asynccontextmanager
async def open_runtime(config: RuntimeConfig) -> AsyncIterator[Runtime]:
    """Open the session's runtime (see the module docstring for what it builds, once each).

    Errors cross this edge once (``one_error``): an ``AirException`` raised in the client's
    body or in a task of the root nursery leaves as itself, never inside an exception group.

    Raises:
        AirException: an unknown or unrecorded session, another process running it, a
            refusal of ``on_open``, a bad configuration (``services``), or the client's own;
            ``system_error`` listing them when several happened at once.
    """
    # the sessions and knowledge in .air/local are air's own, never a clone's (IMPL-TRUST-3)
    refuse_tracked_state(config.project.project_root)
    claim_local_state(config.project.project_root)  # nor a tarball's or a copy's
    session = SessionManager().open_session(
        config.project,
        config.session,
        defer_created=config.new_session and not config.interactive,
        must_exist=not config.new_session,
    )
    try:
        ledger = SessionLedger.for_session(session)
        for handler in config.subscribers:
            session.bus.subscribe(None, handler)
        if config.on_open is not None:
            config.on_open(session, ledger)
        root = session.project.project_root
        runs = runs_dir(root)
        claim_session(runs, ledger.session_id)
        services = recorded_model(config.services(), session)
        try:
            # every model call of the session is counted in its usage ledger (IMPL-USAGE-1)
            with counting_usage(services.provider, ledger):
                async with trio.open_nursery() as nursery:
                    async with session.bus.serving():
                        yield await _build(config, session, ledger, services, nursery, runs)
                    nursery.cancel_scope.cancel(reason="runtime closed")
        except BaseExceptionGroup as group:
            raise one_error(group) from None
    finally:
        session.close()


def recorded_model(services: RuntimeServices, session: OpenSession) -> RuntimeServices:
    """A session runs on the provider and model it recorded (issue 24 item 4: ``air resume``
    and ``--session`` do not re-read today's choice); one recorded none keeps ``services``'."""
    ctx = session.context
    if not (ctx.model_provider_id and ctx.model_id):
        return services
    services.model = f"{ctx.model_provider_id}/{ctx.model_id}"
    return services


def one_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """What an exception group leaving the runtime's nurseries becomes at its edge, so that no
    client unwraps groups: a full disk or no file left to open is the user's to fix
    (``machine_failure``); one ``AirException`` is itself; several (and nothing else) become
    one ``system_error`` listing them; a single bug is itself; a group holding a bug beside
    anything else, or a cancellation / KeyboardInterrupt, stays the group it was."""
    leaves = [machine_failure(e) or e for e in _leaves(group)]  # a full disk is no bug
    if any(not isinstance(e, Exception) for e in leaves):
        return group  # Cancelled belongs to its cancel scope, KeyboardInterrupt to trio.run
    errors = [e for e in leaves if isinstance(e, AirException)]
    if len(leaves) == 1:
        return leaves[0]
    if len(errors) < len(leaves):
        return group  # a bug beside other errors: every traceback shows
    listed = "; ".join(f"{e.kind.value}: {e.error.message}" for e in errors)
    actions = [e.user_action for e in errors if e.user_action]
    return AirException.of(
        kind=ErrorKind.SYSTEM_ERROR,
        message=f"{len(errors)} errors at once: {listed}",
        user_action=" / ".join(dict.fromkeys(actions)) or None,
        metadata={"errors": [e.error.model_dump(mode="json") for e in errors]},
    )


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    found: list[BaseException] = []
    for inner in group.exceptions:
        found.extend(_leaves(inner) if isinstance(inner, BaseExceptionGroup) else [inner])
    return found


async def _build(
    config: RuntimeConfig,
    session: OpenSession,
    ledger: SessionLedger,
    services: RuntimeServices,
    nursery: trio.Nursery,
    runs: str,
) -> Runtime:
    root = session.project.project_root
    workspaces = WorkspaceManager(
        root, ledger.record, backups=BackupRepository(root, session_id=ledger.session_id)
    )
    registry = engine = None
    lock = trio.Lock()
    if config.runner is not None:
        runner, warm_up = config.runner(session)
    else:
        registry, engine = _tools(config, session, services)
        if config.tool_sources is not None:
            await config.tool_sources(nursery, registry, session)
        runner, warm_up = _workers(config, session, ledger, services, registry, runs, lock)
    if warm_up is not None:
        warm_up()  # a thread: it runs while this one waits on the disk (IMPL-START-2)
    reap: Reaper | None = None
    if config.runner is None:
        # orphans of a killed runtime, found by their durable run records (and markers)
        await reap_orphans(runs, remote=_sweep_remote)
        reap = _reaper(runs)
    recovery = await recover_session(
        ledger,
        workspaces=workspaces,
        reap=reap,
        referential_check=getattr(session.store, "referential_check", None),
        live_runtimes=live_owners(runs),
    )
    # the project's knowledge stores converge with this log (outbox, SDD §18.4)
    await recover_knowledge(ledger, root)
    if config.branch is not None:
        await workspaces.use_branch(config.branch)
    monitor = _monitor(session)
    scheduler = Scheduler(
        ledger,
        runner,
        project_root=root,
        workspaces=workspaces,
        planner=WavePlanner(isolation=config.isolation, git_repo=await workspaces.is_git_repo()),
        options=SchedulerOptions(
            max_workers=config.max_workers or default_max_workers(),
            review="wave" if config.review else "none",
            recover=False,  # done above, once
            headless=not config.interactive,
        ),
        reap=reap,
        monitor=monitor,
        retry=RetryPlanner(escalation_models=services.escalation),
        architecture_gate=(
            config.architecture_gate(session, services, registry)
            if config.architecture_gate is not None
            else None
        ),
    )
    if registry is not None and isinstance(registry.prompts, OffTheClock):
        registry.prompts.scheduler = scheduler  # a prompt's wait: off its task's clock
    return Runtime(
        session=session,
        ledger=ledger,
        scheduler=scheduler,
        workspaces=workspaces,
        monitor=monitor,
        runner=runner,
        services=services,
        recovery=recovery,
        nursery=nursery,
        runs_dir=runs,
        real_workers=config.runner is None,
        registry=registry,
        engine=engine,
        compaction_lock=lock,
    )


def _tools(config: RuntimeConfig, session: OpenSession, services: RuntimeServices) -> Any:
    """The PermissionEngine and the ToolRegistry under it, with every tool registered."""
    from air.security.engine import PermissionEngine
    from air.tools import ToolRegistry, register_builtin_tools

    engine = PermissionEngine(
        policy=services.policy,
        redactor=services.redactor,
        sink=session.ingestor.ingest,
        headless_allow_ask=config.allow_ask,
    )
    workspace = None
    if config.remote is not None:  # a remote task's calls run on its host (IMPL-REMOTE-5)
        from air.remote.workspace import RoutingWorkspaceExecutor

        workspace = RoutingWorkspaceExecutor()
    registry = ToolRegistry(
        engine=engine,
        recorder=session.ingestor,
        artifacts=session.artifacts,
        redactor=services.redactor,
        prompts=_prompts(config),
        workspace=workspace,
    )
    sandbox = register_builtin_tools(registry)
    if config.extend_tools is not None:
        config.extend_tools(registry, session, sandbox)
    return registry, engine


def _prompts(config: RuntimeConfig) -> PermissionPrompt | None:
    """The person's prompt, its wait off the asking task's clock (headless: nobody waits)."""
    if config.interactive and config.prompts is not None:
        return OffTheClock(config.prompts)
    return config.prompts


def _check_tools_fit(services: RuntimeServices, specs: list[dict[str, Any]]) -> None:
    """Refuse, before any task runs, a session whose workers would offer the session's model,
    or a model of its escalation ladder, more tools than its API takes in one request, or tool
    definitions that alone fill the room its requests have for them (MCP servers' tools add
    up): every request of theirs would be refused mid-task, or leave no room (IMPL-LLM-8).

    Raises:
        AirException(config_error): ``too_many_tools`` or ``tools_too_large``.
    """
    if services.tool_room is None:
        return
    from air.context.tokens import estimate_tokens
    from air.context.worker_pack import context_budget
    from air.llm.manager import too_many_tools, tools_too_large

    tokens = estimate_tokens(specs)
    for ref in dict.fromkeys((services.model, *services.escalation)):
        model = services.tool_room(ref)
        if model is None:
            continue
        if model.max_tools is not None and len(specs) > model.max_tools:
            raise too_many_tools(ref, len(specs), model.max_tools)
        # a worker's first context takes its budget (IMPL-CTX-6): the tools get the rest
        room = context_budget(model.context_window, model.max_output_tokens)
        if tokens > room:
            raise tools_too_large(ref, tokens, room)


def _workers(
    config: RuntimeConfig,
    session: OpenSession,
    ledger: SessionLedger,
    services: RuntimeServices,
    registry: Any,
    runs: str,
    lock: trio.Lock,
) -> tuple[TaskRunner, Callable[[], None] | None]:
    """The WorkerManager over the registry and the provider, and the provider's warm-up."""
    from air.supervision.slots import SlotPool
    from air.supervision.worker_manager import WorkerManager

    specs = [
        {"name": d.name, "description": d.description, "input_schema": d.input_schema}
        for d in registry.list()
    ]
    _check_tools_fit(services, specs)
    runner = WorkerManager(
        tools=registry.call,
        tool_streams=registry.call_streaming,
        provider=services.provider,
        events=session.ingestor,
        artifacts=session.artifacts,
        model=services.model,
        tool_specs=specs,
        context=worker_context(session, ledger, services.provider, services.model, lock),
        state_dir=runs,
        redactor=services.redactor,
        spare=config.spare if config.remote is None else None,
        slots=SlotPool.for_user(),  # every air process of this user shares it (IMPL-SLOT-1)
    )
    if config.remote is not None:
        runner = _remote(runner, config.remote, registry)
    warm_up = services.warm_up
    if warm_up is None:
        return runner, None
    provider_id = services.model.partition("/")[0]
    return runner, lambda: warm_up(provider_id)


def _remote(manager: Any, plan: Any, registry: Any) -> Any:
    """The runner whose tasks with a host run there (``air.nursery.remote_tasks``)."""
    from air.ipc.launcher import LocalLauncher
    from air.nursery.remote_tasks import RemoteTaskRunner, RoutingLauncher

    launcher = RoutingLauncher(LocalLauncher(None))
    manager.launcher = launcher
    return RemoteTaskRunner(manager, plan, launcher, registry.workspace)


async def _sweep_remote(records: list[Any]) -> None:
    """The runs a dead air process left on other hosts (``air.remote.recovery``)."""
    from air.remote.recovery import sweep_records

    await sweep_records(records)


def _reaper(runs: str) -> Reaper:
    """Recovery's reaper: the orphan reaping over the durable run records."""

    async def reap(agent: StoredAgent) -> bool:
        results = await reap_orphans(runs, remote=_sweep_remote)
        return any(r.agent_id == agent.agent_id for r in results)

    return reap


def _monitor(session: OpenSession) -> AgentMonitor:
    """The AgentMonitor: liveness and the hard-deadline safety net.

    The ingestor already writes the heartbeat columns (IMPL-EVT-4), so the monitor's flush does
    nothing; it learns each worker's identity from ``agent.started`` (to tell a silent worker
    from a gone one) and that it is alive from ``agent.heartbeat``, both read off the bus.
    """
    monitor = AgentMonitor(flush=lambda *_: None)

    def on_event(event: Any) -> None:
        payload = event.payload
        agent = monitor.agents.get(str(payload.get("agent_id")))
        if agent is None:
            return
        if event.type == "agent.heartbeat":
            monitor.record_heartbeat(agent.agent_id, payload)
            return
        identity = ProcessIdentity.from_record(payload)
        if identity is not None and identity.pid > 0:
            agent.pid = identity.pid
            agent.pid_start_time = identity.start_ticks

    session.bus.subscribe(EventFilter(types=["agent.started", "agent.heartbeat"]), on_event)
    return monitor
