"""The project's commit holds nothing under ``.air/local`` (IMPL-TRUST-3).

Owns ``refuse_tracked_state``, which the runtime runs before it opens a session and ``air
memory`` before it reads the knowledge databases. air makes ``.air/local`` itself and ignores it
(``.gitignore``). One that came with a clone (it is in ``HEAD``) holds session databases air
never wrote (sessions it never ran, tasks it never planned, offered for resuming) and knowledge
databases whose "fixes" would reach a debugger's prompt and, repeated, be promoted into a rule
file air trusts; and a task's merge can check ``HEAD``'s ``.air/local`` out over air's own
(seen: the session's worktrees deleted mid-run). A project
that is no git repository, or has no commit yet, has nothing to ask (its trees are still checked
for links: ``air.session.local_state``). git is asked once per project and process, through
air's hardened git (``gitsafe``): a clone's own configuration runs nothing.
"""

from __future__ import annotations

import os

from air.contracts.error import AirException
from air.workspace.gitsafe import GitLocation, list_git, locate_git

__all__ = ["refuse_tracked_state", "tracked_state"]

_UNTRACKED: set[str] = set()
"""Project roots (real paths) whose ``HEAD`` held nothing under ``.air/local``, in this process."""


def tracked_state(root: str) -> str | None:
    """The first path under ``root/.air/local`` in the project's ``HEAD``; None when there is
    none, ``root`` holds no repository of its own, or it has no commit yet.

    Raises:
        AirException: ``workspace_error`` when git cannot list the files.
    """
    if not os.path.lexists(os.path.join(root, ".git")):
        return None
    try:
        location: GitLocation | None = locate_git(root, project_root=root)
    except AirException:
        location = None  # a layout air's worktrees refuse: git finds it, read-only
    listing = ("ls-tree", "-r", "-z", "--name-only", "HEAD", "--", ".air/local")
    done = list_git(location, *listing, cwd=root)
    if (
        done.returncode != 0
        and list_git(location, "rev-parse", "-q", "--verify", "HEAD", cwd=root).returncode
    ):
        return None  # no commit yet: nothing came with it
    if done.returncode != 0:
        raise AirException.of(
            kind="workspace_error",
            message=f"git cannot list the files of {root}",
            detail=done.stderr.decode("utf-8", "replace")[-2000:],
            user_action="Check the project's repository with `git status`, then run again.",
        )
    first = done.stdout.split(b"\0", 1)[0]
    return first.decode("utf-8", "replace") if first else None


def refuse_tracked_state(root: str) -> None:
    """Refuse a project whose ``HEAD`` holds anything under ``.air/local``. ``root``: the project's
    absolute path.

    Raises:
        AirException: ``untrusted_config`` naming the committed path and how to put the tree
            aside; ``workspace_error`` as ``tracked_state``.
    """
    real = os.path.realpath(root)
    if real in _UNTRACKED:
        return
    tracked = tracked_state(root)
    if tracked is not None:
        raise AirException.of(
            kind="untrusted_config",
            message=(
                f"the repository holds {tracked}: this .air/local came with it, and air only "
                "uses the sessions and knowledge it recorded itself"
            ),
            user_action=(
                f"Take it out of the repository and put it aside: `git -C {root} rm -r -q "
                f"--cached .air/local`, commit that, then `mv {root}/.air/local "
                f"{root}/.air/local.from-git` and run again."
            ),
        )
    _UNTRACKED.add(real)
