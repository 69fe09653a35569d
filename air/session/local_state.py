"""air's own directories in a project are never links (IMPL-TRUST-3).

Owns ``SHARED_DIRS`` and ``LOCAL_DIRS`` (the folders air keeps in ``.air/shared`` and
``.air/local``) and ``check_local_state``, which ``ProjectStore`` runs before it creates or opens
anything under a project's ``.air``: ``.air``, ``.air/shared``, ``.air/local`` and those folders
must be real directories, and no entry of ``.air/local`` or ``.air/local/state`` may be a link.
A repository that ships ``.air/local -> /elsewhere`` would otherwise have air write its session
databases, backups of the user's work and worktrees there, and read the sessions and knowledge
of whatever the link names. (That the commit holds nothing under ``.air/local`` is
``air.workspace.tracked_state``'s check.) Also owns ``home_or_above``: the user's home
directory and those above it are never a project's place (``ProjectStore`` refuses them).
Standard library only at import: the light readers (``air history``) look without pydantic.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable

__all__ = ["LOCAL_DIRS", "SHARED_DIRS", "check_local_state", "home_or_above", "local_state_links"]

SHARED_DIRS = ("rules", "plan", "plan/docs")
LOCAL_DIRS = ("sessions", "state", "backups", "workspaces", "tmp", "locks")


def home_or_above(path: str) -> str | None:
    """The user's home directory (real path) when ``path`` is it or a directory above it;
    None for any other directory."""
    home = os.path.realpath(os.path.expanduser("~"))
    real = os.path.realpath(path)
    return home if home == real or home.startswith(real.rstrip("/") + "/") else None


def _own_dirs() -> Iterable[str]:
    yield ".air"
    yield ".air/shared"
    for sub in SHARED_DIRS:
        yield f".air/shared/{sub}"
    yield ".air/local"
    for sub in LOCAL_DIRS:
        yield f".air/local/{sub}"


_NO_LINKS_IN = (".air/local", ".air/local/state")
"""Where air makes folders and files as it needs them (``doctor/``, ``quarantine/``, ``mcp/``,
the knowledge databases, ``state/runs/``): no entry there may be a link."""


def local_state_links(root: str) -> str | None:
    """The first of air's own directories under ``root`` that exists as anything but a real
    directory (a symbolic link, a file), or the first link among the entries of
    ``_NO_LINKS_IN``, relative to ``root``; None when there is none."""
    for rel in _own_dirs():
        try:
            mode = os.lstat(os.path.join(root, rel)).st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISDIR(mode):
            return rel
    for rel in _NO_LINKS_IN:
        try:
            with os.scandir(os.path.join(root, rel)) as entries:
                for entry in entries:
                    if entry.is_symlink():
                        return f"{rel}/{entry.name}"
        except (FileNotFoundError, NotADirectoryError):
            continue
    return None


def check_local_state(root: str) -> None:
    """Refuse a project whose ``.air`` trees a link (or a file) stands in for. ``root``: the
    project's absolute path.

    Raises:
        AirException: ``untrusted_config`` naming the link and how to remove it.
    """
    link = local_state_links(root)
    if link is None:
        return
    from air.contracts.error import AirException

    where = os.path.join(root, link)
    target = f"a link to {os.readlink(where)!r}" if os.path.islink(where) else "a file"
    raise AirException.of(
        kind="untrusted_config",
        message=(
            f"{link} is {target} where air keeps its own state: air never follows what a "
            "project put there"
        ),
        user_action=(
            f"Remove it: `rm {where}` (when the repository holds it, `git -C {root} rm -q "
            f"--cached {link}` and commit that too); air makes the directory on the next run."
        ),
    )
