"""``air run --headless BATCH``, ``air -p PROMPT``, ``air resume``: clients of ``open_runtime()``.

Owns: ``run_headless`` (the command body), ``run_batch_session`` (the Trio part shared with
``air resume``: checks, then one runtime from ``RuntimeFactory``), ``run_word`` and the exit
code (``CliExit``): 0 every task completed, 1 any failed or blocked, 2 bad input (refused
before anything is created), 130 cancelled, 143 by SIGTERM. Progress and the ``--json``
stream are ``reporter.py``'s (IMPL-CLI-4), the reports ``junit.py``'s, the signals
``signals.py``'s.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from air.cli.background import DetachedRun
    from air.cli.options import HeadlessOptions, RunnerFactory

__all__ = ["run_batch_session", "run_headless", "run_word"]


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
    """Before any heavy import: hold the GC, skip pydantic's plugin lookup, start the spare
    worker (None: injected fake workers, a bad command line, a batch that is no regular file)."""
    from air.ipc.startup import hold_gc, skip_ldconfig_probe, skip_pydantic_plugins

    hold_gc()  # released once the run is set up (IMPL-START-2)
    skip_pydantic_plugins()
    skip_ldconfig_probe()
    if fake or not (args.get("BATCH") or args.get("--prompt")):
        return None
    if args.get("BATCH") not in (None, "-") and not os.path.isfile(args["BATCH"]):
        return None  # refused in a moment (missing, not a regular file): no task to spare it for
    from air.cli.options import project_root_for
    from air.ipc.spare import SpareWorker

    return SpareWorker.start(project_root_for(args.get("--project")))


def _run_headless(
    argv_options: dict[str, Any], spare: Any, runner_factory: RunnerFactory | None
) -> int:
    from air.cli.checks import say_uncommitted
    from air.cli.hosts_plan import load_run_batch
    from air.cli.options import bad, parse_options, report_bad_input
    from air.contracts.error import AirException, CliExit
    from air.tools.sandbox_check import SandboxProbe

    sandbox = None
    try:
        options = parse_options(argv_options, runner_factory=runner_factory, spare=spare)
        if not options.batch and options.prompt is None:
            raise bad(
                "validation_error",
                "no batch file given",
                "Run `air run --headless BATCH` with a YAML batch file, or `air -p PROMPT`.",
            )
        sandbox = SandboxProbe()  # checked in run_batch_session; bwrap works meanwhile
        batch = load_run_batch(options)  # and the hosts its tasks run on
    except AirException as exc:
        report_bad_input(exc, sys.stderr)
        if sandbox is not None:
            sandbox.wait()
        return CliExit.BAD_INPUT
    return run_batch_session(options, say_uncommitted(options, batch.warned(sys.stderr)), sandbox)


def run_batch_session(
    options: HeadlessOptions, specs: list[Any] | None, sandbox: Any = None
) -> int:
    """Check the machine, open the runtime, submit ``specs`` (None: resume), run, report.
    ``sandbox``: a ``SandboxProbe`` already started (None: the check runs here).

    Returns:
        The exit code.
    """
    import importlib

    from air.cli.background import DetachedRun
    from air.cli.checks import refusals
    from air.cli.options import report_bad_input, reported_exit
    from air.cli.outlet import outlets
    from air.contracts.error import AirException, CliExit
    from air.ipc.suspend import run_stoppable  # Ctrl-Z stops its work too (IMPL-STOP-1)

    # what _main needs, imported while the sandbox probe's bwrap runs (IMPL-BOOT-11)
    for name in ("air.cli.factory", "air.cli.reporter", "air.cli.signals", "air.nursery.runtime"):
        importlib.import_module(name)
    if problems := refusals(options, sandbox):
        for each in problems:
            report_bad_input(each, options.stderr)
        return CliExit.BAD_INPUT
    outcome: dict[str, int] = {"code": CliExit.FAILED}
    detached = DetachedRun.from_env(sys.stderr)  # started by `air run --detach`?
    with outlets(options):  # the run never waits on its output's reader (IMPL-OUT-2)
        try:
            run_stoppable(_main, options, specs, outcome, detached, stderr=options.stderr)
        except AirException as exc:  # open_runtime's edge made it one (never a group)
            outcome["code"] = reported_exit(exc, options.stderr)
    return detached.finish(outcome)


async def _main(
    options: HeadlessOptions, specs: list[Any] | None, outcome: dict[str, int], bg: DetachedRun
) -> None:
    from air.cli.factory import RuntimeFactory
    from air.cli.options import bad
    from air.cli.reporter import Progress
    from air.cli.signals import SignalState, watch_signals
    from air.contracts.error import CliExit
    from air.contracts.event import EventFilter
    from air.events.transitions import TASK_ENDS
    from air.ipc.startup import release_gc
    from air.nursery.runtime import open_runtime

    progress = Progress(options.stderr, options.stdout if options.json_stream else None)

    def on_open(session: Any, ledger: Any) -> None:
        bg.adopt(session.project.local_root, ledger.session_id)  # a detached run: stdio to a log
        said = [f"air: session {ledger.session_id} in {session.project.project_root}"]
        said += [f"air: as the run was: {' '.join(options.kept)}"] if options.kept else []
        said += [f"air: merges land on branch {options.branch}"] if options.branch else []
        print("\n".join(said), file=options.stderr, flush=True)
        progress.resume(ledger)
        if specs is None and not progress.status:
            raise bad(
                "not_found",
                f"session {ledger.session_id} has no tasks: nothing to resume",
                "Start the batch again with `air run --headless BATCH`.",
                field="--session",
            )

    # every event of the session (the scheduler's, the workers', the tools') reaches the
    # progress display and the --json stream through the session's bus
    config = RuntimeFactory(options).create(
        resume=specs is None, on_open=on_open, subscribers=[progress.on_event]
    )
    async with open_runtime(config) as runtime:
        if specs:
            await runtime.submit(specs)
        # start-up is over once the first worker started, or the first attempt ended without
        # one: resume the garbage collector run_headless held (IMPL-START-2)
        runtime.bus.subscribe(
            EventFilter(types=["agent.started", *TASK_ENDS]), lambda _: release_gc()
        )
        signals = SignalState()

        def reports_on_kill(code: CliExit) -> None:
            from air.cli.junit import write_reports

            write_reports(options.junit, progress, runtime, "cancelled", code)

        runtime.nursery.start_soon(watch_signals, runtime, options.stderr, signals, reports_on_kill)
        result = await runtime.run_until_idle()
        await runtime.settle()
        done, _running, failed, total = progress.counts()
        outcome.update(done=done, failed=failed, total=total)
        word = run_word(str(result.status), bool(result.failed_task_ids))
        print(
            f"air [{progress.elapsed()}] {word}: done {done}/{total}, failed {failed}, "
            f"waves {result.waves}, cost {progress.cost_text()}",
            file=options.stderr,
            flush=True,
        )
        codes = {"cancelled": signals.code or CliExit.CANCELLED, "completed": CliExit.OK}
        outcome["code"] = codes.get(str(result.status), CliExit.FAILED)
        from air.cli.junit import write_reports  # only now: not on the way to the first request

        write_reports(options.junit, progress, runtime, word, outcome["code"])


def run_word(status: str, any_failed: bool) -> str:
    """How a run ended, in one word: ``completed``, ``failed`` (a task failed), ``blocked`` (none
    failed, one is blocked: it waits on the architecture gate, a review or a dependency) or
    ``cancelled``."""
    return "failed" if status == "blocked" and any_failed else status
