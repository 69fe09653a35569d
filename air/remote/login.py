"""Where a host's own commands run: its login side (issue #27 items 5 and 6; IMPL-SLURM-3).

Owns ``run_on_host``: ``python -P -m MODULE ARGS`` with air's explicit environment only, where
the host keeps its work directory, its output bounded (``air.remote.bounded``). An ssh host:
over a fresh connection (``run_remote``). A slurm host: here, since srun runs on this machine, a
login node of the cluster whose work directory the compute nodes share (IMPL-SLURM-2) — the same
``air.remote.repo`` commands then make the run's repository and worktree that the job's steps
work in.
"""

from __future__ import annotations

import os
import pwd
import subprocess

from air.remote.bounded import STDOUT_MAX, run_bounded
from air.remote.hosts import HostConfig
from air.remote.ssh import REMOTE_PATH, client_environment, module_argv

__all__ = ["run_on_host"]


async def run_on_host(
    host: HostConfig,
    module: str,
    *args: str,
    stdin: bytes = b"",
    timeout_s: float = 60.0,
    max_stdout: int = STDOUT_MAX,
    stdout_path: str | None = None,
) -> subprocess.CompletedProcess[bytes] | None:
    """``python -P -m MODULE ARGS`` on ``host``'s login side, its output bounded
    (``air.remote.bounded``: ``max_stdout`` bytes, in memory or in ``stdout_path``); ``None``
    when it did not end within ``timeout_s``."""
    if host.launcher != "slurm":
        argv, env, cwd = module_argv(host, module, *args), client_environment(), None
    else:
        home = pwd.getpwuid(os.getuid()).pw_dir
        argv = [host.python, "-P", "-m", module, *args]
        env = {"HOME": home, "PATH": REMOTE_PATH, "LANG": "C.UTF-8"}
        cwd = home  # a relative work directory is the home's, as over ssh
    return await run_bounded(
        argv,
        env=env,
        timeout_s=timeout_s,
        stdin=stdin,
        cwd=cwd,
        max_stdout=max_stdout,
        stdout_path=stdout_path,
    )
