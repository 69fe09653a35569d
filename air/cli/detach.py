"""``air run --headless --detach``, ``air wait``, ``air status``, ``air cancel`` (issue 25 item 7).

Owns: ``run_detached`` (starts the same ``air run --headless`` as a new session leader, stdin
from /dev/null and no controlling terminal, with ``AIR_DETACHED=1``; relays what it says until
it names its session, then prints the session id and exits 0 while the batch runs on; a batch
refused before its session opened exits as the runtime did), ``run_wait`` (until the batch's
end; Ctrl-C stops the waiting only; the exit code is the batch's, and the result counts as
delivered: no console notice), ``run_status`` and ``run_cancel`` (SIGTERM to the runtime after
a PID identity check: the run's own cooperative cancel). The records are
``air.cli.background``'s (IMPL-DETACH-1).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from typing import Any

from air.cli.background import DETACHED_ENV, BackgroundRun, find_run, list_runs, recent_runs
from air.cli.history import counts_summary, find_project

__all__ = ["child_argv", "run_cancel", "run_detached", "run_status", "run_wait"]

_ANNOUNCED = re.compile(r"^air: detached session (\S+) log (.+)$")
_WAIT_POLL_S = 0.2
FINISHED_SHOWN = 10
"""Finished background runs ``air status`` shows without ``--all`` (the newest)."""
_VALUED = (
    "--project",
    "--provider",
    "--model",
    "--cassette",
    "--max-workers",
    "--permission-mode",
    "--isolation",
    "--branch",
    "--junit",
    "--record",
    "--prompt",
    "--host",
)
_FLAGS = ("--review", "--json")


def _bad(message: str, action: str) -> Exception:
    from air.contracts.error import AirException

    return AirException.of(kind="validation_error", message=message, user_action=action)


def child_argv(args: dict[str, Any]) -> list[str]:
    """The ``air run --headless`` command line of ``args`` without ``--detach``.

    Raises:
        AirException: ``validation_error`` when the batch is read from stdin (a detached run
            has none).
    """
    # -P: the directory it starts in (the project) is not on sys.path: a cloned repository's
    # top-level `air/` package would run as the user, outside any sandbox (IMPL-CTX-7)
    argv = [sys.executable, "-P", "-m", "air.cli", "run", "--headless"]
    batch = args.get("BATCH")
    if batch == "-":
        raise _bad(
            "--detach cannot read the batch from stdin",
            "Write the batch to a file and run `air run --headless FILE --detach`.",
        )
    if batch:
        argv.append(os.path.abspath(batch))
    for name in _VALUED:
        value = args.get(name)
        if value is not None:
            keep_relative = name not in ("--project", "--cassette", "--junit", "--record")
            argv += [name, value if keep_relative else os.path.abspath(value)]
    argv += [name for name in _FLAGS if args.get(name)]
    return argv


def run_detached(args: dict[str, Any]) -> int:
    """Start the batch of ``args`` in the background; print its session id.

    Returns:
        0 once the batch runs on its own; else the runtime's exit code (2: refused).
    """
    from air.cli.options import report_bad_input
    from air.contracts.error import AirException, CliExit

    try:
        argv = child_argv(args)
    except AirException as exc:
        report_bad_input(exc, sys.stderr)
        return CliExit.BAD_INPUT
    read_end, write_end = os.pipe()
    child = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=write_end,
        stderr=write_end,
        start_new_session=True,  # its own session: no terminal, no terminal signals
        env={**os.environ, DETACHED_ENV: "1"},
    )
    os.close(write_end)
    with os.fdopen(read_end, encoding="utf-8", errors="replace") as said:
        for line in said:
            found = _ANNOUNCED.match(line.rstrip("\n"))
            if found is None:
                sys.stderr.write(line)
                continue
            sid, log = found.groups()
            print(sid, flush=True)
            print(
                f"air: session {sid} runs in the background (log {log}); "
                f"`air wait {sid}`, `air status {sid}`, `air cancel {sid}`",
                file=sys.stderr,
                flush=True,
            )
            child.returncode = 0  # it is not ours to wait for: it outlives this process
            return CliExit.OK
    return child.wait()


def _run_of(args: dict[str, Any]) -> tuple[str, BackgroundRun]:
    from air.contracts.error import AirException

    project = find_project(args.get("--project"))
    sid = str(args["SID"])
    run = find_run(project.local_root, sid)
    if run is None:
        raise AirException.of(
            kind="not_found",
            message=f"no background session {sid!r} in project {project.name!r}",
            user_action="List them with `air status`; only `air run --headless --detach` "
            "starts one.",
        )
    return project.local_root, run


def _guarded(body: Any, args: dict[str, Any]) -> int:
    from air.cli.options import report_bad_input
    from air.contracts.error import AirException, CliExit

    try:
        code: int = body(args)
    except AirException as exc:
        report_bad_input(exc, sys.stderr)
        return CliExit.BAD_INPUT
    return code


def _describe(local_root: str, run: BackgroundRun) -> str:
    from air.store.read_model import peek_summary

    state = run.state
    line = f"{run.session_id}  {state}"
    if state == "finished":
        line += f" (exit {run.exit_code})"
    # read-only (the runtime may be writing it); None while the summary row is behind
    path = os.path.join(local_root, "sessions", run.session_id, "session.db")
    peeked = peek_summary(path, run.session_id) if os.path.exists(path) else None
    if peeked is not None:
        counts = peeked[1]
        done = counts.get("completed", 0)
        line += f"  {done}/{sum(counts.values())} done: {counts_summary(counts)}"
    if state == "lost":
        line += f"  (`air resume --session {run.session_id}` finishes it)"
    return line


def _status(args: dict[str, Any]) -> int:
    if args.get("SID"):
        local_root, run = _run_of(args)
        print(_describe(local_root, run))
        return 0
    project = find_project(args.get("--project"))
    if args.get("--all"):
        runs, older = list_runs(project.local_root), 0
    else:
        runs, older = recent_runs(project.local_root, FINISHED_SHOWN)
    if not runs:
        print(f"project {project.name!r} has no background sessions")
    for run in runs:
        print(_describe(project.local_root, run), flush=True)
    if older:
        print(f"({older} older finished background sessions: `air status --all`)")
    return 0


def run_status(args: dict[str, Any]) -> int:
    """``air status [SID] [--all]``: the background runs, running/finished/lost, tasks
    done/total (without ``--all``: those without an end and the newest ``FINISHED_SHOWN``
    finished; each shown one opens its session database)."""
    return _guarded(_status, args)


def _wait(args: dict[str, Any]) -> int:
    from air.contracts.error import CliExit

    local_root, run = _run_of(args)
    sid = run.session_id
    try:
        if run.state == "running":
            print(
                f"air wait: waiting for session {sid} (Ctrl-C stops the waiting, not the run)",
                file=sys.stderr,
                flush=True,
            )
        while True:
            state = run.state
            if state != "running":
                break
            time.sleep(_WAIT_POLL_S)
            run = find_run(local_root, sid) or run
    except KeyboardInterrupt:
        print(
            f"\nair wait: stopped waiting; session {sid} runs on (`air wait {sid}` again, "
            f"`air cancel {sid}` to stop it)",
            file=sys.stderr,
            flush=True,
        )
        return CliExit.CANCELLED
    if state == "lost":
        print(
            f"air wait: session {sid} stopped without finishing (its runtime died): "
            f"`air resume --session {sid}` finishes it",
            file=sys.stderr,
        )
        return CliExit.FAILED
    run.consume()
    print(_describe(local_root, run), file=sys.stderr)
    return int(run.exit_code or 0)


def run_wait(args: dict[str, Any]) -> int:
    """``air wait SID``: wait for the batch's end. Returns its exit code (130: Ctrl-C, the
    batch goes on; 1: its runtime died without finishing)."""
    return _guarded(_wait, args)


def _cancel(args: dict[str, Any]) -> int:
    from air.contracts.error import CliExit

    _local_root, run = _run_of(args)
    sid = run.session_id
    if run.state != "running":
        print(f"air cancel: session {sid} is not running ({run.state})", file=sys.stderr)
        return CliExit.FAILED
    try:
        os.kill(int(run.record["pid"]), signal.SIGTERM)  # identity checked by run.state above
    except ProcessLookupError:  # it ended meanwhile
        print(f"air cancel: session {sid} is not running (finished)", file=sys.stderr)
        return CliExit.FAILED
    print(
        f"air cancel: session {sid} is cancelling (`air wait {sid}` for its end)",
        file=sys.stderr,
    )
    return CliExit.OK


def run_cancel(args: dict[str, Any]) -> int:
    """``air cancel SID``: cancel that background run cooperatively (its SIGTERM)."""
    return _guarded(_cancel, args)
