"""``air doctor --host NAME``: is a remote host ready to run air's workers (issue #27 item 1)?

Owns ``HostCheck`` (the doctor check over ``air.remote.probe.probe_host``: one line per aspect —
connection, login noise, air's version there, git, bwrap — and one problem with its fix for
each that is wrong) and ``run_host_doctor`` (finds the host in ``~/.air/hosts.yaml`` and the
project's ``.air/shared/hosts.yaml`` — the latter only once the project is trusted,
IMPL-TRUST-1 — runs the check through the DoctorService, prints the report).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from air.doctor.service import Problem
    from air.remote.hosts import HostConfig
    from air.remote.probe import HostFinding

__all__ = ["HostCheck", "run_host_doctor"]


class HostCheck:
    """One remote host, probed over one ssh connection."""

    def __init__(self, host: HostConfig) -> None:
        self.host = host
        self.name = f"host.{host.name}"
        self.findings: list[HostFinding] = []

    def found(self) -> str:
        return "; ".join(f"{f.check}: {f.found}" for f in self.findings)

    async def run(self) -> list[Problem]:
        from air import __version__
        from air.doctor.service import Problem, issue
        from air.remote.probe import probe_host

        self.findings = await probe_host(self.host, __version__)
        return [
            Problem(
                issue(
                    f"{self.name}.{f.check}",
                    "warning" if f.severity == "warning" else "blocking",
                    f.problem,
                    f.user_action,
                )
            )
            for f in self.findings
            if f.problem is not None
        ]


def run_host_doctor(args: dict[str, Any], root: str | None) -> list[Any]:
    """The checks of ``--host NAME``.

    Raises:
        AirException: not_found (no such host), config_error (a bad hosts.yaml),
            untrusted_config (the project declares hosts the user has not trusted).
    """
    from air.remote.hosts import find_host, hosts_files

    name = str(args["--host"])
    if root is not None and os.path.lexists(hosts_files(root)[-1]):
        from air.session.trust import require_trust

        require_trust(root)  # a project's host decides where code goes (IMPL-TRUST-1)
    return [HostCheck(find_host(name, root))]
