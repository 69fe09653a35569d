"""The doctor's ``config`` check: every configuration file a run reads loads as the run loads it.

Owns ``load_configuration``: ``~/.air``'s ``permissions.yaml``, ``mcp.yaml``, ``hosts.yaml``,
``sandbox.yaml`` and ``config.yaml`` (the worker slots), and the project's own once the user
trusted it (IMPL-TRUST-1), each through the reader the run uses. Found: a ``permissions.yaml``
that is no YAML (or a named pipe, or over 4 MiB) made every ``air run`` exit 2 while ``air
doctor`` said "no problems found". ``models.yaml`` is the providers check's. Also
``locate_project``: the project the doctor looks at, or why its project file cannot be read
(``air doctor`` exited 2 on it, as every other command does, instead of saying so among its
findings).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from air.contracts.error import AirException
    from air.contracts.project import ProjectContext

__all__ = ["load_configuration", "locate_project"]


def locate_project(start: str) -> tuple[ProjectContext | None, AirException | None]:
    """The air project at or above ``start`` (None: there is none), and the ``AirException``
    of a project file no command can read (None: it reads), as the doctor reports it."""
    from air.contracts.error import AirException, ErrorKind
    from air.session.project import ProjectStore

    try:
        return ProjectStore().locate(start), None
    except AirException as exc:
        if exc.kind != ErrorKind.CONFIG_ERROR:
            raise
        return None, exc


def load_configuration(project_root: str | None) -> str:
    """What the configuration declares, once every file of it loaded.

    Raises:
        AirException: the first file a run would refuse, as the run says it.
    """
    from air.mcp.config import load_servers
    from air.remote.hosts import load_hosts
    from air.security.policy import load_policy, policy_files
    from air.session.trust import trust_scan, trusted
    from air.supervision.slots import pool_size
    from air.tools.limits import load_limits

    trusted_root = None
    if project_root is not None and trusted(trust_scan(project_root)):
        trusted_root = project_root
    load_policy(policy_files(trusted_root))
    servers = load_servers(trusted_root)
    hosts = load_hosts(trusted_root)
    load_limits(project_root, trusted=trusted_root is not None)
    slots = pool_size()
    return (
        f"permissions, {len(servers)} MCP server(s), {len(hosts)} host(s), sandbox limits and "
        f"{slots} worker slot(s) load"
    )
