"""``air`` / ``air run [PROJECT]`` / ``air --session SID``: the console on the session's runtime.

Owns ``run_console`` (the command body), ``ConsolePrompt`` (the contracts' ``PermissionPrompt``
the console implements: a question waits in ``PendingPrompts`` until the person answers it on
screen) and the composition of one console session (SDD §13, §17, ARCHITECTURE §2): the
runtime from ``RuntimeFactory`` + ``open_runtime()``; the ProjectionStore hydrated from the
session's log and fed by a bounded ``rehydrate`` bus channel (a lagging console re-reads the
store, IMPL-AGENT-6); the MainAgent started in the root nursery with its conversation loaded
from ``messages``/``message_drafts`` and subscribed to the task events; the
``MainAgentChannel``; and ``TuiApp`` (or ``PlainConsole`` with ``--plain``) run in the root
nursery too. ``--replay`` plays the session's log back read-only (no runtime is opened, nothing
is claimed or written). In a terminal the first frame is drawn before any of that, before
pydantic, Trio and urwid are imported (``FirstFrame``, IMPL-FRAME-5); the TuiApp takes its
screen over (``TuiApp.opening``, IMPL-FRAME-1) and is attached to the projection and the
channel once the runtime is open; an answer interrupted mid-stream keeps its text as an
artifact (``_Drafts``, IMPL-FRAME-3).

Shutdown (IMPL-CONSOLE-2): quitting, SIGHUP/SIGTERM or the end of the plain console's input
cancels the running work cooperatively (tasks end cancelled/interrupted, resumable), waits a
bounded time for it to end, then SIGKILLs every worker this process started; a second Ctrl-C
kills the workers at once and ends the console (IMPL-FRAME-2); a kill -9 of air itself leaves
run records that the next start reaps (``open_runtime``'s recovery).

Trust: before anything reads the project's configuration, an untrusted project that widens
what air does is shown and asked about once on the terminal (``_trust_or_ask``, IMPL-TRUST-1).

Offline: ``--cassette DIR`` replays the Main Agent's turns from ``DIR/main.jsonl`` and each
task's from ``DIR/<task id>.jsonl`` (``examples/calc/cassettes`` ships such a session).
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import sys
from functools import partial
from typing import TYPE_CHECKING, Any

from air.cli.console_start import (
    MAIN_CASSETTE,
    checked_options,
    first_run,
    opening_text,
    plain_reason,
    plain_wanted,
    session_to_reopen,
)
from air.cli.options import HeadlessOptions, bad, reported_exit

if TYPE_CHECKING:
    from air.agents import PendingPrompts
    from air.contracts.permission_records import PermissionPromptRequest, PermissionPromptResponse
    from air.ui_urwid.first_frame import FirstFrame

__all__ = ["MAIN_CASSETTE", "ConsolePrompt", "run_console"]

log = logging.getLogger(__name__)

QUIT_GRACE_S = 10.0
"""How long quitting waits for cancelled work to end before it kills the workers."""
KILL_GRACE_S = 2.0
"""After a second Ctrl-C killed the workers: how long the console waits for their tasks'
ends to be recorded before it exits (what is left, the next start's recovery records)."""


class ConsolePrompt:
    """A ``PermissionPrompt`` answered by the person in the console.

    The ToolRegistry records ``permission.prompt.requested`` (the projection shows it); the
    answer arrives as a ``permission_response`` UiCommand through ``MainAgentChannel`` into
    ``PendingPrompts``, which this awaits."""

    def __init__(self, pending: PendingPrompts) -> None:
        self.pending = pending

    async def ask(self, request: PermissionPromptRequest) -> PermissionPromptResponse:
        from air.contracts.permission_records import PermissionPromptResponse

        answer = await self.pending.wait(request.prompt_id)
        return PermissionPromptResponse(approved=answer.approved, scope=answer.scope)


def run_console(args: dict[str, Any], runner_factory: Any = None) -> int:
    """``air``, ``air run [PROJECT]``, ``air --session SID [--replay]``: the exit code.
    ``runner_factory`` replaces the real workers (tests only, see ``air.cli.main``)."""
    from air.ipc.startup import hold_gc, release_gc, skip_ldconfig_probe, skip_pydantic_plugins

    # `air run --headless`'s start-up shortcuts (IMPL-FRAME-4, IMPL-START-2) before any heavy
    # import: no plugin lookup, no `ldconfig -p`, no cyclic GC until ready (_session's release)
    hold_gc()
    skip_pydantic_plugins()
    skip_ldconfig_probe()
    if args.get("PROJECT") and not args.get("--project"):
        args = {**args, "--project": args["PROJECT"]}
    frame: FirstFrame | None = None
    note: str | None = None
    try:
        try:
            options = checked_options(args, runner_factory)
            if args.get("--replay"):
                from air.cli.console_replay import replay

                release_gc()  # a replay reads the whole log: collection as usual
                return replay(options)
            create = bool(args.get("PROJECT"))
            note = None if create or options.session_id is not None else first_run(options)
            _trust_or_ask(options, create=create or note is not None)
            from air.cli.reopen import offer_sessions

            if offer_sessions(args, options, sys.stdin, sys.stdout):
                return 0  # CliExit.OK: the person quit at the list of sessions
            plain = plain_wanted(bool(args.get("--plain")))
            if not plain:
                # everything asked on the terminal is answered: the first frame, before
                # pydantic, Trio and urwid load (IMPL-FRAME-5)
                from air.ui_urwid.first_frame import FirstFrame

                frame = FirstFrame.draw(opening_text(options))
            from air.ipc.suspend import run_stoppable  # Ctrl-Z: IMPL-STOP-1

            made = create or note is not None
            run_stoppable(_console, options, plain, made, note, frame, foreground=True)
        finally:
            if frame is not None:
                frame.close()  # the console never took it over: the terminal as it was
    except Exception as exc:
        from air.contracts.error import AirException  # the checks above load no pydantic

        if not isinstance(exc, AirException):
            raise
        code = reported_exit(exc, sys.stderr)
        if note is not None:
            _say_if_not_made(options.project)
        return code
    return 0  # CliExit.OK


def _say_if_not_made(root: str) -> None:
    """After ``first_run`` said it would make ``root`` a project and the start failed first
    (no provider, refused trust): say that nothing was made, so the note is not left standing."""
    from air.session.project import ProjectStore

    if ProjectStore().locate(root) is None:
        print(f"air: {root} is left as it was: no air project was made", file=sys.stderr)


def _trust_or_ask(options: HeadlessOptions, *, create: bool) -> None:
    """Before anything reads the project's configuration (and before the first frame): an
    untrusted project that widens what air does is shown and asked about once, on the
    terminal (IMPL-TRUST-1); yes records the trust, no (or no terminal) refuses. So is
    another's ``.air/local`` (IMPL-TRUST-3): yes adopts it; no refuses it.

    Raises:
        AirException(untrusted_config): the person said no, or there is no terminal to ask on.
    """
    from air.session.trust import trust_scan, trusted, untrusted_error

    if options.session_id is None:
        root = _project_root(options, create=create)
    else:
        root = str(session_to_reopen(options)[0].project_root)
    from air.cli.trust import ask_adopt, ask_trust
    from air.session.local_owner import refuse_foreign_state

    if sys.stdin.isatty():  # another's .air/local: adopted, or refused before it is read
        ask_adopt(root, stdin=sys.stdin, out=sys.stdout)
    refuse_foreign_state(root)  # not even its sessions listed (offer_sessions)
    config = trust_scan(root)
    if trusted(config):
        return
    if not (sys.stdin.isatty() and ask_trust(config, stdin=sys.stdin, out=sys.stdout)):
        raise untrusted_error(config)


def _project_root(options: HeadlessOptions, *, create: bool) -> str:
    """The project's root: found by walking up (``air``), or PROJECT (``air run``; the
    factory makes it an air project once the configuration proved good)."""
    if create:
        return options.project  # a directory: run_console checked it
    from air.session.project import ProjectStore

    project = ProjectStore().locate(options.project)
    if project is None:
        raise bad(
            "not_found",
            f"no air project at {options.project} or above it",
            "Run `air init` here, `air run PROJECT` for another directory, or pass --project.",
            field="--project",
        )
    return str(project.project_root)


async def _console(
    options: HeadlessOptions,
    plain: bool,
    create: bool,
    note: str | None = None,
    frame: FirstFrame | None = None,
) -> None:
    """Check what is cheap to check, draw the first frame (the HUD says the session is
    opening), then open the runtime and attach the console to it (IMPL-FRAME-1). Without a
    terminal (or with ``--plain``) the runtime opens first, so a bad configuration is said
    before anything is drawn."""
    import trio

    from air.contracts.error import AirException

    if options.session_id is None:
        options.project = _project_root(options, create=create)
    else:
        session_to_reopen(options)
    if plain:
        await _session(options, plain, None)
        return
    from air.ui_urwid.app import TuiApp

    app = TuiApp.opening(opening_text(options), note=note, takeover=frame)
    refused: AirException | None = None
    async with trio.open_nursery() as nursery:
        await nursery.start(app.run)  # the first frame is on the screen
        try:
            await _session(options, plain, app)
        except AirException as exc:
            refused = exc  # carried past the screen's nursery as itself, not in a group
        finally:
            app.stop()
    if refused is not None:
        raise refused


async def _session(options: HeadlessOptions, plain: bool, app: Any) -> None:
    """Open the runtime, run the console on it (``app``: the TuiApp already on the screen,
    None: start one, or the plain console), shut the session's work down."""
    import trio

    from air.agents import MainAgentChannel, PendingPrompts
    from air.cli.checks import refusals, uncommitted_warning
    from air.cli.doctor import setup_logging
    from air.cli.factory import RuntimeFactory
    from air.ipc.startup import release_gc
    from air.nursery.runtime import open_runtime

    setup_logging()  # air.log, air.developer.log (its redactor's imports: after the frame)
    problems = refusals(options)  # no git or no sandbox: no console (never unsandboxed)
    if problems:
        raise problems[0]
    pending = PendingPrompts()
    config = RuntimeFactory(options).create(
        resume=options.session_id is not None, prompts=ConsolePrompt(pending), mode="interactive"
    )
    async with open_runtime(config) as runtime:
        store = _projection(runtime)
        await _settle_stale_state(runtime, store)
        agent = await _main_agent(runtime, options)
        release_gc()  # the console is ready: what start-up built is frozen, collection resumes
        killed = False

        async def on_quit(force: bool) -> None:
            return None  # the console ends by itself; its shutdown follows (_shut_down)

        def on_force_cancel() -> None:
            nonlocal killed
            killed = True  # a second Ctrl-C: cancel, kill the workers now, end the console
            runtime.cancel("killed by the person (a second Ctrl-C)")
            runtime.nursery.start_soon(runtime.kill_workers)

        channel = MainAgentChannel(
            agent,
            runtime.scheduler,
            pending,
            on_force_cancel=on_force_cancel,
            on_quit=on_quit,
        )
        from air.cli.reopen import reopen_command

        reopen = reopen_command(options, runtime.session_id, runtime.project_root)

        async def on_plan(path: str) -> None:
            from air.cli.plan import console_plan  # IMPL-PLAN-1

            await agent.turns.say(await console_plan(options, path, runtime))

        reporting = _Reporting(channel, on_plan)
        warning = await uncommitted_warning(runtime.project_root, options.isolation)
        try:
            await _front(runtime, store, reporting, plain, app, reopen, _hud_model(agent), warning)
        finally:
            with trio.CancelScope(shield=True):
                await _shut_down(runtime, store, agent, killed=killed)
            if killed:
                print(
                    "air: a second Ctrl-C killed the session's workers; their tasks are "
                    f"interrupted (see them with `{reopen}`).",
                    file=sys.stderr,
                    flush=True,
                )


class _Reporting:
    """The UiCommandChannel the console sends to: a refused command (an ``AirException``,
    e.g. a permission answer to a prompt that just closed) is told to the person and logged;
    it never ends the console."""

    def __init__(self, inner: Any, plan: Any = None) -> None:
        self.inner = inner
        self.say: Any = None
        self.plan = plan
        """``/plan BATCH`` (``async (path) -> None``): the console's own, not the agent's."""

    async def send(self, command: Any) -> None:
        from air.contracts.error import AirException

        try:
            if command.kind == "plan" and self.plan is not None:
                await self.plan(command.text or "")
                return
            await self.inner.send(command)
        except AirException as exc:
            log.warning("console command %s refused: %s", command.kind, exc.error.message)
            if self.say is not None:
                self.say(f"refused: {exc.error.message}")


def _projection(runtime: Any) -> Any:
    """The ProjectionStore: subscribed first, then opened from the session's stored view and
    the events after it (events seen twice are skipped by id, IMPL-READ-2), fed in the root
    nursery; a lagging console re-reads the store."""
    from air.projection.view_snapshot import open_projection

    def on_lag(sub: Any) -> None:
        def rehydrate() -> None:
            store.hydrate(runtime.store, runtime.session_id)
            sub.resume()

        runtime.nursery.start_soon(_call, rehydrate)

    _sub, receive = runtime.bus.subscribe_channel(None, lag="rehydrate", on_lag=on_lag)
    store = open_projection(
        runtime.store, runtime.session_id, artifact_root=runtime.session.artifacts.root
    )
    # what the reopen built stays for the session: later collections do not walk it again
    # (a full collection over a 10k-event projection was a 0.5 s frame; bench/sessions.py)
    gc.freeze()
    runtime.nursery.start_soon(store.feed, receive)
    return store


async def _call(fn: Any) -> None:
    fn()


async def _settle_stale_state(runtime: Any, store: Any) -> None:
    """A reopened session whose last air process died mid-turn or mid-run (kill -9) has a
    last recorded Main Agent state that no agent is in: the new MainAgent starts IDLE, and
    that is recorded (trigger ``reopened``, IMPL-CONSOLE-2) so the log and the screen agree."""
    from air.contracts.event import EventSource, new_event

    stale = store.snapshot().main_agent.state
    if stale in (None, "IDLE"):
        return
    payload = {
        "from_state": stale,
        "to_state": "IDLE",
        "trigger": "reopened",
        "reason": f"the air process that ran this session ended in {stale}; a new Main "
        "Agent starts idle",
    }
    await runtime.session.ingestor.ingest(
        new_event(
            "main_agent.state.changed",
            payload,
            session_id=runtime.session_id,
            source=EventSource(kind="main", id="main"),
            project_id=runtime.session.project.project_id,
        )
    )


async def _main_agent(runtime: Any, options: HeadlessOptions) -> Any:
    """The MainAgent with the stored conversation, started in the root nursery."""
    from air.agents import MainAgent, load_conversation
    from air.contracts.event import EventFilter
    from air.nursery.task_agents import TaskAgents
    from air.nursery.worker_context import document_refusal

    session = runtime.session
    models = runtime.services.provider
    if options.cassette:
        from air.llm.manager import ProviderManager

        models = ProviderManager.for_cassette(os.path.join(options.cassette, MAIN_CASSETTE))
    history = load_conversation(
        session.store.messages, session.store.message_drafts, runtime.session_id
    )
    agent = MainAgent(
        session_id=runtime.session_id,
        project_id=session.project.project_id,
        project_root=runtime.project_root,
        events=session.ingestor,
        models=models,
        scheduler=runtime.scheduler,
        tools=runtime.registry,
        history=history,
        compactor=runtime.compactor(models),
        model=_session_model(runtime, models),
        steering=runtime.runner if hasattr(runtime.runner, "steer") else None,
        agent_files=TaskAgents(runtime.project_root),  # IMPL-AGENTFILE-1
        document_refusal=document_refusal(runtime.project_root),
    )
    agent.turns.drafts = _Drafts(session)
    await runtime.nursery.start(agent.run)
    runtime.bus.subscribe(EventFilter(type_prefix="task."), agent.observe)
    return agent


def _session_model(runtime: Any, models: Any) -> Any:
    """The Main Agent's model: the session's (recorded at its start, ``--provider`` included;
    issue 24 item 4), not a separate pick."""
    from air.contracts.provider import ModelRequirement

    return models.select_model(ModelRequirement(role="main", model=runtime.services.model))


class _Drafts:
    """The Main Agent's ``DraftSink``: the streamed text of an answer that was interrupted or
    failed becomes an artifact of the session, named by its ``assistant.message.failed``; a
    reopened session shows it (IMPL-FRAME-3)."""

    def __init__(self, session: Any) -> None:
        self.session = session

    def keep(self, message_id: str, text: str) -> str:
        from air.contracts.artifact import ArtifactType
        from air.contracts.artifact_records import ArtifactContext, ArtifactCreateInput

        ref = self.session.artifacts.create(
            ArtifactCreateInput(
                type=ArtifactType.OTHER,
                slug=f"draft-{message_id}",
                extension=".md",
                content=text.encode("utf-8"),
                mime_type="text/markdown",
            ),
            ArtifactContext(session_id=self.session.session_id, agent_id="main"),
        )
        return str(ref.artifact_id)


def _hud_model(agent: Any) -> Any:
    """The HUD's Main Agent part: its context use (``air.agents.model_status``)."""
    from air.agents.model_status import model_status

    return lambda: model_status(agent.turns)


async def _front(
    runtime: Any,
    store: Any,
    channel: _Reporting,
    plain: bool,
    app: Any,
    reopen: str,
    hud: Any = None,
    warning: str | None = None,
) -> None:
    """Run the TuiApp (``app``: attach the one on the screen) or the plain console until the
    person quits or a signal ends it; ``warning`` is its first notice."""
    import trio

    from air.cli.background import watch_background
    from air.projection import InProcessProjectionClient
    from air.ui_urwid.app import TuiApp
    from air.ui_urwid.plain import PlainConsole

    client = InProcessProjectionClient(store)
    local = runtime.session.project.local_root  # its background runs (IMPL-DETACH-1)
    async with trio.open_nursery() as nursery:
        if plain:
            if (why := plain_reason()) is not None:  # said once the session is open
                print(f"air: {why}: the plain console (--plain)", file=sys.stderr, flush=True)
            console = PlainConsole(client, channel, lambda s: print(s, flush=True))
            if warning is not None:
                print(f"• {warning}", flush=True)
            stdin = trio.lowlevel.FdStream(os.dup(sys.stdin.fileno()))
            nursery.start_soon(_watch_signals, runtime, nursery.cancel_scope.cancel)
            nursery.start_soon(watch_background, local, lambda s: print(f"• {s}", flush=True))
            await console.run(stdin)
        else:
            if app is None:
                app = TuiApp(client, channel)
                nursery.start_soon(app.run)
            else:
                app.attach(client, channel)
            app.hud_extra = hud
            channel.say = app.layout.say
            nursery.start_soon(_watch_signals, runtime, app.stop)
            nursery.start_soon(watch_background, local, partial(_notice, app))
            if warning is not None:
                _notice(app, warning)
            await app.closed.wait()
            _leave_tail(store)
            report = frame_report(app)
            log.info("console closed: %s", report)
            print(f"air: console closed: {report}", file=sys.stderr, flush=True)
        t = store.snapshot().totals
        print(
            f"air: session {runtime.session_id}: {t.completed}/{t.tasks} tasks done, "
            f"{t.running} running. Reopen it with `{reopen}`.",
            file=sys.stderr,
            flush=True,
        )
        nursery.cancel_scope.cancel(reason="the console ended")


def _notice(app: Any, text: str) -> None:
    """A notice (a background run's, the start's warning) joins the next frame's talk."""
    app.layout.entries.append(("notice", text))
    app.pump.mark_dirty()


def _leave_tail(store: Any) -> None:
    """The screen is gone: print the conversation's last messages on the terminal, so the
    answer stays in its scrollback."""
    import shutil

    from air.cli.reopen import transcript_tail

    width = max(40, shutil.get_terminal_size((100, 24)).columns - 6)
    tail = transcript_tail(list(store.snapshot().messages), width=width)
    if tail:
        print(tail, flush=True)


def frame_report(app: Any) -> str:
    """One line for air.log: frames drawn, redraw interval p50/p99 while the screen changed
    (intervals under 1 s: an idle console draws nothing, and its gaps are not latency),
    render p99, peak RSS."""
    import itertools
    import resource

    def pct(values: list[float], q: float) -> float:
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000 if ordered else 0.0

    gaps = [b - a for a, b in itertools.pairwise(app.frame_times) if b - a < 1.0]
    render = list(app.render_times)
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return (
        f"frames={app.frames} redraw_p50_ms={pct(gaps, 0.5):.1f} "
        f"redraw_p99_ms={pct(gaps, 0.99):.1f} render_p99_ms={pct(render, 0.99):.1f} "
        f"peak_rss_kib={peak_kib}"
    )


async def _watch_signals(runtime: Any, stop: Any) -> None:
    """SIGHUP (the terminal closed), SIGTERM, or SIGINT (the plain console): end the console;
    the shutdown cancels the work and kills what is left."""
    import trio

    with trio.open_signal_receiver(signal.SIGHUP, signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            log.warning("console: %s: ending the session's work", signal.Signals(signum).name)
            stop()
            return


_SETTLED = frozenset({"IDLE", "DIRECT_MODE", "CONFIRMING"})
"""Main Agent states with no turn or run in flight."""


def _busy(store: Any) -> bool:
    snap = store.snapshot()
    return bool(snap.totals.running) or snap.main_agent.state not in _SETTLED


async def _shut_down(runtime: Any, store: Any, agent: Any, *, killed: bool = False) -> None:
    """Cancel running work and the Main Agent's turn cooperatively, wait (bounded) until the
    tasks ended and the agent recorded its way back to a settled state, kill what is left.
    ``killed`` (a second Ctrl-C): the workers are killed first, the wait is short."""
    import trio

    if killed:
        await runtime.kill_workers()
    if _busy(store):
        idle = trio.Event()

        def check(_revision: int) -> None:
            if not _busy(store):
                idle.set()

        subscription = store.subscribe(check)
        runtime.cancel("the console closed")
        agent.interrupt()
        with trio.move_on_after(KILL_GRACE_S if killed else QUIT_GRACE_S):
            await idle.wait()
        subscription.close()
    await runtime.kill_workers()
    await runtime.settle()
