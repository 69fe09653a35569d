"""The ``air`` command line: docopt-ng usage per command, dispatch to one module per command.

Owns: every command's usage text (``COMMANDS``), the top-level usage built from them, argument
parsing (one docopt call over the chosen command's own usage, so ``air COMMAND --help`` shows
just that command), the one-line messages for a bad command or option (IMPL-REL-1), and the
translation of ``AirException`` into a clear message and exit code. Every command module is
imported lazily, only when it runs, so ``air --help`` and ``air --version`` import neither
Trio, pydantic, httpx nor anthropic.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

from air import __version__

_RUN_OPTIONS = """\
  --project PATH          The project directory (default: found by walking up from here).
  --provider NAME         The model provider from models.yaml (e.g. anthropic, openai).
  --cassette PATH         Replay model turns from a cassette file, or from DIR/<task id>.jsonl.
  --max-workers N         At most N workers at once (default: the CPU count, at most 16).
  --permission-mode MODE  default (a permission question fails closed) | allow-ask (a
                          question about a non-sensitive item is announced and run).
  --isolation MODE        auto | main | worktree | isolated_copy [default: auto].
  --review                Review every completed code change (a review task per task).
  --json                  Stream every event as one JSON object per line on stdout (if
                          the reader goes away the stream stops and the run goes on); the
                          last line is one summary record (type "air.summary").
  --junit FILE            Write a JUnit XML report of the tasks to FILE.
  -h --help               Show this help."""

_RUN_ARGS = (
    "[--project PATH] [--provider NAME] [--cassette PATH] [--max-workers N] "
    "[--permission-mode MODE] [--isolation MODE] [--review] [--json] [--junit FILE]"
)

_DOCTOR_USAGE = """air doctor: check that air can work here, and repair its own state.

First the bootstrap (Python 3.11+, SQLite with WAL, a shell, a writable ~/.air and .air/local;
if one fails nothing else is checked), then git, bubblewrap (a real sandbox is built), tmux,
the C++ tools when the project is C++, the provider configuration (models.yaml, auth_ref
variables set, a local base_url answers), stale worker run records, orphan worktrees, and
every database (integrity_check, schema, FK-off references, tables against a replay of the
event log). Every problem has a severity and what to do. Results are recorded as doctor.*
events in .air/local/doctor/doctor.db. Exit: 0 when no warning or blocking problem was
found, 1 otherwise, 2 for bad input.

Usage:
  air doctor [--fix] [--bundle FILE] [--json] [--project PATH]
  air doctor -h | --help

Options:
  --fix           Repair what air may: close stale run records (stopping workers a dead
                  air process left), quarantine orphan worktrees and directories (moved to
                  .air/local/quarantine, never deleted; branches stay), rebuild a damaged
                  session database from its event log. Only air's own state is written;
                  credentials, your sources and system packages are never touched.
  --bundle FILE   Also write FILE, a local tar.gz for a bug report: the report, versions,
                  configuration and recent air.log with secrets redacted, variable names
                  only. Nothing is uploaded.
  --json          Print the report as one JSON object.
  --project PATH  The project directory (default: found by walking up from here).
  -h --help       Show this help.
"""

CONSOLE_USAGE = """air: the console. Talk to the Main Agent; watch, answer and steer its tasks.

`air` opens it on the project found by walking up from here; `air run PROJECT` on PROJECT
(made an air project on first use). Esc interrupts the Main Agent's turn only, `x` in the
task tree (or /cancel TASK) cancels that task only, the first Ctrl-C cancels the running work
(resumable), a second kills it; /help lists the rest. Quitting ends every process the session
started. Exit 0, 2 for bad input (nothing configured: see `air provider current`).

Usage:
  air [--session SID [--replay]] [options]
  air run [PROJECT] [options]

Options:
  --session SID     Reopen that session: its conversation and tasks (see `air session list`).
  --replay          With --session: play the session back from its event log, read-only
                    (space pauses, n and b step on and back, +/- change the speed, q quits).
  --plain           Line-oriented console (screen readers, dumb terminals): one line per fact.
  --project PATH    The project directory (default: found by walking up from here).
  --provider NAME   The model provider from models.yaml (e.g. anthropic, openai).
  --cassette DIR    Offline: replay the Main Agent's turns from DIR/main.jsonl and each task's
                    from DIR/<task id>.jsonl (try examples/calc/cassettes).
  --max-workers N   At most N workers at once (default: the CPU count, at most 16).
  -h --help         Show this help.
