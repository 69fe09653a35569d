"""Recovery's sweep of remote runs (issue #27 item 6; IMPL-SLURM-4).

Owns ``sweep_records``: for the run records of a dead air process that name a host
(``remote``, as ``LaunchSpec.placed`` reported it), end what may still run there. An ssh host:
the run's marker is swept over a fresh connection (``air.remote.guard sweep``). A slurm host:
its job is cancelled by id, or by its name ``air-<agent id>`` when the record was written
before Slurm said the id — queued or running, the job and every step in it end. The host is
the record's own copy of its config: recovery needs no hosts.yaml and reaches the host the
run went to. A host that cannot be reached is left as it is (its guard's lease and Slurm's
time limit still end the run).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import trio
from pydantic import ValidationError

from air.remote.hosts import HostConfig
from air.remote.srun import job_name, scancel, scancel_jobs
from air.remote.ssh import sweep_remote

__all__ = ["sweep_records"]


async def sweep_records(records: list[dict[str, Any]], *, timeout_s: float = 20.0) -> None:
    """Sweep every remote run of ``records`` (side by side, each bounded by ``timeout_s``)."""
    jobs: list[int] = []
    names: list[str] = []
    sweeps: list[tuple[HostConfig, str]] = []
    for record in records:
        where = record.get("remote")
        if not isinstance(where, dict):
            continue
        try:
            host = HostConfig.model_validate(where.get("config"))
        except ValidationError:
            continue
        if host.launcher == "slurm":
            job = where.get("job_id")
            if isinstance(job, int) and job > 0:
                jobs.append(job)
            else:
                names.append(job_name(str(record.get("agent_id"))))
        elif record.get("marker"):
            sweeps.append((host, str(record["marker"])))
    async with trio.open_nursery() as nursery:
        if jobs:
            nursery.start_soon(partial(scancel_jobs, jobs, timeout_s=timeout_s))
        if names:
            nursery.start_soon(partial(scancel, names, timeout_s=timeout_s))
        for host, marker in sweeps:
            nursery.start_soon(partial(sweep_remote, host, [marker], timeout_s=timeout_s))
