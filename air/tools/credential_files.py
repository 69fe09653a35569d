"""The user's credential files in a workspace and a task's denied paths: no command sees them.

Owns ``credential_files`` (the files and directories of a workspace named like credentials by
the PathClassifier — ``.env``, ``.netrc``, ``*.pem``, ``credentials.json``, ``.aws/`` ... — and
the directories a home keeps credentials in (``.config/gh/``, ``.mozilla/``) that git does not
track: the user's own secrets beside the project) and ``hidden_credentials`` (those
a command of one tool call may not see: all of them but the ones its permission decision let it
read or write, with a sensitive grant or rule), and ``hidden_from_commands`` (those and the
task's denied paths below its workspace, and then its ``.git``: all a command may not see).
The sandbox binds ``/dev/null`` over each such file and an empty read-only tmpfs over each such
directory (``SandboxRunner.argv``); ``git.commit`` takes the credential files back out of what
it added.

Why: ``fs.read .env`` asks as sensitive, but ``grep -r KEY .``, ``cat .en*``, ``make`` or a test
read the file without naming it, and the analyzer cannot know; hiding the file is the one check
that holds for every command. A tracked file is in the repository's history, which any command
may read with ``git show`` (and builds need their fixtures: ``tests/certs/server.pem``), so it
stays; a task's linked worktree holds only tracked files and what its task made, so it hides
nothing (the project itself may be a linked worktree, the user's own, or a submodule's checkout:
its untracked files are the user's).
Package and build trees (``site-packages``, ``node_modules``, a venv, ``build``) are not the
user's secrets (certifi's ``cacert.pem``) and are not searched. The scan runs in a thread,
through git's own listing of untracked entries where there is a repository, and is kept for
``FRESH_S`` per workspace (IMPL-SBX-3).
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import trio

from air.contracts.error import AirException
from air.security.paths import (
    CREDENTIAL_DIRS,
    in_write_area_entry,
    is_build_dir_name,
    is_within,
    names_credentials,
)
from air.tree_walk import walk
from air.workspace.gitsafe import GitLocation, list_git, locate_git

if TYPE_CHECKING:
    from air.tools.run import ToolRun

__all__ = [
    "FRESH_S",
    "credential_files",
    "forget_scan",
    "hidden_credentials",
    "hidden_from_commands",
]

FRESH_S = 5.0
"""How long one scan of a workspace stands (a credential file the user adds mid-task is hidden
from the next command after this)."""

_PACKAGE_DIRS = frozenset({"site-packages", "dist-packages", ".air", ".git"})
_DIR_TAILS = frozenset(d.rsplit("/", 1)[-1] for d in CREDENTIAL_DIRS)
"""The last names of a home's credential directories: the walk asks about no other."""
_found: dict[tuple[str, bool], tuple[float, tuple[str, ...]]] = {}
_lock = threading.Lock()


def _skipped(name: str) -> bool:
    """A directory that holds packages, build outputs or air's and git's own state."""
    return name in _PACKAGE_DIRS or is_build_dir_name(name)


def _credential_dir(rel: str) -> bool:
    """``rel`` (relative to the workspace) is, or is inside, a directory a home keeps
    credentials in (``.config/gh``, ``.local/share/keyrings``, ``.mozilla``), at any depth (a
    dotfiles repository, a home made a project)."""
    padded = f"/{rel}/"
    return any(f"/{d}/" in padded for d in CREDENTIAL_DIRS)


def _walk(workspace: str, top: str, found: list[str]) -> None:
    """Credential-named files and directories below ``top`` (links are neither followed nor
    listed: a link's target outside the workspace is not in the sandbox at all)."""
    for dirpath, dirnames, filenames in walk(top):
        if "pyvenv.cfg" in filenames:  # a virtual environment, whatever its name
            dirnames[:] = []
            continue
        keep = []
        for name in dirnames:
            full = os.path.join(dirpath, name)
            if os.path.islink(full) or _skipped(name):
                continue
            if names_credentials(name) or (
                name in _DIR_TAILS and _credential_dir(os.path.relpath(full, workspace))
            ):
                found.append(full)
            else:
                keep.append(name)
        dirnames[:] = keep
        for name in filenames:
            full = os.path.join(dirpath, name)
            if names_credentials(name) and not os.path.islink(full):
                found.append(full)


