"""The environment a worker process starts with: an allowlist (IMPL-SBX-4).

Owns ``WORKER_ENV_ALLOWLIST`` and ``worker_environment``. Standard library only, so the spare
worker (``air.ipc.spare``, started before the parent imports Trio) builds the same environment
as every other worker.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from air.search_path import absolute_python_path, absolute_search_path

__all__ = ["WORKER_ENV_ALLOWLIST", "worker_environment"]

WORKER_ENV_ALLOWLIST = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TZ",
    "TMPDIR",
    "VIRTUAL_ENV",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONNOUSERSITE",
    "PYTHONSAFEPATH",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONHASHSEED",
    "PYTHONIOENCODING",
    "PYTHONUTF8",
    "PYTHONFAULTHANDLER",
    "PYTHONDEVMODE",
    "PYTHONWARNINGS",
    "COVERAGE_PROCESS_START",
)
"""What a worker inherits from air: what ``python -m air.roles`` needs to start and import air
(interpreter, venv and path, locale, HOME for the user site-packages). No key, token or agent
socket: workers reach the model only through the parent (IMPL-SBX-4)."""


def worker_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The allowlisted part of ``environ`` (default ``os.environ``) a worker starts with."""
    source = os.environ if environ is None else environ
    env = {k: source[k] for k in WORKER_ENV_ALLOWLIST if k in source}
    # started in its task's worktree: a relative entry would import the task's files
    if "PATH" in env:
        env["PATH"] = absolute_search_path(env["PATH"])
    python_path = absolute_python_path(env.pop("PYTHONPATH", None))
    if python_path is not None:
        env["PYTHONPATH"] = python_path
    return env
