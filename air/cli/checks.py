"""What a headless run or resume checks before it creates anything, and where it runs.

Owns: ``refusals`` (git on PATH, the bubblewrap sandbox, a writable ``~/.air``, an existing
``--project``, a writable ``--junit``: every missing piece is said, never a silent unsandboxed
mode), ``say_uncommitted`` (the warning that a run's worktree tasks will not see the project's
uncommitted changes), ``check_git``, ``check_air_home``, ``check_writable``,
``session_to_resume`` (the project and session ``air resume`` continues; creates nothing) and
``open_project`` (the project a new run uses, initialised on first use).
"""

from __future__ import annotations

import os
from typing import Any

from air.cli.options import HeadlessOptions, bad

__all__ = [
    "check_air_home",
    "check_git",
    "check_writable",
    "open_project",
    "refusals",
    "say_uncommitted",
    "session_to_resume",
    "uncommitted_warning",
]

UNCOMMITTED_LISTED = 5
"""How many of the uncommitted files the warning names."""


def refusals(options: HeadlessOptions, sandbox: Any = None) -> list[Any]:
    """Every reason the run cannot start here (AirExceptions; empty: it can). ``sandbox``: a
    ``SandboxProbe`` started earlier (its ``result`` is the sandbox check)."""
    from air.contracts.error import AirException
    from air.tools.shell import check_sandbox_available

    problems = []
    # no git or no sandbox, no run (never a silent unsandboxed mode): say every missing tool
    for check in (check_git, check_sandbox_available if sandbox is None else sandbox.result):
        try:
            check()
        except AirException as refused:
            problems.append(refused)
    if not problems:
        try:
            _check_environment(options)  # an existing --project, a writable --junit
        except AirException as refused:
            problems.append(refused)
    return problems


def say_uncommitted(options: HeadlessOptions, specs: list[Any]) -> list[Any]:
    """Say ``uncommitted_warning`` on the run's stderr when one of ``specs`` writes (a reviewer
    or a task with an empty write area runs in the project itself and sees everything);
    returns ``specs``."""
    from air.contracts.task import TaskType

    read_only = (TaskType.REVIEW, TaskType.MINE_EXPERIENCE, TaskType.COMPACT)
    if any(s.type not in read_only and s.scope.write_area != [] for s in specs):
        import trio

        warning = trio.run(uncommitted_warning, options.project, options.isolation)
        if warning is not None:
            print(f"air: warning: {warning}", file=options.stderr)
    return specs


async def uncommitted_warning(project: str, isolation: str) -> str | None:
    """What to say when writers work in worktrees (a git project, ``--isolation`` auto or
    worktree) and the project has uncommitted changes (tracked files changed, files git does
    not ignore and does not track yet; not air's own ``.air/``): a worktree starts from the
    last commit, so its task does not see them, and a task that changes one of them is not
    merged until they are committed or stashed (git refuses to overwrite them). In a
    repository with no commit yet there is no worktree to give: a writer works in the project
    itself (or a copy), and the warning says that and how to have worktrees. None when there
    is nothing to say or git cannot tell (no git). ``git status`` may
    read files through the repository's filters: it runs as every air git does, hardened, its
    drivers made inert (a poisoned repository runs nothing of its own here)."""
    from air.contracts.display import shown
    from air.contracts.error import AirException
    from air.workspace.gitsafe import locate_git, run_git

    if isolation not in ("auto", "worktree") or not _has_git(project):
        return None
    try:
        status = await run_git(
            locate_git(project, project_root=project),
            "status",
            "--porcelain=v1",
            "--branch",
            "-z",
            "--untracked-files=normal",
            "--ignore-submodules=all",
        )
    except (AirException, OSError):
        return None
    if status.returncode != 0:
        return None
    names, entries = [], iter(os.fsdecode(status.stdout).split("\0"))
    if next(entries, "").startswith("## No commits yet"):
        return (
            "the project's git repository has no commit yet, so its tasks get no worktree: a "
            "task that writes works in a copy, or in the project itself when it may write all of "
            "it; commit once to give each task a worktree"
        )
    for entry in entries:
        if len(entry) > 3:
            if entry[3:] != ".air/" and not entry[3:].startswith(".air/"):  # air's own
                names.append(entry[3:])
            if entry[0] in "RC":
                next(entries, None)  # a rename's or copy's source follows its entry
    if not names:
        return None
    listed = ", ".join(shown(n) for n in names[:UNCOMMITTED_LISTED])
    more = f" and {len(names) - UNCOMMITTED_LISTED} more" if len(names) > UNCOMMITTED_LISTED else ""
    count = f"{len(names)} file{'s' if len(names) != 1 else ''}"
    return (
        f"the project has uncommitted changes ({count}: {listed}{more}); its tasks start from "
        "the last commit and do not see them, and a task that changes one of them is not "
        "merged until they are committed or stashed"
    )


def _has_git(project: str) -> bool:
    return os.path.lexists(os.path.join(project, ".git"))


