"""The program search path air and everything it starts outside the sandbox use.

Owns ``absolute_search_path`` (``PATH`` without its empty, ``.`` or other relative entries)
and ``installed`` (a program looked up on it). A
relative entry names the directory a program is started in: ``PATH=:/usr/bin`` (an unset
variable before a colon, a common slip) made air's own ``git``, run in a task's worktree or in
a cloned project, execute a ``git`` file the task or the repository put there, outside the
sandbox and as the user; ``shutil.which("bwrap")`` found a planted ``bwrap`` the same way.
Standard library only: the ``air`` command applies it to its own environment first thing
(IMPL-PATH-1), and ``air.workspace.gitsafe`` to every git environment.
"""

from __future__ import annotations

import os

__all__ = ["absolute_search_path", "installed"]


def absolute_search_path(path: str | None) -> str:
    """``path`` (a ``PATH`` value) with only its absolute entries, in order; ``os.defpath``'s
    absolute entries when none is left (or ``path`` is None)."""
    entries = [e for e in (path or "").split(os.pathsep) if os.path.isabs(e)]
    if not entries:
        entries = [e for e in os.defpath.split(os.pathsep) if os.path.isabs(e)]
    return os.pathsep.join(entries)


def installed(program: str) -> str | None:
    """The absolute path of ``program`` on ``absolute_search_path(PATH)``, or None."""
    import shutil  # not at ``air --version``'s start

    return shutil.which(program, path=absolute_search_path(os.environ.get("PATH")))