"""
"""The console's usage: ``air`` with no command, or ``air run`` without ``--headless``."""

_CONSOLE_OPTIONS = {"--session", "--replay", "--plain", "--project", "--provider", "--cassette"}
_CONSOLE_OPTIONS |= {"--max-workers"}

COMMANDS: dict[str, tuple[str, str]] = {
    # name: (one-line summary for `air --help`, the command's own docopt usage)
    "run": (
        "Open the console on PROJECT; --headless BATCH runs a batch file (YAML) unattended.",
        f"""air run --headless: run the tasks of BATCH (a YAML file) in waves of worker processes.
(Without --headless, `air run [PROJECT]` opens the console: see `air --help`.)

Exit 0 when every task completed, 1 when one failed or is blocked, 2 for bad input (nothing
is started), 130 when cancelled (the first Ctrl-C, SIGTERM or SIGHUP cancels, a second kills).

Usage:
  air run --headless BATCH [--record DIR] {_RUN_ARGS}
  air run -h | --help

Options:
  --record DIR            Also write every model turn to DIR/<task id>.jsonl (replay them
                          offline with --cassette DIR).
{_RUN_OPTIONS}
""",
    ),
    "resume": (
        "Recover a session after a crash or Ctrl-C and finish its tasks.",
        f"""air resume: recover a session after a crash or Ctrl-C and finish its tasks.

Usage:
  air resume [--session SID] {_RUN_ARGS}
  air resume -h | --help

Options:
  --session SID           The session to resume (default: the most recent one).
{_RUN_OPTIONS}
""",
    ),
    "init": (
        "Make a directory an air project (.air/).",
        """air init: make PATH (default: the current directory) an air project (.air/).

Usage:
  air init [PATH] [--name NAME] [--models]
  air init -h | --help

Options:
  --name NAME  Project name (default: the directory name).
  --models     Also write a commented models.yaml template to .air/shared/.
  -h --help    Show this help.
""",
    ),
    "demo": (
        "Record a small realistic run in a new temporary project and print its history.",
        """air demo: record a small realistic run in a new temporary project and print its history.

Usage:
  air demo [--dir DIR]
  air demo -h | --help

Options:
  --dir DIR  Where the demo creates its project (default: a new temporary directory).
  -h --help  Show this help.
""",
    ),
    "history": (
        "Print a session's recorded events (default: the most recent session).",
        """air history: print a session's recorded events (default: the most recent session).

Usage:
  air history [--session SID] [--project PATH] [--json]
  air history -h | --help

Options:
  --session SID   A session id (see `air session list`).
  --project PATH  The project directory (default: found by walking up from here).
  --json          One JSON object per event.
  -h --help       Show this help.
""",
    ),
    "compact": (
        "Summarise a session's older messages into one summary (the originals stay).",
        """air compact: summarise the older messages of a session into one summary row.

The newest messages stay as they are; acceptance criteria, decisions and the file paths
under edit are kept verbatim; the original messages stay readable in `air history`.

Usage:
  air compact [--session SID] [--project PATH]
  air compact -h | --help

Options:
  --session SID   A session id (default: the most recent session).
  --project PATH  The project directory (default: found by walking up from here).
  -h --help       Show this help.
""",
    ),
    "session": (
        "List the sessions of the project (`air session list`).",
        """air session list: list the sessions of the project.

Usage:
  air session list [--project PATH]
  air session -h | --help

Options:
  --project PATH  The project directory (default: found by walking up from here).
  -h --help       Show this help.
""",
    ),
    "provider": (
        "Show the configured providers and models, or the one a new session uses (read-only).",
        """air provider: the configured model providers (read-only).

  list     List the configured providers and models.
  current  Show the provider and model a new session would use.

Usage:
  air provider list [--project PATH]
  air provider current [--project PATH]
  air provider -h | --help

Options:
  --project PATH  The project directory (default: found by walking up from here).
  -h --help       Show this help.
""",
    ),
    "trust": (
        "Show what a project's configuration would make air do, and trust it (or revoke).",
        """air trust: decide whether air may use a project's own configuration.

A project may ship files that widen what air does: .air/shared/models.yaml providers (where
an API key is sent, which variable is read as a key), allow rules in permissions.yaml,
architecture.yaml, capabilities/*.json, and files that reach every prompt (rules/*.md,
compaction-rules.md, AGENTS.md, CLAUDE.md). air uses them only once you trusted them: this
shows each file and what it would do, asks y/N, and records your answer in ~/.air/trust.json
(outside the project) with a hash of the files, so any later change asks again. Until then
`air run --headless` refuses (exit 2) and the console asks. Exit 0 trusted, 2 not.

Usage:
  air trust [PATH] [--yes]
  air trust --revoke [PATH]
  air trust -h | --help

Options:
  PATH        The project directory (default: the project around the current directory).
  --yes       Trust without asking (for scripts: read what it prints first).
  --revoke    Forget the trust of the project (air asks again).
  -h --help   Show this help.
""",
    ),
    "doctor": (
        "Check that air can work here; --fix repairs air's own state, --bundle a bug report.",
        _DOCTOR_USAGE,
    ),
    "restore": (
        "Bring back a file, the tree at a time, or the tree before a session from the backups.",
        """air restore: bring back what air's merges changed, from the backup repository.

Before air merges a task's changes into the project, it snapshots the project's files into
a git repository of its own (.air/local/backups/repo.git). TARGET is one of:
  a file path     that file as it was before the last merge that changed it;
  a time          the whole tree as it was at that time (ISO 8601, e.g. 2026-12-01T09:30);
  a session id    the whole tree as it was before that session's first merge.
A rescue snapshot of the current files is taken first (restore it like any other), and the
project's own git branch, index and history are never touched.

Usage:
  air restore TARGET [--project PATH]
  air restore --list [--project PATH] [--json]
  air restore -h | --help

Options:
  --project PATH  The project directory (default: found by walking up from here).
  --list          List the snapshots, oldest first.
  --json          With --list: one JSON object per snapshot.
  -h --help       Show this help.
""",
    ),
    "e2e": (
        "Run the shipped examples end to end in a temporary directory and check the results.",
        """air e2e: run the shipped examples end to end in a temporary directory.

Each example's batch is run with its recorded model turns; then its own tests must pass,
every task must have evidence and no process may be left. Exit 0 when every example
passed; else 32 + the sum of 2**i over the failed examples, i their index in the sorted
list of examples/ (calc is 0: exit 33 when calc failed). 2: bad input.

Usage:
  air e2e [--example NAME]... [--keep] [--json]
  air e2e -h | --help

Options:
  --example NAME  Run only this example (repeatable; default: every shipped example).
  --keep          Keep the temporary directory (its path is printed).
  --json          One JSON result per example on stdout.
  -h --help       Show this help.
""",
    ),
    "release": (
        "Build the sdist and wheel of air with SHA-256 checksums.",
        """air release: build the sdist and the wheel of air, with checksums.

Run it in a checkout of air. Builds the sdist, checks that it holds every test, every example
and the LICENSE, builds the wheel from it, and writes DIR/aircoding-<version>.tar.gz,
DIR/aircoding-<version>-py3-none-any.whl and DIR/SHA256SUMS. The distribution is named
`aircoding` (`air` is taken on PyPI); the package and the command stay `air`. Nothing is
uploaded.

Usage:
  air release [--source PATH] [--dist DIR]
  air release -h | --help

Options:
  --source PATH  The checkout of air (default: the one this air was installed from).
  --dist DIR     Where to write the files [default: dist].
  -h --help      Show this help.
""",
    ),
    "report": (
        "Write a session's tasks as one self-contained HTML page (timeline, cost, evidence).",
        """air report: one self-contained HTML page of a session (no network needed to view it).

Shows the tasks on a timeline (waves, which worker ran what when, retries, cancels,
merges), the cost and tokens per task and, per task, its diff, command output and evidence.

Usage:
  air report --html FILE [--session SID] [--project PATH]
  air report -h | --help

Options:
  --html FILE     Where to write the page.
  --session SID   A session id (default: the most recent session).
  --project PATH  The project directory (default: found by walking up from here).
  -h --help       Show this help.
""",
    ),
}
"""Every command: its summary line and its own usage (what ``air COMMAND --help`` prints)."""


