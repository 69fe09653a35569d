"""Which host each task of ``air run --headless`` runs on (issue #27; IMPL-REMOTE-6).

Owns ``load_run_batch`` (the batch, then its plan), ``remote_plan``: the run's ``--host
NAME`` and each task's ``host:``, every name checked against hosts.yaml before anything is
created (an unknown one is exit 2 saying where to declare it); ``None`` when every task runs
here; and ``resumed_plan``: the same plan for ``air resume``, from what the session recorded
(``session.created``'s ``host``, each ``task.created`` spec's ``host``, read by
``air.cli.resumed``; IMPL-REMOTE-6).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

__all__ = ["load_run_batch", "remote_plan", "resumed_plan"]


def load_run_batch(options: Any) -> Any:
    """The run's batch (``-p PROMPT``'s one task, or the file), ``options.remote`` set.

    Raises:
        AirException: a bad batch file, or as ``remote_plan``.
    """
    from air.cli.batch import load_batch, prompt_batch

    if options.prompt is not None:
        batch = prompt_batch(options.prompt)
    else:
        batch = load_batch(options.batch or "-", options.project)
    options.remote = remote_plan(options.project, options.host, batch.specs)
    return batch


def remote_plan(project: str, default: str | None, specs: Sequence[Any] | None) -> Any:
    """The ``RemotePlan`` of a run, or None.

    Raises:
        AirException: not_found (no such host), config_error (a bad hosts.yaml),
            untrusted_config (the project declares hosts the user has not trusted).
    """
    tasks = {s.id: s.host for s in specs or () if getattr(s, "host", None)}
    if default is None and not tasks:
        return None
    from air.nursery.remote_tasks import RemotePlan
    from air.remote.hosts import find_host, hosts_files

    if os.path.lexists(hosts_files(project)[-1]):
        from air.session.trust import require_trust

        require_trust(project)  # a project's host decides where code goes (IMPL-TRUST-1)
    names = {*tasks.values(), *([default] if default else [])}
    hosts = {name: find_host(name, project) for name in sorted(names)}
    return RemotePlan(hosts=hosts, tasks=tasks, default=default)


def resumed_plan(project: Any, recorded: Any) -> Any:
    """The ``RemotePlan`` of the session ``air resume`` continues (None: every task ran here).

    Args:
        project: the session's ``ProjectContext`` (``project_root``).
        recorded: what the session recorded (``air.cli.resumed.RecordedRun``).

    Raises:
        AirException: as ``remote_plan`` (a host the session used is no longer declared).
    """
    return remote_plan(project.project_root, recorded.created.get("host"), recorded.specs)