def check_git() -> None:
    """git on PATH (checked first: without it nothing else about the run matters)."""
    import shutil

    if shutil.which("git") is None:
        raise bad(
            "config_error",
            "git is not installed (no `git` on PATH): air keeps every task's work in git",
            "Install git (e.g. `apt-get install git`) or put it on PATH, and run again.",
            field="PATH",
        )


def _check_environment(options: HeadlessOptions) -> None:
    """git on PATH, a writable ``~/.air``, an existing ``--project`` directory, a writable
    ``--junit`` path."""
    check_git()
    check_air_home()
    if not os.path.isdir(options.project):
        what = "is not a directory" if os.path.exists(options.project) else "does not exist"
        raise bad(
            "not_found",
            f"--project {options.project}: {what}",
            "Pass --project with an existing directory (or run air from inside it).",
            file=options.project,
            field="--project",
        )
    if options.junit:
        check_writable(options.junit, "--junit")


def check_air_home() -> None:
    """``~/.air`` (the worker slots, trust decisions, logs every project shares) is a directory
    air can write, made if missing. Found: with ``HOME=/nonexistent`` (a service account's,
    ``nobody``'s) a run recorded its session and first task, then ended ``os_error:
    /nonexistent: Permission denied`` at the task's worker."""
    from air.air_home import air_home, home_is_relative, make_air_home

    home, path = os.path.expanduser("~"), air_home()
    reason = None
    if home_is_relative():
        home, reason = repr(os.environ["HOME"]), "HOME is not an absolute path"
    else:
        try:
            make_air_home()
            if not os.access(path, os.W_OK | os.X_OK):
                reason = "it is not writable"
        except OSError as exc:
            reason = exc.strerror or str(exc)
    if reason is not None:
        raise bad(
            "environment_error",
            f"air keeps what all projects share (worker slots, trust, logs) in {path} "
            f"(HOME={home}), and cannot use it: {reason}",
            f"Set HOME to a directory you can write (a service account: one kept between runs), "
            f"or make {path} a directory you can write, and run again.",
            file=path,
            field="HOME",
        )


def check_writable(path: str, option: str) -> None:
    parent = os.path.dirname(os.path.abspath(path)) or "."
    reason = None
    if os.path.isdir(path):
        reason = "is a directory"
    elif not os.path.isdir(parent):
        reason = f"its directory {parent} does not exist"
    elif not os.access(parent, os.W_OK):
        reason = f"its directory {parent} is not writable"
    else:
        probe = path + ".tmp"  # a file can be made beside it (the report is, then renamed)
        try:
            with open(probe, "x", encoding="utf-8"):
                pass
            os.unlink(probe)
        except FileExistsError:
            pass
        except OSError as exc:
            reason = f"cannot be written ({exc.strerror or exc})"
    if reason is not None:
        raise bad(
            "validation_error",
            f"{option} {path}: {reason}",
            f"Pass {option} with a file path in an existing, writable directory.",
            file=path,
            field=option,
            reason=reason,
        )


def session_to_resume(store: Any, options: HeadlessOptions) -> tuple[Any, str]:
    """The project and the session ``air resume`` continues; creates nothing, and reads nothing
    of a ``.air/local`` another made (the session's hosts are read next, from its log).

    Raises:
        AirException: ``not_found`` outside a project, for an unknown ``--session`` or when
            the project has no session; ``untrusted_config`` for another's ``.air/local``
            (a link, a clone's, a copy's).
    """
    from air.session.local_owner import refuse_foreign_state
    from air.session.manager import list_session_ids
    from air.workspace.tracked_state import refuse_tracked_state

    project = store.locate(options.project)
    if project is None:
        raise bad(
            "not_found",
            f"no air project at {options.project} or above it: nothing to resume",
            "Run `air resume` inside the project (or pass --project PATH).",
            file=options.project,
            field="--project",
        )
    # as the runtime does, before its sessions are listed or read: never a clone's nor a copy's
    # (IMPL-TRUST-3; ``locate`` refused a link)
    refuse_tracked_state(project.project_root)
    refuse_foreign_state(project.project_root)
    known = list_session_ids(project)
    if options.session_id is not None:
        if options.session_id not in known:
            raise bad(
                "not_found",
                f"--session {options.session_id!r}: no such session in {project.project_root}",
                "Pick a session id from `air session list`.",
                field="--session",
            )
        return project, options.session_id
    if not known:
        raise bad(
            "not_found",
            f"no session to resume in {project.project_root}",
            "Start one with `air run --headless BATCH`.",
            field="--session",
        )
    # the latest session no live air process runs (the one that stopped, not another air's
    # that is running now); if every one runs, the latest, whose claim then says so
    from air.supervision.runs import session_lock_held

    for sid in reversed(known):  # newest first: a project's older sessions are not probed
        if not session_lock_held(project.project_root, sid):
            return project, sid
    return project, known[-1]


def open_project(store: Any, root: str) -> Any:
    """The air project at ``root`` (initialised on first use)."""
    project = store.locate(root)
    if project is None or os.path.realpath(project.project_root) != os.path.realpath(root):
        project = store.initialize(root)
    return project