def _top_usage() -> str:
    lines = ["air — a local AI coding-agent runtime.", "", "Usage:"]
    for usage in (CONSOLE_USAGE, *(usage for _summary, usage in COMMANDS.values())):
        section = usage.split("Usage:\n", 1)[1].split("\n\n", 1)[0]
        lines += [line for line in section.splitlines() if "-h | --help" not in line]
    lines += ["  air --version", "  air -h | --help", ""]
    lines += ["`air` (or `air run [PROJECT]`) opens the console: its options are below.", ""]
    lines += ["Commands:"]
    for name, (summary, _usage) in COMMANDS.items():
        lines.append(f"  {name:<10}{summary}")
    console_options = CONSOLE_USAGE.split("Options:\n", 1)[1].rstrip("\n").splitlines()
    lines += ["", "Console options:", *[o for o in console_options if "--help" not in o]]
    lines += ["", "Run `air COMMAND --help` for a command's options.", ""]
    return "\n".join(lines)


USAGE = _top_usage()

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

        return lambda a: run_headless(a, runner_factory)
    if name == "resume":
        from air.cli.resume import run_resume

        return lambda a: run_resume(a, runner_factory)
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
    if name == "doctor":
        from air.cli.doctor import run_doctor

        return run_doctor
    if name == "restore":
        from air.cli.restore import run_restore

        return run_restore
    if name == "e2e":
        from air.cli.e2e import run_e2e

        return run_e2e
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
    if name == "run" and "--headless" not in rest:
        return "air run: --headless is required (air run --headless BATCH)"
    valued = set(re.findall(r"(--?[\w-]+)[ =][A-Z]+", usage))
    positional = [
        token
        for i, token in enumerate(rest)
        if not token.startswith("-") and (i == 0 or rest[i - 1] not in valued)
    ]
    if not positional:
        return f"air {name}: a required argument is missing"
    return f"air {name}: these arguments fit none of its usage lines: {' '.join(rest)}"


