"""The options of ``air run --headless`` and ``air resume``, parsed and reported.

Owns: ``HeadlessOptions`` (docopt's dict after translation), ``parse_options`` (a bad
``--max-workers``/``--isolation``/``--permission-mode`` or ``--record`` with ``--cassette`` is
refused here, before anything exists), ``project_root_for`` (which project a command run in a
subdirectory works on), ``RunnerFactory`` (how tests inject a fake TaskRunner),
``bad`` (an ``AirException`` for the user's input) and ``report_bad_input``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from air.contracts.error import AirException

__all__ = [
    "HeadlessOptions",
    "RunnerFactory",
    "bad",
    "parse_options",
    "project_root_for",
    "report_bad_input",
]


KEPT_OPTIONS = ("--isolation", "--permission-mode", "--branch", "--review")
"""The run options ``session.created`` records and ``air resume`` keeps unless given again
(``air.cli.resumed``, IMPL-RESUME-2)."""

RunnerFactory = Callable[["HeadlessOptions", Any, str], tuple[Any, Callable[[], None] | None]]
"""``factory(options, session, project_root) -> (runner, warm_up)``: how tests inject a fake
``TaskRunner`` through ``air.cli.main(argv, runner_factory=...)``. A runner so made keeps no
durable run records, so no orphan is reaped for it."""


@dataclass(eq=False)
class HeadlessOptions:
    """The options of ``air run --headless`` and ``air resume`` after parsing."""

    project: str
    batch: str | None = None
    prompt: str | None = None
    """``-p PROMPT``: one task made from the prompt instead of a batch file."""
    session_id: str | None = None
    provider: str | None = None
    model: str | None = None
    """``--model NAME``: the run's model (``air.llm.model_choice``)."""
    cassette: str | None = None
    record: str | None = None
    max_workers: int | None = None
    permission_mode: str = "default"
    isolation: str = "auto"
    branch: str | None = None
    """``--branch NAME``: the run's merges land on this branch of the project."""
    review: bool = False
    given: frozenset[str] = frozenset()
    """Which of ``KEPT_OPTIONS`` the command line gave: for ``air resume`` those win over what
    the run recorded."""
    kept: tuple[str, ...] = ()
    """What ``air resume`` took from the run (``--review``, ``--branch NAME``, ...): said at
    its start."""
    json_stream: bool = False
    junit: str | None = None
    runner_factory: RunnerFactory | None = None
    """Builds the TaskRunner instead of the real workers (tests only; never from argv)."""
    spare: Any = None
    """A worker started ahead (``air.ipc.spare.SpareWorker``) for the first task."""
    host: str | None = None
    """``--host NAME``: the run's tasks go to that host (IMPL-REMOTE-6)."""
    remote: Any = None
    """The run's ``air.nursery.remote_tasks.RemotePlan`` (``air.cli.hosts_plan``), or None."""
    stderr: IO[str] = field(default_factory=lambda: sys.stderr)
    stdout: IO[str] = field(default_factory=lambda: sys.stdout)


def bad(kind: str, message: str, user_action: str, **metadata: Any) -> Any:
    """An ``AirException`` of ``kind`` for the user's input, with what to do about it."""
    from air.contracts.error import AirException

    return AirException.of(kind=kind, message=message, user_action=user_action, metadata=metadata)


def project_root_for(explicit: str | None) -> str:
    """``--project`` as given; without it, the project a command run here works on, as git
    finds its repository from a subdirectory: the nearest directory at or above the current
    one holding an air project or a git repository, below the home directory (which is no
    project's place: started there, the project store refuses it); else the current one."""
    from air.session.local_state import home_or_above

    if explicit:
        return os.path.abspath(explicit)
    start = current = os.getcwd()
    while not (
        os.path.isfile(os.path.join(current, ".air", "shared", "project.json"))
        or os.path.lexists(os.path.join(current, ".git"))
    ):
        parent = os.path.dirname(current)
        if parent == current or home_or_above(parent) is not None:
            return start
        current = parent
    return current


