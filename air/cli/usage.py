"""The ``air`` command line's words: every command's usage text and the top-level usage.

Owns: ``COMMANDS`` (each command's one-line summary for ``air --help`` and its own docopt
usage, what ``air COMMAND --help`` prints), ``CONSOLE_USAGE`` (the console's usage and
options, ``CONSOLE_OPTIONS`` the options that select it) and ``USAGE`` (the top-level usage
built from them). Plain text: importing it imports nothing, so ``air --help`` stays fast.
"""

from __future__ import annotations

_OPTIONS = """\
  --project PATH          The project directory (default: found by walking up from here).
  --provider NAME         The model provider from models.yaml (e.g. anthropic, openai).
  -m NAME --model NAME    The model: an id (claude-opus-5-5, gpt-6-sol, qwen2.5-coder:7b) or
                          provider/id; one models.yaml does not list is taken with what
                          air's model catalogue knows of it (`air provider list`).
  --cassette PATH         Replay model turns from a cassette file, or from DIR/<task id>.jsonl.
  --max-workers N         At most N workers at once (default: the CPU count, at most 16).
  --permission-mode MODE  default (a permission question fails closed) | allow-ask (a
                          question about a non-sensitive item is announced and run){kept}.
  --isolation MODE        auto | main | worktree | isolated_copy (default: {isolation}).
                          main: in the project itself, where no merge checks what a
                          command wrote against the task's scope.
  --branch NAME           Land the run's merges on branch NAME of the project (made from
                          HEAD when new, and checked out before the first task){kept}.
  --review                Review every completed code change (a review task per task){review}.
{host}  --json                  Stream every event as one JSON object per line on stdout (if
                          the reader goes away the stream stops and the run goes on); the
                          last line is one summary record (type "air.summary").
  --junit FILE            Write a JUnit XML report of the tasks to FILE.
  -h --help               Show this help."""
_KEPT = "\n                          (default: the run's)"
_RUN_OPTIONS = _OPTIONS.format(
    kept="",
    isolation="auto",
    review="",
    host="  --host NAME             Run the tasks on host NAME of hosts.yaml"
    " (a task's `host:` wins).\n",
)
_RESUME_OPTIONS = _OPTIONS.format(
    kept=_KEPT,
    isolation="the run's",
    review="\n                          (also without it when the run had it)",
    host="",
)
"""``air resume`` keeps the run's ``--isolation``, ``--permission-mode``, ``--branch``,
``--review`` and ``--host`` unless given (IMPL-RESUME-2, IMPL-REMOTE-6)."""