def _untracked(workspace: str) -> list[str] | None:
    """git's untracked entries of ``workspace`` (ignored ones included; a wholly untracked
    directory as one ``dir/``), relative; None when git cannot list them here (no repository).
    A workspace that is a subdirectory of a repository (a monorepo's project) has no ``.git``
    of its own: git finds the repository itself, read-only, through air's hardened git."""
    location: GitLocation | None = None
    if os.path.lexists(os.path.join(workspace, ".git")):  # a directory, or a worktree's file
        try:
            location = locate_git(workspace, project_root=workspace)
        except AirException:
            location = None
    listing = ("ls-files", "-z", "--others", "--directory", "--no-empty-directory")
    try:
        done = list_git(location, *listing, cwd=workspace, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return None  # no git here after all, or it hung: the walk finds the same files
    if done.returncode != 0:
        return None
    return [e.decode("utf-8", "surrogateescape") for e in done.stdout.split(b"\0") if e]


def _scan(workspace: str, task_worktree: bool) -> tuple[str, ...]:
    dot_git = os.path.join(workspace, ".git")
    if task_worktree and os.path.isfile(dot_git) and not os.path.islink(dot_git):
        return ()  # a task's linked worktree: tracked files and its task's own
    entries = _untracked(workspace)
    found: list[str] = []
    if entries is None:
        _walk(workspace, workspace, found)
        return tuple(found)
    for entry in entries:
        full = os.path.normpath(os.path.join(workspace, entry))
        if full == workspace:  # the whole workspace is untracked (a repository around it)
            _walk(workspace, workspace, found)
            continue
        name = os.path.basename(full)
        parent = os.path.relpath(os.path.dirname(full), workspace).split(os.sep)
        if os.path.islink(full) or any(_skipped(p) for p in parent) or _skipped(name):
            continue
        if names_credentials(name) or _credential_dir(os.path.relpath(full, workspace)):
            found.append(full)
        elif entry.endswith("/") and not os.path.isfile(os.path.join(full, "pyvenv.cfg")):
            _walk(workspace, full, found)
    return tuple(found)


def credential_files(workspace: str, project_root: str | None = None) -> tuple[str, ...]:
    """The untracked credential files and directories of ``workspace`` (a real path), as real
    paths; the last scan's answer while it is younger than ``FRESH_S``. A linked worktree
    that is not ``project_root`` is a task's (tracked files and its own): nothing is hidden
    there; the project itself may be the user's own linked worktree or a submodule's checkout
    (a ``.git`` file too), which holds the user's untracked files like any project. Blocking:
    call it in a thread."""
    task_worktree = project_root is not None and os.path.realpath(project_root) != workspace
    key = (workspace, task_worktree)
    now = time.monotonic()
    with _lock:
        kept = _found.get(key)
    if kept is not None and now - kept[0] < FRESH_S:
        return kept[1]
    found = _scan(workspace, task_worktree)
    with _lock:
        _found[key] = (now, found)
    return found


def forget_scan(workspace: str) -> None:
    """Drop the kept scan of ``workspace`` (a real path): the next one looks again."""
    with _lock:
        for task_worktree in (False, True):
            _found.pop((workspace, task_worktree), None)


async def hidden_credentials(
    workspace: str, project_root: str, revealed: Sequence[str] = ()
) -> tuple[str, ...]:
    """What a command in ``workspace`` (of the project at ``project_root``) may not see: its
    credential files but those ``revealed`` (the credential paths the call's permission
    decision allowed it to read; a tree read ``DIR/**`` reveals what is below ``DIR``)."""
    found = await trio.to_thread.run_sync(
        lambda: credential_files(os.path.realpath(workspace), project_root)
    )
    shown = [r.removesuffix("/**") for r in revealed]
    return tuple(p for p in found if not any(is_within(p, r) for r in shown))


async def hidden_from_commands(run: ToolRun) -> tuple[str, ...]:
    """What a command of ``run`` may not see: its workspace's credential files but those its
    permission decision revealed (``hidden_credentials``), and the task's denied paths below
    the workspace (a glob's matches). The analyzer refuses a command naming a denied path, but
    not ``cat */*``, ``grep -r``, or a build that reads one: hidden, none of them sees it."""
    workspace = run.workspace_realpath
    found = await hidden_credentials(workspace, run.context.project_root, run.revealed)
    denied = run.denied
    if not denied:
        return found
    present = await trio.to_thread.run_sync(_present, workspace, denied)
    # git's objects hold every tracked version of a denied file (`git show HEAD:secrets/x`,
    # `git log -p`, one deleted long ago): a task denied paths gets no git metadata in its
    # commands (hiding the .git also leaves a worktree's main git dir unbound: SandboxRunner);
    # git.status, git.diff and git.log stay, withholding them
    return tuple(dict.fromkeys((*found, *present, os.path.join(workspace, ".git"))))


def _present(workspace: str, places: Sequence[str]) -> list[str]:
    """The entries below ``workspace`` that ``places`` (resolved denied paths) name, by the
    merge's rule (``in_write_area_entry``): a glob's from the directory before its first
    wildcard down, a matching directory whole (not entered)."""
    found: list[str] = []
    for place in places:
        if place == workspace or not is_within(place, workspace):
            continue
        if not any(ch in place for ch in "*?["):
            found.extend([place] if os.path.lexists(place) else [])
            continue
        top = place[: min(place.find(ch) for ch in "*?[" if ch in place)].rpartition("/")[0]
        for dirpath, dirnames, filenames in walk(top or workspace):
            kept = []
            for name in dirnames:
                full = os.path.join(dirpath, name)
                if in_write_area_entry(full, place):
                    found.append(full)
                else:
                    kept.append(name)
            dirnames[:] = kept
            found.extend(
                full
                for full in (os.path.join(dirpath, name) for name in filenames)
                if in_write_area_entry(full, place)
            )
    return [path for path in found if is_within(path, workspace)]
