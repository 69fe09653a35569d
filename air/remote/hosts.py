"""Remote hosts as configuration: ``~/.air/hosts.yaml`` and ``<project>/.air/shared/hosts.yaml``.

Owns ``HostConfig`` (one host: how to reach it and where air lives there), ``hosts_files``,
``parse_hosts`` and ``load_hosts`` / ``find_host``. A file::

    hosts:
      build-box:                  # the host's name: [A-Za-z0-9-], 1-40 characters
        launcher: ssh             # ssh | slurm
        host: build.example.org   # what the ssh client connects to
        user: alice
        port: 22
        identity: ~/.ssh/id_ed25519
        known_hosts: ~/.air/known_hosts   # pinned host keys (StrictHostKeyChecking=yes)
        python: /opt/air/venv/bin/python  # the remote interpreter that imports air
        workdir: /scratch/alice/air       # where runs keep their repositories and worktrees
        keepalive_s: 5                    # ServerAliveInterval
        lease_ttl_s: 30                   # the remote tree ends this long after parent silence
        # slurm only (srun runs on this machine: a login node of the cluster):
        partition: gpu                    # srun --partition
        time_limit: "30:00"               # srun --time when the task has no deadline
        gres: gpu:1                       # srun --gres
        srun_options: [--account=proj7]   # more --name=value options (not air's own)
        callback_address: 10.0.0.5        # this machine, as the nodes reach it (IMPL-SLURM-5)

The project's file is read only once the project is trusted (IMPL-TRUST-1: it decides where a
task's code and model loop go); a name declared in both files is refused, so a project cannot
shadow the user's host. Bad files raise ``AirException(config_error)`` naming file and field.
"""

import os
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from air.contracts.error import AirException, ErrorKind
from air.declared import read_declared
from air.yamlload import load

__all__ = ["HostConfig", "find_host", "hosts_files", "load_hosts", "parse_hosts"]

HOST_NAME = r"^[A-Za-z0-9-]{1,40}$"
SRUN_OWNED = (
    "--export", "--job-name", "--time", "--chdir", "--nodes", "--ntasks", "--uid", "--gid",
    "--input", "--output", "--error", "--pty", "--unbuffered", "--kill-on-bad-exit",
)  # fmt: skip
"""What srun gets from air itself: the explicit environment, the job name the sweeper cancels,
the deadline, one task, the worker's stdio as the channel."""