_RUN_ARGS = (
    "[--project PATH] [--provider NAME] [--model NAME] [--cassette PATH] [--max-workers N] "
    "[--permission-mode MODE] [--isolation MODE] [--branch NAME] [--review] [--json] "
    "[--junit FILE]"
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
  air doctor --host NAME [--json] [--project PATH]
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
  --host NAME     Check only the remote host NAME (~/.air/hosts.yaml or the project's
                  .air/shared/hosts.yaml): the ssh connection with strict host keys, no
                  login-script output, air's version there, git and a bwrap sandbox.
  --json          Print the report as one JSON object.
  --project PATH  The project directory (default: found by walking up from here).
  -h --help       Show this help.
"""

CONSOLE_USAGE = """air: the console. Talk to the Main Agent; watch, answer and steer its tasks.

`air` opens it on the project found by walking up from here (in a terminal it first lists
the project's earlier sessions: Enter starts a new one, a number continues that one; in a git
repository without a project, the repository's top is made one); `air run PROJECT` on
PROJECT (made an air project on first use). Esc interrupts the Main Agent's turn only, `x` in
the task tree (or /cancel TASK) cancels that task only; while work runs the first Ctrl-C
cancels it (resumable), a second kills it; at an idle prompt Ctrl-C clears the line, a second
(or Ctrl-D) quits; F1 or ? lists every key. Quitting ends every process the session started
and leaves the conversation's last messages on the terminal. Without a terminal (a pipe, CI)
or with TERM=dumb the console is --plain. Exit 0, 2 for bad input (nothing configured: see
`air provider current`).

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
  -m NAME --model NAME  The model: an id (claude-opus-5-5, gpt-6-sol, qwen2.5-coder:7b) or
                    provider/id; one models.yaml does not list is taken with what air's
                    model catalogue knows of it (`air provider list`).
  --cassette DIR    Offline: replay the Main Agent's turns from DIR/main.jsonl and each task's
                    from DIR/<task id>.jsonl (try examples/calc/cassettes).
  --max-workers N   At most N workers at once (default: the CPU count, at most 16).
  -h --help         Show this help.
"""
"""The console's usage: ``air`` with no command, or ``air run`` without ``--headless``."""

CONSOLE_OPTIONS = {"--session", "--replay", "--plain", "--project", "--provider", "--cassette"}
CONSOLE_OPTIONS |= {"--max-workers", "--model", "-m"}

COMMANDS: dict[str, tuple[str, str]] = {
    # name: (one-line summary for `air --help`, the command's own docopt usage)
    "run": (
        "Open the console on PROJECT; --headless BATCH runs a batch file (YAML) unattended.",
        f"""air run --headless: run the tasks of BATCH (a YAML file; - reads it from stdin) in waves
of worker processes; -p PROMPT (or `air -p PROMPT`) runs one task made from PROMPT.
(Without --headless or -p, `air run [PROJECT]` opens the console: see `air --help`.)

stderr gets a line per task start, retry and end (elapsed time; tokens and cost at an end) and
a last line with the run's total cost. Exit 0 when every task completed, 1 when one failed or
is blocked, 2 for bad input (nothing is started), 130 when cancelled by Ctrl-C or SIGHUP, 143
by SIGTERM (the first signal cancels, a second kills; the --junit file and the --json summary
are written either way).

Usage:
  air run --headless BATCH [--detach] [--record DIR] [--host NAME] {_RUN_ARGS}
  air run -p PROMPT [--headless] [--detach] [--record DIR] [--host NAME] {_RUN_ARGS}
  air run --plan BATCH {_RUN_ARGS}
  air run -h | --help

Options:
  --plan                  Check BATCH as a run would and print its plan (waves, models, agent
                          files, tools, workspaces, prompts; --json: one object); start nothing.
  -p PROMPT --prompt PROMPT  One task: PROMPT is its description, its first line the title.
  --record DIR            Also write every model turn to DIR/<task id>.jsonl (replay them
                          offline with --cassette DIR).
  --detach                Run in the background, beyond this terminal: print the session id
                          and exit 0 (see `air wait`, `air status`, `air cancel`).
{_RUN_OPTIONS}
""",
    ),
    "wait": (
        "Wait for a background run (`air run --headless --detach`) to end; its exit code.",
        """air wait: wait until the background run of session SID ends; exit with its code.

Ctrl-C stops the waiting only: the run goes on. The result counts as delivered (the console
does not announce it). Exit 1 when its runtime died before the end (`air resume` finishes it).

Usage:
  air wait SID [--project PATH]
  air wait -h | --help

Options:
  --project PATH  The project directory (default: found by walking up from here).
  -h --help       Show this help.
""",
    ),
    "status": (
        "Show background runs: running, finished or lost, and their tasks done/total.",
        """air status: the background runs of the project (or of session SID).

Usage:
  air status [SID] [--project PATH] [--all]
  air status -h | --help

Options:
  --project PATH  The project directory (default: found by walking up from here).
  --all           Every background run the project had (without it: those running or lost,
                  and the newest 10 finished).
  -h --help       Show this help.
""",
    ),
    "cancel": (
        "Cancel a background run cooperatively (as its SIGTERM would).",
        """air cancel: cancel the background run of session SID (tasks end interrupted; `air
resume --session SID` can finish them). Exit 1 when it is not running.

Usage:
  air cancel SID [--project PATH]
  air cancel -h | --help

Options:
  --project PATH  The project directory (default: found by walking up from here).
  -h --help       Show this help.
""",
    ),
    "resume": (
        "Recover a session after a crash or Ctrl-C and finish its tasks.",
        f"""air resume: recover a session after a crash or Ctrl-C and finish its tasks.

Usage:
  air resume [--session SID] {_RUN_ARGS}
  air resume -h | --help

Options:
  --session SID           The session to resume (default: the most recent one no air
                          process is running).
{_RESUME_OPTIONS}
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
  air history [--session SID] [--project PATH] [--json] [--last N | --all]
  air history -h | --help

Options:
  --session SID   A session id (see `air session list`).
  --project PATH  The project directory (default: found by walking up from here).
  --json          One JSON object per event.
  --last N        Print the newest N events (without --last or --all: the newest 500).
  --all           Print every event, however long the session.
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
mcp.yaml servers (commands air would run), architecture.yaml, capabilities/*.json, and files
that reach every prompt (rules/*.md, compaction-rules.md, AGENTS.md, CLAUDE.md). air uses them
only once you trusted them: this shows each file and what it would do, asks y/N, and records
your answer in ~/.air/trust.json (outside the project) with a hash of the files, so any later
change asks again. Until then `air run --headless` refuses (exit 2) and the console asks. Exit
0 trusted, 2 not.

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
    "agents": (
        "List the named agent files (.air/agents/, ~/.air/agents/) or show one.",
        """air agents: the named agent files a batch task (`agent: NAME`) can run as.

Project files (.air/agents/NAME.md) hide the user's (~/.air/agents/NAME.md); symbolic links
and files over 64 KiB are skipped with a warning. Exit 0, 2 for an unknown NAME.

Usage:
  air agents list [--project PATH]
  air agents show NAME [--project PATH]
  air agents -h | --help

Options:
  --project PATH  The project directory (default: found by walking up from here).
  -h --help       Show this help.
""",
    ),
    "capability": (
        "List the capabilities (tool packs) and approve, enable or disable one.",
        """air capability: the tool packs a session may load, and your decisions about them.

Built-in ones (cpp) are enabled unless you disable them; a project's (.air/shared/capabilities/
*.json, once you trusted the project) or your own (~/.air/capabilities/*.json) waits until you
approve it (recorded in ~/.air/capabilities.json with a hash of the manifest: a changed one
asks again) and enable it. Every call of a capability's tool still asks for permission unless
a rule in permissions.yaml allows it. Exit 0, 2 for bad input.

Usage:
  air capability list [--project PATH]
  air capability approve NAME [--project PATH]
  air capability enable NAME [--project PATH]
  air capability disable NAME [--project PATH]
  air capability -h | --help

Options:
  --project PATH  The project directory (default: found by walking up from here).
  -h --help       Show this help.
""",
    ),
    "memory": (
        "List what air learned (memory candidates too), and promote or reject a candidate.",
        """air memory: what air learned in this project, and the candidates waiting for you.

An experience_miner task proposes short lessons; each is a candidate until you decide. A
promoted rule is written to .air/shared/rules/ and reaches every worker's prompt; a rejected
one is archived and not proposed again. Exit 0, 2 for an unknown id or one that is no candidate.

Usage:
  air memory list [--project PATH]
  air memory show ID [--project PATH]
  air memory promote ID [--project PATH]
  air memory reject ID [--project PATH]
  air memory -h | --help

Options:
  --project PATH  The project directory (default: found by walking up from here).
  -h --help       Show this help.
""",
    ),
    "mcp": (
        "List the declared MCP servers or one's tools; log in to an OAuth server, log out.",
        """air mcp: the Model Context Protocol servers whose tools the model gets.

Servers are declared in ~/.air/mcp.yaml and .air/shared/mcp.yaml (the project's only once you
trusted it: `air trust`); a session starts them and stops their processes when it ends. Every
call of their tools asks you first unless a rule in permissions.yaml allows it.

  list   List the declared servers (starts nothing).
  tools  Start SERVER, list its tools with the names the model sees and the MCP revision it
         spoke (2026-07-28, else the initialize handshake's; `protocol:` pins one), stop it.
  login  Log in to SERVER (declared `oauth: true`): prints the URL to open in a browser,
         waits up to 5 min for its redirect to 127.0.0.1, keeps the tokens in ~/.air/mcp-auth
         for the server's URL. A session uses them (refreshed) and never logs in itself.
  logout Revoke SERVER's tokens at its authorization server (where it offers revocation)
         and forget them.

Usage:
  air mcp list [--project PATH]
  air mcp tools SERVER [--project PATH]
  air mcp login SERVER [--project PATH]
  air mcp logout SERVER [--project PATH]
  air mcp -h | --help

Options:
  --project PATH  The project directory (default: found by walking up from here).
  -h --help       Show this help.
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
    "help": (
        "Show the help of a command (or of air).",
        """air help: show the help of COMMAND (without one: air's own help).

Usage:
  air help [COMMAND]
  air help -h | --help

Options:
  -h --help  Show this help.
""",
    ),
    "completion": (
        "Print a shell completion script (bash, zsh or fish).",
        """air completion: print a completion script for SHELL (bash, zsh or fish) on stdout.

  bash:  echo 'source <(air completion bash)' >> ~/.bashrc
  zsh:   air completion zsh > "${fpath[1]}/_air"   (or source it after compinit)
  fish:  air completion fish > ~/.config/fish/completions/air.fish

Usage:
  air completion SHELL
  air completion -h | --help

Options:
  -h --help  Show this help.
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
merges), the cost and tokens per task and, per task, its diffs, commands with their output
and evidence: of a long task the latest 10 of each (and the latest commands that did not
succeed) with counts of all; `--task ID` writes one task's page with every one of them.

Usage:
  air report --html FILE [--session SID] [--project PATH] [--task ID]
  air report -h | --help

Options:
  --html FILE     Where to write the page.
  --task ID       Only this task, with every command, diff and evidence item.
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
        lines.append(f"  {name:<11}{summary}")
    console_options = CONSOLE_USAGE.split("Options:\n", 1)[1].rstrip("\n").splitlines()
    lines += ["", "Console options:", *[o for o in console_options if "--help" not in o]]
    lines += ["", "Run `air COMMAND --help` for a command's options.", ""]
    return "\n".join(lines)


USAGE = _top_usage()
