"""The ``air`` command line: docopt-ng usage, dispatch to one module per command.

Owns: the usage text, argument parsing, and the translation of ``AirException`` into a clear
message and exit code. Every command module is imported lazily, only when it runs, so
``air --help`` and ``air --version`` import neither Trio, pydantic, httpx nor anthropic.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from air import __version__

USAGE = """air — a local AI coding-agent runtime.

Usage:
  air run --headless BATCH [--project PATH] [--provider NAME] [--cassette PATH] [--record DIR] [--max-workers N] [--permission-mode MODE] [--isolation MODE] [--review] [--json] [--junit FILE]
  air resume [--session SID] [--project PATH] [--provider NAME] [--cassette PATH] [--max-workers N] [--permission-mode MODE] [--isolation MODE] [--review] [--json] [--junit FILE]
  air init [PATH] [--name NAME] [--models]
  air demo [--dir DIR]
  air history [--session SID] [--project PATH] [--json]
  air session list [--project PATH]
  air provider list [--project PATH]
  air provider current [--project PATH]
  air doctor [--fix] [--bundle FILE] [--json] [--project PATH]
  air doctor (-h | --help)
  air --version
  air -h | --help

Commands:
  run --headless  Run the tasks of BATCH (a YAML file) in waves of worker processes. Exit 0
                  when every task completed, 1 when one failed or is blocked, 2 for bad
                  input (nothing is started), 130 when cancelled (the first Ctrl-C, SIGTERM
                  or SIGHUP cancels, a second one kills).
  resume          Recover a session after a crash or Ctrl-C and finish its tasks.
  init            Make PATH (default: the current directory) an air project (.air/).
  demo            Record a small realistic run in a new temporary project and print its history.
  history         Print a session's recorded events (default: the most recent session).
  session list    List the sessions of the project.
  provider list   List the configured providers and models (read-only).
  provider current
                  Show the provider and model a new session would use (read-only).
  doctor          Check that air can work here (Python, SQLite, sh, .air, git, bwrap, tmux,
                  C++ tools, providers, run records, worktrees, databases); exit 1 on a problem.