def _parse(argv: list[str]) -> tuple[str, dict[str, Any]] | int:
    """The command and its docopt arguments, or an exit code (help, version, a bad line)."""
    from docopt import DocoptExit, docopt

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
        what = "option" if head.startswith("-") else "command"
        print(f"air: unknown {what} {head!r} (see `air --help`)", file=sys.stderr)
        print(_usage_section(USAGE), file=sys.stderr)
        print("  what to do: see `air --help` for the commands.", file=sys.stderr)
        return EXIT_BAD_INPUT
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


def _is_console(argv: list[str]) -> bool:
    """``air`` alone or with console options only, or ``air run`` without ``--headless``."""
    if not argv:
        return True
    if argv[0] == "run":
        return "--headless" not in argv and not any(a in ("-h", "--help") for a in argv)
    return argv[0].split("=", 1)[0] in _CONSOLE_OPTIONS


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
    parsed = _parse(list(sys.argv[1:] if argv is None else argv))
    if isinstance(parsed, int):
        return parsed
    name, args = parsed
    command = _route(name, runner_factory)
    if name not in ("run", "console"):
        # a headless run attaches its logs itself, once its spare worker is started: the
        # redactor's imports must not delay the worker's (IMPL-START-2); the console once
        # its first frame is drawn (IMPL-FRAME-1)
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
    """Print a user's problem (an AirException, or an OSError naming a file) as ``air: kind:
    message`` + what to do; its exit code. None for anything else (a bug, an exception group:
    its traceback shows; ``open_runtime`` already made a group of user problems one)."""
    from air.cli.options import reported_exit
    from air.contracts.error import AirException, CliExit

    if isinstance(exc, AirException):
        import logging

        logging.getLogger("air.cli").warning(
            "%s: %s (%s)", exc.kind.value, exc.error.message, exc.user_action
        )
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
