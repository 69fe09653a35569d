"""The ``air`` command line: argument parsing and dispatch to one module per command.

Owns: argument parsing over the usage texts of ``air.cli.usage`` (one docopt call over the
chosen command's own usage, so ``air COMMAND --help`` shows just that command), the one-line
messages for a bad command or option (IMPL-REL-1), and the
translation of ``AirException`` into a clear message and exit code. Every command module is
imported lazily, only when it runs, so ``air --help`` and ``air --version`` import neither
Trio, pydantic, httpx nor anthropic.
"""

from __future__ import annotations

# isort: off
import air.cli.first  # noqa: F401  (before any other import: IMPL-PATH-1)

# isort: on
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

from air import __version__
from air.cli.first import standard_streams
from air.cli.usage import COMMANDS, CONSOLE_OPTIONS, CONSOLE_USAGE, USAGE
from air.search_path import own_search_paths

# The codes this module returns before any contract is imported (``air --help`` loads no
# pydantic): the same values as ``air.contracts.error.CliExit``, the one table (a test checks).
EXIT_OK = 0
EXIT_BAD_INPUT = 2
EXIT_CANCELLED = 130


def _route(name: str, runner_factory: Any) -> Callable[[dict[str, Any]], int]:
    if name == "console":
        from air.cli.console import run_console

        return lambda a: run_console(a, runner_factory)
    if name == "run":
        from air.cli.run import run_headless

        def run(a: dict[str, Any]) -> int:
            if a.get("--plan"):
                from air.cli.plan import run_plan

                return run_plan(a)  # a run's checks and planners; nothing is started
            if a.get("--detach"):
                from air.cli.detach import run_detached

                return run_detached(a)  # the batch runs in a process of its own
            return run_headless(a, runner_factory)

        return run
    if name == "resume":
        from air.cli.resume import run_resume

        return lambda a: run_resume(a, runner_factory)
    if name in ("wait", "status", "cancel"):
        from air.cli.detach import run_cancel, run_status, run_wait

        return {"wait": run_wait, "status": run_status}.get(name, run_cancel)
    if name == "init":
        from air.cli.init import run_init

        return run_init
    if name == "demo":
        from air.cli.demo import run_demo

        return run_demo
    if name == "history":
        from air.cli.history import run_history

        return run_history
    if name == "compact":
        from air.cli.compact import run_compact

        return run_compact
    if name == "session":
        from air.cli.history import run_session_list

        return run_session_list
    if name == "provider":
        from air.cli.provider import run_provider_current, run_provider_list

        return lambda a: (run_provider_list if a["list"] else run_provider_current)(a["--project"])
    if name == "trust":
        from air.cli.trust import run_trust

        return run_trust
    if name == "agents":
        from air.cli.agents import run_agents

        return run_agents
    if name == "capability":
        from air.cli.capability import run_capability

        return run_capability
    if name == "memory":
        from air.cli.memory import run_memory

        return run_memory
    if name == "mcp":
        from air.cli.mcp import run_mcp

        return run_mcp
    if name == "doctor":
        from air.cli.doctor import run_doctor

        return run_doctor
    if name == "restore":
        from air.cli.restore import run_restore

        return run_restore
    if name == "e2e":
        from air.cli.e2e import run_e2e

        return run_e2e
    if name == "help":
        return _help
    if name == "completion":
        from air.cli.completion import run_completion

        return run_completion
    if name == "release":
        from air.cli.release import run_release

        return run_release
    if name == "report":
        from air.cli.report import run_report

        return run_report
    raise AssertionError(f"a command with no route: {name}")


def _usage_section(usage: str) -> str:
    return "Usage:\n" + usage.split("Usage:\n", 1)[1].split("\n\n", 1)[0]


