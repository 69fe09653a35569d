"""RuntimeFactory (SDD §17): parsed options + configuration files → the inputs of open_runtime().

Owns: ``RuntimeFactory``. For a new run it reads and checks the configuration first (the
permission policy, the provider; nothing exists yet when one is bad), then opens the project
(initialised on first use). For ``air resume`` it finds the project and session first (creating
nothing) and reads the configuration only once the session proved to have something to resume
(``RuntimeConfig.services`` is called by ``open_runtime`` after ``on_open``). The headless
clients answer every permission question with ``FailClosedPrompt``; the console passes its own
prompt (``air.cli.console.ConsolePrompt``). A project that declares
``.air/shared/architecture.yaml`` has every worker result held at the ArchitectureDesigner's
gate (``_architecture_gate``; a confirmation is asked through that prompt, so headless it fails
closed; IMPL-COMPACT-3); without the file there is no gate and no extra model call. Before any
project file is read, the project's widening configuration must be trusted by the user
(``air.session.trust.require_trust``; IMPL-TRUST-1): untrusted, nothing is created.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from air.cli.checks import open_project, session_to_resume
from air.cli.options import HeadlessOptions
from air.cli.prepare import prepare

__all__ = ["RuntimeFactory"]


def _opened(session: Any, ledger: Any, then: Callable[[Any, Any], None] | None) -> None:
    """The session is open: its console view and its report's fold are stored with each fold
    snapshot (a reopen or a report after a long run folds a short tail, IMPL-READ-7,
    IMPL-READ-8), then ``then`` (the command's own look)."""
    keeper: list[Callable[[], None]] = []

    def store_view() -> None:
        if not keeper:  # imported at the first snapshot, never on the way to the first request
            from air.cli.report_snapshot import ReportKeeper
            from air.projection.view_snapshot import ViewKeeper

            keeper.append(ViewKeeper(session.events, ledger.session_id, session.artifacts.root))
            keeper.append(ReportKeeper(session.events.db, ledger.session_id))
        for keep in keeper:
            keep()

    ledger.on_snapshot = store_view
    if then is not None:
        then(session, ledger)


class RuntimeFactory:
    """Builds the ``RuntimeConfig`` of ``air run --headless`` or ``air resume``."""

    def __init__(self, options: HeadlessOptions) -> None:
        self.options = options

    def create(
        self,
        *,
        resume: bool,
        on_open: Callable[[Any, Any], None] | None = None,
        subscribers: Sequence[Callable[[Any], None]] = (),
        prompts: Any = None,
        mode: str = "headless",
    ) -> Any:
        """The ``RuntimeConfig``; ``prompts`` answers permission questions (default: fail
        closed), ``mode`` is the session's (``interactive`` for the console, whose new session
        is created at once: its first events are the person's messages).

        Raises:
            AirException: a bad configuration (new run), or no project / no such session
                (resume), before anything is created.
        """
        from air.cli.hosts_plan import resumed_plan
        from air.cli.resumed import keep_run_options, recorded_run
        from air.contracts.project import OpenSessionOptions
        from air.contracts.prompt import FailClosedPrompt
        from air.nursery.runtime import RuntimeConfig, RuntimeServices
        from air.session.project import ProjectStore
        from air.session.trust import require_trust

        options = self.options
        services: Callable[[], RuntimeServices]
        servers: Any
        if resume:
            # the session is checked first (opening it creates nothing), then the config
            project, session_id = session_to_resume(ProjectStore(), options)
            require_trust(project.project_root)  # before any project file is read
            # the hosts its tasks ran on, the run's --host too (IMPL-REMOTE-6), and what the
            # run's own options were (IMPL-RESUME-2)
            recorded = recorded_run(project, session_id)
            options.remote = resumed_plan(project, recorded)
            keep_run_options(options, recorded.created)
            services = lambda: prepare(options, project.project_root)  # noqa: E731
            servers = None  # read once the session proved to have something to resume
        else:
            prepared, servers = self.check()
            project = open_project(ProjectStore(), options.project)
            session_id = None
            services = lambda: prepared  # noqa: E731
        provider_id, model_id = _session_model(None if resume else prepared, options.provider)
        asks = prompts if prompts is not None else FailClosedPrompt()
        return RuntimeConfig(
            project=project,
            session=OpenSessionOptions(
                session_id=session_id,
                mode=mode,
                model_provider_id=provider_id,
                model_id=model_id,
                host=None if resume else options.host,
                isolation=options.isolation,
                permission_mode=options.permission_mode,
                branch=options.branch,
                review=options.review,
            ),
            new_session=not resume,
            services=services,
            isolation=options.isolation,  # type: ignore[arg-type]
            branch=options.branch,
            max_workers=options.max_workers,
            review=options.review,
            allow_ask=options.permission_mode == "allow-ask",
            prompts=asks,
            spare=options.spare if options.remote is None else None,
            remote=options.remote,
            runner=self._injected_runner(),
            extend_tools=None if options.runner_factory else _load_capabilities,
            tool_sources=None if options.runner_factory else _mcp_servers(servers),
            architecture_gate=lambda session, services, registry: _architecture_gate(
                session, services, registry, asks, headless=mode != "interactive"
            ),
            on_open=lambda session, ledger: _opened(session, ledger, on_open),
            subscribers=subscribers,
            interactive=mode == "interactive",
        )

    def check(self, *, warm: bool = True) -> tuple[Any, Any]:
        """What a new run checks and reads before anything exists, creating nothing (``air run
        --plan`` stops here): the project's trust, the policy, the provider and model, the
        architecture declaration, mcp.yaml.

        Returns:
            The ``RuntimeServices`` and the declared MCP servers.

        Raises:
            AirException: the first refusal, as a real run gives it.
        """
        from air.session.trust import require_trust

        root = self.options.project
        require_trust(root)  # before any project file is read (IMPL-TRUST-1)
        prepared = prepare(self.options, root, warm=warm)
        _designer_models(root, prepared.provider)  # before anything exists
        servers = _mcp_config(root)  # a bad mcp.yaml: refused before anything
        return prepared, servers

    def _injected_runner(self) -> Any:
        factory = self.options.runner_factory
        if factory is None:
            return None
        options = self.options
        return lambda session: factory(options, session, session.project.project_root)


def _session_model(prepared: Any, provider: str | None) -> tuple[str | None, str | None]:
    """The provider and model a new session records (issue 24 item 4): the configured model
    ``prepare`` picked (``--provider`` included); a resumed session keeps its recorded ones."""
    model = getattr(prepared, "model", None) if prepared is not None else None
    if not model or prepared.provider is None:  # injected fake workers: no model is called
        return provider, None
    provider_id, _, model_id = str(model).partition("/")
    return provider_id, model_id or None


def _mcp_config(root: str) -> Any:
    """The MCP servers of ``~/.air/mcp.yaml`` and the (trusted) project's ``mcp.yaml``."""
    from air.mcp.files import mcp_files

    if not any(os.path.lexists(path) for path in mcp_files(root)):
        return []  # neither file: no MCP code before the first request (IMPL-BOOT-16)
    from air.mcp.config import load_servers

    return load_servers(root)


def _mcp_servers(servers: Any) -> Any:
    """The runtime's tool source that starts the MCP servers (``servers``: read already; None:
    read them now, for ``air resume``) in its root nursery (IMPL-MCP-1)."""

    async def start(nursery: Any, registry: Any, session: Any) -> None:
        root = session.project.project_root
        declared = servers if servers is not None else _mcp_config(root)
        if not declared:
            return
        from air.contracts.error import AirException
        from air.mcp.connection import redacted
        from air.mcp.service import start_servers

        try:
            await start_servers(
                nursery,
                registry,
                declared,
                project_root=root,
                session_id=session.session_id,
                track=_mcp_run_records(root, session.session_id),
                register=registry.redactor.register,  # the run's: a value never reaches a record
            )
        except AirException as exc:  # a server's words, as every reader gets them
            raise redacted(exc, registry.redactor) from None

    return start


def _mcp_run_records(root: str, session_id: str) -> Any:
    """A run record per MCP server for as long as it lives (the marker, this process as its
    owner): the next air's start reaps the tree of a SIGKILLed air's server by it, as it does a
    worker's (IMPL-MCP-1)."""
    from contextlib import contextmanager

    from air.supervision.runs import RunRecordStore, current_owner, runs_dir

    @contextmanager
    def track(marker: str) -> Iterator[None]:
        runs = runs_dir(root)
        store = RunRecordStore(runs)
        owner = current_owner(runs)
        store.write(
            {"agent_id": marker, "task_id": None, "session_id": session_id, "pid": 0,
             "marker": marker, "state": "running", "kind": "mcp_server", "owner": owner}
        )  # fmt: skip
        try:
            yield
        finally:
            store.finish(marker, "completed")

    return track


def _load_capabilities(registry: Any, session: Any, sandbox: Any) -> None:
    """The project's and the user's capabilities, after the built-in tools (IMPL-CPP-4). Their
    lifecycle events commit in one transaction (all or none; IMPL-BOOT-13)."""
    from air.capabilities import load_capabilities

    with session.db.transaction():
        load_capabilities(
            registry,
            record=session.ingestor.ingest_sync,
            session_id=session.session_id,
            project_root=session.project.project_root,
            sandbox=sandbox,
        )


ARCHITECTURE_FILE = ".air/shared/architecture.yaml"
"""``air.agents.architecture.ARCHITECTURE_FILE``, checked here first: a project without it never
imports the ArchitectureDesigner (``air.agents``, ~10 ms) on its way to its first request
(IMPL-BOOT-5; tests/cli/test_first_request_imports.py checks both names agree)."""

DESIGNER_CASSETTE = "architecture_designer.jsonl"
"""In a ``--cassette DIR`` of per-task cassettes: the architecture review's turns."""


def _designer_models(root: str, provider: Any) -> Any:
    """The model port of the headless architecture review, or None when the project declares
    no architecture (``.air/shared/architecture.yaml``).

    Raises:
        AirException: ``config_error`` for an invalid architecture.yaml, or per-task cassettes
            without the review's cassette (``DESIGNER_CASSETTE``).
    """
    if not os.path.isfile(os.path.join(root, ARCHITECTURE_FILE)):
        return None
    from air.agents.architecture import load_declaration
    from air.contracts.error import AirException, ErrorKind

    load_declaration(root)  # a bad file is refused now, before any task
    models = provider
    inner = getattr(models, "inner", None)
    if not hasattr(models, "select_model") and hasattr(inner, "select_model"):
        return inner  # --record: the review's calls go to the manager, unrecorded
    if hasattr(models, "select_model"):
        return models
    from air.llm.manager import ProviderManager  # per-task cassettes (TaskCassettes)

    path = os.path.join(str(getattr(models, "directory", "")), DESIGNER_CASSETTE)
    if not os.path.isfile(path):
        raise AirException.of(
            kind=ErrorKind.CONFIG_ERROR,
            message=(
                f"the project declares {ARCHITECTURE_FILE}, so every worker result is "
                f"reviewed, but the cassette directory has no {DESIGNER_CASSETTE}"
            ),
            user_action=f"Record the architecture review's turns to {path}.",
        )
    return ProviderManager.for_cassette(path)


def _architecture_gate(
    session: Any, services: Any, registry: Any, prompts: Any, *, headless: bool
) -> Any:
    """The Scheduler's architecture gate, or None when the project declares no architecture.
    A ``requires_user_confirmation`` is asked through ``prompts`` (the console's prompt; headless
    the ``FailClosedPrompt``, so it fails closed and the blocked reason says what to do).

    Raises:
        AirException: as ``_designer_models``.
    """
    root = session.project.project_root
    models = _designer_models(root, services.provider)
    if models is None:
        return None
    from air.agents.architecture import ArchitectureDesigner, PromptConfirm, SchedulerGate
    from air.agents.architecture_record import RecordingGate
    from air.nursery.worker_context import document_refusal

    designer = ArchitectureDesigner(
        events=session.ingestor,
        models=models,
        project_root=root,
        session_id=session.session_id,
        project_id=session.project.project_id,
        tools=registry,
        document_refusal=document_refusal(root),
    )
    # a confirmed change is recorded in the architecture document, and not held again
    return RecordingGate(
        SchedulerGate(designer, PromptConfirm(designer, prompts), headless=headless)
    )
