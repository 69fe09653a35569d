"""Where air and everything it starts outside the sandbox find programs, modules, libraries.

Owns ``absolute_search_path`` (``PATH`` without its empty, ``.`` or other relative entries),
``installed`` (a program looked up on it), ``absolute_python_path`` (the same for
``PYTHONPATH`` and ``LD_LIBRARY_PATH``), ``own_search_paths`` (applied to air's own process)
and ``dropped`` (what it left out, for ``air doctor``). A relative entry names the directory
a program is started in: ``PATH=:/usr/bin`` (an unset variable before a colon, a common slip)
made air's own ``git``, run in a task's worktree or in a cloned project, execute a ``git``
file the task or the repository put there, outside the sandbox and as the user;
``shutil.which("bwrap")`` found a planted ``bwrap`` the same way; and ``PYTHONPATH=:/opt/lib``
made a worker, started in its task's worktree, import a ``trio.py`` an earlier task had
written there. Standard library only: the ``air`` command applies ``own_search_paths`` first
thing (IMPL-PATH-1), ``air.workspace.gitsafe`` the first to every git environment,
``air.ipc.environment`` both to every worker's.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not typing's: nothing is imported before own_search_paths runs
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "absolute_python_path",
    "absolute_search_path",
    "dropped",
    "installed",
    "own_search_paths",
]

_DROPPED: dict[str, str] = {}


def _absolute(value: str | None) -> list[str]:
    return [e for e in (value or "").split(os.pathsep) if os.path.isabs(e)]


def absolute_search_path(path: str | None) -> str:
    """``path`` (a ``PATH`` value) with only its absolute entries, in order; ``os.defpath``'s
    absolute entries when none is left (or ``path`` is None)."""
    return os.pathsep.join(_absolute(path) or _absolute(os.defpath))


def absolute_python_path(value: str | None) -> str | None:
    """``value`` (a ``PYTHONPATH``, an ``LD_LIBRARY_PATH``) with only its absolute entries;
    None when none is left."""
    return os.pathsep.join(_absolute(value)) or None


def installed(program: str) -> str | None:
    """The absolute path of ``program`` on ``absolute_search_path(PATH)``, or None."""
    import shutil  # not at ``air --version``'s start

    return shutil.which(program, path=absolute_search_path(os.environ.get("PATH")))


def own_search_paths() -> None:
    """Keep only absolute ``PATH``, ``LD_LIBRARY_PATH`` and ``PYTHONPATH`` entries (and an
    absolute ``TMPDIR``) in this process's environment (what every child inherits), and drop
    from ``sys.path`` the directories the interpreter made of ``PYTHONPATH``'s relative entries
    (the start directory: a project's top), so no module air imports from here on comes from
    there. What Python imported, and the loader loaded, before air ran (a
    ``sitecustomize.py`` there) is beyond air: ``air doctor`` says so."""
    _narrow("PATH", absolute_search_path)
    # the loader read LD_LIBRARY_PATH when this process started (said by the doctor); its
    # children (an MCP server, a hook) never get a library from the directory they start in
    _narrow("LD_LIBRARY_PATH", absolute_python_path)
    # a relative TMPDIR is the start directory: an ssh control socket would be made there
    _narrow("TMPDIR", lambda value: value if os.path.isabs(value) else None)
    value = os.environ.get("PYTHONPATH")
    if value is None or not _narrow("PYTHONPATH", absolute_python_path):
        return
    entries = value.split(os.pathsep)
    made = {os.path.abspath(e) for e in entries if not os.path.isabs(e)}
    made -= {os.path.normpath(e) for e in entries if os.path.isabs(e)}
    sys.path[:] = [p for p in sys.path if not p or os.path.abspath(p) not in made]


def _narrow(name: str, narrowed: Callable[[str], str | None]) -> bool:
    """Replace the variable ``name`` with ``narrowed`` of it (None: unset it), noting its
    value before in ``dropped``; False when it is unset or already narrow."""
    value = os.environ.get(name)
    if value is None:
        return False
    kept = narrowed(value)
    if kept == value:
        return False
    _DROPPED.setdefault(name, value)
    if kept is None:
        del os.environ[name]
    else:
        os.environ[name] = kept
    return True


def dropped() -> dict[str, str]:
    """Each variable ``own_search_paths`` changed in this process, with its value before."""
    return dict(_DROPPED)