def _known_options(usage: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", usage))


def _bad_arguments(name: str, usage: str, rest: list[str], docopt_message: str) -> str:
    """One readable line saying what is wrong with ``air name rest...`` (IMPL-REL-1)."""
    known = _known_options(usage)
    for token in rest:
        if token == "--":
            break
        if token.startswith("-") and token != "-" and token.split("=", 1)[0] not in known:
            return f"air {name}: unknown option {token.split('=', 1)[0]}"
    first = docopt_message.splitlines()[0] if docopt_message else ""
    if first.endswith("requires argument"):
        return f"air {name}: {first.split()[0]} needs a value"
    if first.endswith("must not have an argument"):
        return f"air {name}: {first.split()[0]} takes no value"
    if name == "run" and not {"--headless", "--plan", "-p", "--prompt"} & set(rest):
        return "air run: --headless BATCH, --plan BATCH or -p PROMPT is required"
    valued = set(re.findall(r"(--?[\w-]+)[ =][A-Z]+", usage))
    positional = [
        token
        for i, token in enumerate(rest)
        if not token.startswith("-") and (i == 0 or rest[i - 1] not in valued)
    ]
    for one, other in re.findall(r"\[(--[\w-]+)(?: [A-Z]+)? \| (--[\w-]+)", usage):
        if {one, other} <= {token.split("=", 1)[0] for token in rest}:
            return f"air {name}: {one} and {other} exclude each other"
    apart = _options_apart(usage, rest)
    if apart:
        return f"air {name}: {apart[0]} and {apart[1]} exclude each other"
    if not positional:
        return f"air {name}: a required argument is missing"
    return f"air {name}: these arguments fit none of its usage lines: {' '.join(rest)}"


def _options_apart(usage: str, rest: list[str]) -> tuple[str, str] | None:
    """Two given options that no usage line takes together (``--yes`` with ``--revoke``)."""
    lines = [line for line in _usage_section(usage).splitlines() if line.startswith("  air")]
    if any("[options]" in line for line in lines):
        return None  # such a line takes every option its Options section lists
    takes = [_known_options(line) - {"-h", "--help"} for line in lines]
    given = sorted({token.split("=", 1)[0] for token in rest if token.startswith("--")})
    for i, one in enumerate(given):
        for other in given[i + 1 :]:
            if not any({one, other} <= line for line in takes):
                return one, other
    return None


def _is_prompt(arg: str) -> bool:
    return arg in ("-p", "--prompt") or arg.startswith("--prompt=")


def _before_dashes(argv: list[str]) -> list[str]:
    return argv[: argv.index("--")] if "--" in argv else argv


def _parse(argv: list[str]) -> tuple[str, dict[str, Any]] | int:
    """The command and its docopt arguments, or an exit code (help, version, a bad line)."""
    from docopt import DocoptExit, docopt

    if argv and argv[0].startswith("-") and any(_is_prompt(a) for a in _before_dashes(argv)):
        argv = ["run", *argv]  # `air [-m NAME] -p PROMPT` is `air run [-m NAME] -p PROMPT`
    head = argv[0] if argv else ""
    if _is_console(argv):
        return _parse_console(argv)
    if head in ("-h", "--help"):
        print(USAGE, end="")
        return EXIT_OK
    if head == "--version":
        print(f"air {__version__}")
        return EXIT_OK
    if head not in COMMANDS:
        return _unknown(head)
    usage = COMMANDS[head][1]
    rest = argv[1:]
    before_dashes = rest[: rest.index("--")] if "--" in rest else rest
    if any(token in ("-h", "--help") for token in before_dashes):
        print(usage, end="")
        return EXIT_OK
    try:
        args = docopt(usage, argv=argv, default_help=False, version=None)
    except DocoptExit as exc:
        print(_bad_arguments(head, usage, rest, str(exc)), file=sys.stderr)
        print(_usage_section(usage), file=sys.stderr)
        print(f"  what to do: see `air {head} --help` for its options.", file=sys.stderr)
        return EXIT_BAD_INPUT
    return head, dict(args)


def _unknown(head: str) -> int:
    """A mistyped command or option: say so, name the closest command, exit 2."""
    import difflib

    what = "option" if head.startswith("-") else "command"
    close = difflib.get_close_matches(head.lstrip("-"), list(COMMANDS), n=1, cutoff=0.6)
    hint = f"; did you mean `air {close[0]}`?" if close else " (see `air --help`)"
    print(f"air: unknown {what} {head!r}{hint}", file=sys.stderr)
    print(_usage_section(USAGE), file=sys.stderr)
    print("  what to do: see `air --help` for the commands.", file=sys.stderr)
    return EXIT_BAD_INPUT


def _help(args: dict[str, Any]) -> int:
    """``air help [COMMAND]``: that command's usage, or air's."""
    name = args.get("COMMAND")
    if name is None:
        print(USAGE, end="")
        return EXIT_OK
    if name not in COMMANDS:
        return _unknown(str(name))
    print(COMMANDS[str(name)][1], end="")
    return EXIT_OK


def _is_console(argv: list[str]) -> bool:
    """``air`` alone or with console options only, or ``air run`` without ``--headless``."""
    if not argv:
        return True
    if argv[0] == "run":
        headless = ("--headless", "--plan", "-p", "--prompt")
        return not any(a in ("-h", "--help", *headless) or a.startswith("--prompt=") for a in argv)
    return argv[0].split("=", 1)[0] in CONSOLE_OPTIONS


def _parse_console(argv: list[str]) -> tuple[str, dict[str, Any]] | int:
    from docopt import DocoptExit, docopt

    try:
        args = docopt(CONSOLE_USAGE, argv=argv, default_help=False, version=None)
    except DocoptExit as exc:
        known = _known_options(CONSOLE_USAGE)
        names = [a.split("=", 1)[0] for a in argv if a.startswith("-")]
        unknown = [name for name in names if name not in known]
        first = str(exc).splitlines()[0] if str(exc) else ""
        if unknown:
            what = f"unknown option {unknown[0]}"
        elif first.endswith("requires argument"):
            what = f"{first.split()[0]} needs a value"
        else:
            what = f"these arguments fit none of its usage lines: {' '.join(argv)}"
        print(f"air{' run' if argv[0] == 'run' else ''}: {what}", file=sys.stderr)
        section = _usage_section(CONSOLE_USAGE).splitlines()
        form = "  air run" if argv[0] == "run" else "  air ["
        print(
            "\n".join(
                line for line in section if not line.startswith("  ") or line.startswith(form)
            ),
            file=sys.stderr,
        )
        print("  what to do: see `air --help` for the console's options.", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.get("--replay") and not args.get("--session"):
        print("air: --replay needs --session SID", file=sys.stderr)
        print("  what to do: pick a session id from `air session list`.", file=sys.stderr)
        return EXIT_BAD_INPUT
    return "console", dict(args)


def main(argv: Sequence[str] | None = None, *, runner_factory: Any = None) -> int:
    """Run the ``air`` command. Returns the process exit code.

    Args:
        argv: the arguments (default: ``sys.argv[1:]``).
        runner_factory: for tests only, through this Python call and never a flag: builds the
            TaskRunner of ``run``/``resume`` instead of the real WorkerManager (see
            ``air.cli.options.RunnerFactory``). ``None`` (the ``air`` command) runs real workers.
    """
    own_search_paths()  # again: a process forked from a warm air (IMPL-PATH-1, air.cli.first)
    standard_streams()  # its streams too
    parsed = _parse(list(sys.argv[1:] if argv is None else argv))
    if isinstance(parsed, int):
        return parsed
    name, args = parsed
    command = _route(name, runner_factory)
    if name not in ("run", "console", "history", "session"):
        # a headless run attaches its logs itself, once its spare worker is started: the
        # redactor's imports must not delay the worker's (IMPL-START-2); the console once
        # its first frame is drawn (IMPL-FRAME-1); the readers log nothing (IMPL-READ-3)
        from air.cli.doctor import setup_logging

        setup_logging()
    try:
        if name not in ("doctor", "help", "completion"):  # the doctor reports it instead
            _refuse_open_air_home()
        if name not in ("help", "completion", "e2e", "demo"):
            _refuse_unusable_directory(args)
        if name == "console":  # urwid writes the terminal's own sequences
            from air.cli.outlet import piped_stdout

            with piped_stdout():  # the plain console into a pipe nobody reads (`air | less`)
                return command(args)
        from air.cli.exact_output import exact_output

        with exact_output():
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


def _refuse_open_air_home() -> None:
    """No command acts on a ``~/.air`` another user could change (``air.air_home``)."""
    from air.air_home import mend_open, open_to_others

    found = open_to_others()
    if found is None:
        return
    from air.contracts.error import AirException

    path, why = found
    raise AirException.of(
        kind="untrusted_config",
        message=f"{path}: {why}, and air acts on what is there (where your keys go, what runs "
        "as you): it reads none of it",
        user_action=f"{mend_open(path)}, then run air again.",
        metadata={"file": path, "reason": why},
    )


def _refuse_unusable_directory(args: dict[str, Any]) -> None:
    """A project (or home) whose path holds bytes that are no UTF-8 (a directory an old
    archive named in Latin-1) is refused before anything is written: air records paths as text
    in its events, git's files and JSON, and such a path ended a run with a traceback midway.
    So is a current directory removed since the shell entered it (a traceback too)."""
    project = args.get("--project") or args.get("PROJECT") or args.get("PATH")
    try:
        here = os.path.abspath(str(project)) if project else os.getcwd()
    except FileNotFoundError:  # the shell is in a directory removed since (a worktree's)
        from air.contracts.error import AirException

        raise AirException.of(
            kind="not_found",
            message="the current directory no longer exists",
            user_action="cd to the project (or pass --project PATH), then run air again.",
        ) from None
    for what, path in (
        ("the project's path", here),
        ("your home directory's path", os.path.expanduser("~")),
    ):
        if any("\udc80" <= c <= "\udcff" for c in path):  # undecodable bytes, as os shows them
            from air.session.project import not_text_path

            raise not_text_path(what, path)


def _report(exc: BaseException) -> int | None:
    """Print a user's problem (an AirException, a full or failing disk, an OSError naming a
    file) as ``air: kind: message`` + what to do; its exit code. None for anything else (a
    bug, an exception group: its traceback shows; ``open_runtime`` already made a group of user
    problems one)."""
    from air.cli.options import reported_exit
    from air.contracts.error import AirException, CliExit, machine_failure

    exc = machine_failure(exc) or exc
    if isinstance(exc, AirException):
        import logging

        logger = logging.getLogger("air.cli")
        if logger.hasHandlers():  # a run's log file; never logging's last resort on stderr
            logger.warning("%s: %s (%s)", exc.kind.value, exc.error.message, exc.user_action)
        return reported_exit(exc, sys.stderr)
    if isinstance(exc, OSError) and exc.filename is not None:
        print(f"air: os_error: {exc.filename}: {exc.strerror or exc}", file=sys.stderr)
        print("  what to do: check that path (it exists, is readable/writable).", file=sys.stderr)
        return CliExit.BAD_INPUT
    return None


def _silence_stdout() -> None:
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def entry() -> None:
    """Console-script wrapper: exit with ``main()``'s code."""
    sys.exit(main())
