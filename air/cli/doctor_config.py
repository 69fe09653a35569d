"""The doctor's ``config`` check: every configuration file a run reads loads as the run loads it.

Owns ``load_configuration``: ``~/.air``'s ``permissions.yaml``, ``mcp.yaml``, ``hosts.yaml``,
``sandbox.yaml`` and ``config.yaml`` (the worker slots), and the project's own once the user
trusted it (IMPL-TRUST-1), each through the reader the run uses. Found: a ``permissions.yaml``
that is no YAML (or a named pipe, or over 4 MiB) made every ``air run`` exit 2 while ``air
doctor`` said "no problems found". ``models.yaml`` is the providers check's. Also
``locate_project``: the project the doctor looks at, or why its project file cannot be read
(``air doctor`` exited 2 on it, as every other command does, instead of saying so among its
findings). And ``command_limits``: the limits a sandboxed command gets, and a warning when the
hard limits air runs under (an HPC login node's ``ulimit -t``) lower what is configured: air
lowers them silently for every command (IMPL-SBX-8), and a long build ended at 999 s of CPU
under a configured 3600 told the user nothing beforehand.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from air.contracts.error import AirException
    from air.contracts.project import ProjectContext

__all__ = ["command_limits", "load_configuration", "locate_project"]


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
    from air.supervision.slots import pool_size
    from air.tools.limits import load_limits

    trusted_root = _trusted_root(project_root)
    load_policy(policy_files(trusted_root))
    servers = load_servers(trusted_root)
    hosts = load_hosts(trusted_root)
    load_limits(project_root)  # as a command loads them: a project only lowers a limit
    slots = pool_size()
    return (
        f"permissions, {len(servers)} MCP server(s), {len(hosts)} host(s), sandbox limits and "
        f"{slots} worker slot(s) load"
    )


def _trusted_root(project_root: str | None) -> str | None:
    """``project_root`` when the user trusted its configuration (its files are read)."""
    from air.session.trust import trust_scan, trusted

    if project_root is not None and trusted(trust_scan(project_root)):
        return project_root
    return None


def command_limits(project_root: str | None) -> str:
    """The limits a sandboxed command gets here.

    Raises:
        AirException: ``environment_error`` when air's own hard limits lower a configured one
            (a warning: commands run, under the lower limit).
    """
    from air.contracts.error import AirException, ErrorKind
    from air.tools.limits import configured_limits, lowered

    try:
        asked = configured_limits(project_root)  # as a command reads them (``load_limits``)
    except AirException:
        return "not read: a limits file does not load (the config check says which and why)"
    held = lowered(asked)
    if not held:
        return ", ".join(asked.describe(name) for name in asked._fields)
    named = "; ".join(f"{name} {got}, not {want}" for name, (want, got) in sorted(held.items()))
    raise AirException.of(
        kind=ErrorKind.ENVIRONMENT_ERROR,
        message=(
            f"air's own hard limits are below its sandbox limits ({named}): every command "
            "gets the lower limit, and one that needs more ends with a resource_limit error"
        ),
        user_action=(
            "Start air from a shell whose hard limits allow more (`ulimit -H -a` shows them; "
            "on a cluster, in a job that asks for more), or lower the limits in "
            "~/.air/sandbox.yaml to what holds here."
        ),
    )