Options:
  --project PATH          The project directory (default: found by walking up from here).
  --provider NAME         The model provider from models.yaml (e.g. anthropic, openai).
  --cassette PATH         Replay model turns from a cassette file, or from DIR/<task id>.jsonl.
  --record DIR            Also write every model turn to DIR/<task id>.jsonl (replay them
                          offline with --cassette DIR).
  --max-workers N         At most N workers at once (default: the CPU count, at most 16).
  --permission-mode MODE  default (a permission question fails closed) | allow-ask (a
                          question about a non-sensitive item is announced and run).
  --isolation MODE        auto | main | worktree | isolated_copy [default: auto].
  --review                Review every completed code change (a review task per task).
  --json                  Stream every event as one JSON object per line on stdout (if
                          the reader goes away the stream stops and the run goes on).
  --junit FILE            Write a JUnit XML report of the tasks to FILE.
  --name NAME             Project name (default: the directory name).
  --models                Also write a commented models.yaml template to .air/shared/.
  --dir DIR               Where the demo creates its project (default: a new temporary directory).
  --session SID           A session id (see `air session list`).
  --fix                   doctor: repair what it may (air's own state only; see --help).
  --bundle FILE           doctor: also write a local redacted tar.gz for a bug report.
  -h --help               Show this help.
  --version               Show the version.
"""  # noqa: E501

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3
EXIT_CANCELLED = 130


def _route(args: dict[str, Any], runner_factory: Any) -> Callable[[dict[str, Any]], int]:
    if args["run"]:
        from air.cli.run import run_headless

        return lambda a: run_headless(a, runner_factory)
    if args["resume"]:
        from air.cli.resume import run_resume

        return lambda a: run_resume(a, runner_factory)
    if args["init"]:
        from air.cli.init import run_init

        return run_init
    if args["demo"]:
        from air.cli.demo import run_demo

        return run_demo
    if args["history"]:
        from air.cli.history import run_history

        return run_history
    if args["session"] and args["list"]:
        from air.cli.history import run_session_list

        return run_session_list
    if args["provider"]:
        from air.cli.provider import run_provider_current, run_provider_list

        if args["list"]:
            return lambda a: run_provider_list(a["--project"])
        return lambda a: run_provider_current(a["--project"])
    if args["doctor"]:
        from air.cli.doctor import run_doctor

        return run_doctor
    raise AssertionError(f"docopt accepted a command with no route: {args}")


def main(argv: Sequence[str] | None = None, *, runner_factory: Any = None) -> int:
    """Run the ``air`` command. Returns the process exit code.

    Args:
        argv: the arguments (default: ``sys.argv[1:]``).
        runner_factory: for tests only, through this Python call and never a flag: builds the
            TaskRunner of ``run``/``resume`` instead of the real WorkerManager (see
            ``air.cli.run.RunnerFactory``). ``None`` (the ``air`` command) runs real workers.
    """
    from docopt import DocoptExit, docopt

    try:
        args = docopt(
            USAGE,
            argv=list(sys.argv[1:] if argv is None else argv),
            default_help=False,
            version=None,
        )
    except DocoptExit as exc:
        print(str(exc), file=sys.stderr)
        print("  what to do: see `air --help` for the commands and options.", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args["doctor"] and args["--help"]:
        from air.cli.doctor import DOCTOR_HELP

        print(DOCTOR_HELP, end="")
        return EXIT_OK
    if args["--help"]:
        print(USAGE, end="")
        return EXIT_OK
    if args["--version"]:
        print(f"air {__version__}")
        return EXIT_OK
    command = _route(args, runner_factory)
    if not (args["run"] and args["--headless"]):
        # a headless run attaches its logs itself, once its spare worker is started: the
        # redactor's imports must not delay the worker's (IMPL-START-2)
        from air.cli.doctor import setup_logging

        setup_logging()
    try:
        return command(args)
    except KeyboardInterrupt:
        print("air: interrupted", file=sys.stderr)
        return EXIT_CANCELLED
    except BrokenPipeError:
        # the reader went away (`air history | head`): not an error of ours
        _silence_stdout()
        return EXIT_OK
    except Exception as exc:  # translated at the boundary; bugs still show their traceback
        code = _report(exc)
        if code is None:
            raise
        return code


def _report(exc: BaseException) -> int | None:
    """Print a user's problem (an AirException, also inside an exception group, or an
    OSError naming a file) as ``air: kind: message`` + what to do; its exit code. None for
    anything else (a bug: its traceback shows)."""
    from air.cli.run import first_air_exception
    from air.contracts.error import AirException

    found = first_air_exception(exc)
    if isinstance(found, AirException):
        import logging

        logging.getLogger("air.cli").warning(
            "%s: %s (%s)", found.kind.value, found.error.message, found.user_action
        )
        print(f"air: {found.kind.value}: {found.error.message}", file=sys.stderr)
        if found.error.detail:
            print(f"  detail: {found.error.detail}", file=sys.stderr)
        if found.user_action:
            print(f"  what to do: {found.user_action}", file=sys.stderr)
        return EXIT_BAD_INPUT if is_bad_input(found) else EXIT_FAILED
    if isinstance(exc, OSError) and exc.filename is not None:
        print(f"air: os_error: {exc.filename}: {exc.strerror or exc}", file=sys.stderr)
        print("  what to do: check that path (it exists, is readable/writable).", file=sys.stderr)
        return EXIT_BAD_INPUT
    return None


def _silence_stdout() -> None:
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def is_bad_input(exc: Any) -> bool:
    """Whether an AirException is the user's input to fix (exit 2) rather than a failure."""
    return exc.kind.value in {
        "validation_error",
        "config_error",
        "not_found",
        "schema_error",
        "corrupt_database",
    }


def entry() -> None:
    """Console-script wrapper: exit with ``main()``'s code."""
    sys.exit(main())