def parse_options(
    args: dict[str, Any], *, runner_factory: RunnerFactory | None = None, spare: Any = None
) -> HeadlessOptions:
    """Translate docopt's dict (and what ``air.cli.main`` was given) into HeadlessOptions.

    Raises:
        AirException: ``validation_error`` for a bad ``--max-workers``/``--isolation``/mode.
    """
    max_workers = args.get("--max-workers")
    workers: int | None = None
    if max_workers is not None:
        try:
            workers = int(max_workers)
        except ValueError:
            workers = 0
        if workers < 1:
            raise bad(
                "validation_error",
                f"--max-workers must be a positive integer, not {max_workers!r}",
                "Pass --max-workers N with N >= 1.",
            )
    isolation = args.get("--isolation") or "auto"
    if isolation not in ("auto", "main", "worktree", "isolated_copy"):
        raise bad(
            "validation_error",
            f"--isolation must be auto, main, worktree or isolated_copy, not {isolation!r}",
            "Pick one of: auto, main, worktree, isolated_copy.",
        )
    branch = args.get("--branch")
    if branch is not None:
        _check_branch(str(branch), project_root_for(args.get("--project")))
    if args.get("--record") and args.get("--cassette"):
        raise bad(
            "validation_error",
            "--record and --cassette exclude each other",
            "Record against a real provider, or replay a cassette; not both.",
        )
    if args.get("--model") and args.get("--cassette"):
        raise bad(
            "validation_error",
            "--model and --cassette exclude each other",
            "A cassette replays its recorded turns; pass --model for a real provider only.",
        )
    mode = args.get("--permission-mode") or "default"
    if mode not in ("default", "allow-ask"):
        raise bad(
            "validation_error",
            f"unknown --permission-mode {mode!r}",
            "Pick default (a question fails closed) or allow-ask.",
        )
    return HeadlessOptions(
        project=project_root_for(args.get("--project")),
        batch=args.get("BATCH"),
        prompt=args.get("--prompt"),
        session_id=args.get("--session"),
        provider=args.get("--provider"),
        model=args.get("--model"),
        cassette=args.get("--cassette"),
        record=args.get("--record"),
        max_workers=workers,
        permission_mode=mode,
        isolation=isolation,
        branch=branch,
        review=bool(args.get("--review")),
        given=frozenset(name for name in KEPT_OPTIONS if args.get(name)),
        json_stream=bool(args.get("--json")),
        junit=args.get("--junit"),
        runner_factory=runner_factory,
        spare=spare,
        host=args.get("--host"),
    )


def _check_branch(name: str, project: str) -> None:
    """``--branch NAME``: a name git accepts for a branch, in a project that is a repository.

    Raises:
        AirException: ``validation_error`` otherwise (before anything is created).
    """
    import subprocess

    if not os.path.lexists(os.path.join(project, ".git")):
        raise bad(
            "validation_error",
            f"--branch needs a git repository, and {project} is none",
            "Run `git init` there (and commit), or leave out --branch.",
        )
    done = subprocess.run(
        ["git", "check-ref-format", "--branch", name],
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_NOSYSTEM": "1"},
        check=False,
    )
    if done.returncode != 0 or name.startswith("-") or name.startswith("air/ws/"):
        raise bad(
            "validation_error",
            f"--branch {name!r} is not a branch name air can use",
            "Pick a plain branch name, e.g. --branch air-run-1 (not under air/ws/).",
        )


def report_bad_input(exc: Any, stream: IO[str]) -> None:
    """Print an AirException as ``air: <message>`` plus what to do (message has file:line).
    Each part is exact text (``shown``): a message quotes what a project's file or a task
    wrote, and a terminal must not render its escape sequences; a later line of a part is
    indented under it, so no part can forge the next."""
    from air.contracts.display import shown

    def exact(text: str) -> str:
        return shown(text, keep_lines=True).replace("\n", "\n    ")

    print(f"air: {exc.kind.value}: {exact(exc.error.message)}", file=stream)
    if exc.error.detail:
        print(f"  detail: {exact(exc.error.detail)}", file=stream)
    if exc.user_action:
        print(f"  what to do: {exact(exc.user_action)}", file=stream)


def reported_exit(exc: AirException, stream: IO[str]) -> int:
    """A user's problem printed to ``stream`` (``report_bad_input``); its exit code. Errors
    reach the front ends one at a time: ``open_runtime`` translates exception groups at its
    edge (``air.nursery.runtime.one_error``), so nothing here unwraps one."""
    from air.contracts.error import exit_code_for

    report_bad_input(exc, stream)
    return exit_code_for(exc)