class HostConfig(BaseModel):
    """One remote host (IMPL-REMOTE-2)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=HOST_NAME)
    source: str
    """The file that declares it."""
    launcher: Literal["ssh", "slurm"] = "ssh"
    host: str = Field(min_length=1, pattern=r"^[A-Za-z0-9._:\[\]-]+$")
    """Host name or address; never starts with ``-`` (it is an ssh argument)."""
    user: str | None = Field(default=None, pattern=r"^[a-z_][a-z0-9_.-]{0,31}$")
    port: int = Field(default=22, ge=1, le=65535)
    identity: str | None = None
    known_hosts: str | None = None
    python: str = Field(default="python3", min_length=1)
    """The remote interpreter that imports air (its venv's ``bin/python``)."""
    workdir: str = "air-work"
    """Remote directory for run repositories and worktrees (relative: to the remote home)."""
    keepalive_s: int = Field(default=5, ge=1, le=300)
    lease_ttl_s: int = Field(default=30, ge=2, le=3600)
    """Without a byte from the parent for this long, the remote worker's tree ends."""
    connect_timeout_s: int = Field(default=10, ge=1, le=300)
    partition: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.,-]+$")
    time_limit: str | None = Field(default=None, pattern=r"^\d+(-\d+)?(:\d+){0,2}$")
    """Slurm's ``--time`` when the task has no deadline (``M``, ``M:S``, ``H:M:S``, ``D-H``...)."""
    gres: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_:,.-]+$")
    callback_address: str | None = Field(default=None, pattern=r"^[A-Za-z0-9._:-]+$")
    """Slurm: the address of this machine the compute nodes connect back to (default: what
    its host name resolves to; IMPL-SLURM-5)."""
    srun_options: tuple[str, ...] = ()
    """Extra ``--option[=value]`` for srun; never one air sets itself (``SRUN_OWNED``)."""

    @field_validator("srun_options")
    @classmethod
    def _own_options(cls, options: tuple[str, ...]) -> tuple[str, ...]:
        for option in options:
            name = option.split("=", 1)[0]
            if not name.startswith("--") or name in SRUN_OWNED:
                raise ValueError(
                    f"{option!r}: give long options as --name[=value], and none of air's own "
                    f"({', '.join(SRUN_OWNED)}: IMPL-SLURM-2)"
                )
        return options

    def placement(self, remote: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
        """Where a worker on this host is, for its run record and ``agent.started``: the
        host's name and whole config (recovery sweeps by it without reading hosts.yaml), the
        guard's identity there (``remote``: host, boot id, pid, start time) and ``extra``."""
        where: dict[str, Any] = {
            "launcher": self.launcher,
            "host": self.name,
            "config": self.model_dump(mode="json"),
            **extra,
        }
        if remote:
            where.update(
                node=remote.get("host"),
                boot_id=remote.get("boot_id"),
                pid=remote.get("pid"),
                start_time=remote.get("start_time"),
            )
        return where

    def destination(self) -> str:
        """``user@host`` (or ``host``) for the ssh client."""
        return f"{self.user}@{self.host}" if self.user else self.host


def _bad(source: str, field: str, message: str) -> AirException:
    return AirException.of(
        kind=ErrorKind.CONFIG_ERROR,
        message=f"{source}: {field}: {message}",
        user_action=f"Fix {source} (the format is in air/remote/hosts.py's docstring) and retry.",
        metadata={"file": source, "field": field},
    )


def _expand(value: Any) -> Any:
    return os.path.expanduser(value) if isinstance(value, str) else value


def parse_hosts(text: str, source: str) -> list[HostConfig]:
    """The hosts one file declares (an empty file declares none).

    Raises:
        AirException(config_error): not YAML, or a host that is not valid.
    """
    try:
        data = load(text, name=source)
    except (yaml.YAMLError, ValueError, RecursionError):
        raise _bad(source, "file", "not valid YAML") from None
    if data is None:
        return []
    if not isinstance(data, dict) or set(data) - {"hosts", "version"}:
        raise _bad(source, "file", "the top level must be a mapping with a `hosts` mapping")
    hosts = data.get("hosts") or {}
    if not isinstance(hosts, dict):
        raise _bad(source, "hosts", "must map host names to hosts")
    out = []
    for name, raw in hosts.items():
        where = f"hosts.{name}"
        if not isinstance(raw, dict):
            raise _bad(source, where, "must be a mapping (launcher, host, user, ...)")
        fields = dict(raw)
        for key in ("identity", "known_hosts"):
            fields[key] = _expand(fields.get(key))
        if isinstance(fields.get("srun_options"), list):
            fields["srun_options"] = tuple(fields["srun_options"])
        try:
            out.append(HostConfig(name=name, source=source, **fields))
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first["loc"])
            raise _bad(source, f"{where}.{loc}" if loc else where, first["msg"]) from None
        except TypeError:
            raise _bad(source, where, "host names are strings") from None
    return out


def hosts_files(project_root: str | None, home: str | None = None) -> list[str]:
    """The files air reads, the user's first."""
    files = [os.path.join(home or os.path.expanduser("~"), ".air", "hosts.yaml")]
    if project_root:
        files.append(os.path.join(project_root, ".air", "shared", "hosts.yaml"))
    return files


def load_hosts(project_root: str | None, home: str | None = None) -> list[HostConfig]:
    """Every declared host, the user's first (missing files declare none).

    The caller has checked the project's trust (``require_trust``) before it passes a project.

    Raises:
        AirException(config_error): a bad file, or a name declared twice.
    """
    return read_declared(hosts_files(project_root, home), parse_hosts, _bad, "hosts")


def find_host(name: str, project_root: str | None, home: str | None = None) -> HostConfig:
    """The host called ``name``.

    Raises:
        AirException(not_found): no file declares it; config_error: a bad file.
    """
    hosts = load_hosts(project_root, home)
    for host in hosts:
        if host.name == name:
            return host
    known = ", ".join(h.name for h in hosts) or "none"
    raise AirException.of(
        kind=ErrorKind.NOT_FOUND,
        message=f"no host {name!r} in {' or '.join(hosts_files(project_root, home))} "
        f"(declared: {known})",
        user_action="Declare it under `hosts:` in ~/.air/hosts.yaml (or the project's "
        ".air/shared/hosts.yaml) and retry.",
    )
