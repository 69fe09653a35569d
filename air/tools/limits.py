"""Resource limits of sandboxed commands: what they are, where they come from, how they hold.

Owns ``ResourceLimits`` (processes, memory, file size, CPU time; the defaults a real C++ build
fits in), ``configured_limits`` (``~/.air/sandbox.yaml`` then the project's
``.air/shared/sandbox.yaml``: a project may only lower a limit),
``load_limits`` (those, within the hard limits air runs under), ``limits_script`` (the
``ulimit`` line the sandbox's shell runs before the command: RLIMIT_NPROC, RLIMIT_FSIZE,
RLIMIT_CPU), ``PidsCgroup`` (a per-command pids cgroup, v1 or v2, nested in air's own, when
air may make one: the process limit that also holds for root), ``LimitWatch`` (polls the
command's processes, ends the whole tree when it goes over its process or memory limit, and
names the limit that ended it) and ``resource_limit_error``.
Decision: IMPL-SBX-8 in docs/decisions.md.
"""

from __future__ import annotations

import itertools
import os
import signal
from typing import Any, NamedTuple

import trio

from air.contracts.error import AirError, AirException, ErrorKind, make_air_error
from air.small_file import read_small

__all__ = [
    "LimitWatch",
    "PidsCgroup",
    "ResourceLimits",
    "configured_limits",
    "limits_file",
    "limits_script",
    "load_limits",
    "lowered",
    "resource_limit_error",
    "within_inherited",
]

_MIB = 1 << 20
_POLL_S = 0.05
"""How often ``LimitWatch`` looks at the command's processes."""

_SIGNALLED = {128 + signal.SIGXCPU: "cpu_seconds", 128 + signal.SIGXFSZ: "file_size_mb"}
"""Exit codes of a command the kernel ended for going over an rlimit (bash and bwrap report
a death by signal N as 128 + N)."""


class ResourceLimits(NamedTuple):
    """The bounds of one sandboxed command (a NamedTuple: it is on the way to a run's first
    request, IMPL-BOOT-14).

    ``processes`` and ``memory_mb`` bound the whole command (all its processes and threads);
    ``file_size_mb`` and ``cpu_seconds`` bound each process (RLIMIT_FSIZE, RLIMIT_CPU).
    """

    processes: int = 1024
    memory_mb: int = 8192
    file_size_mb: int = 8192
    cpu_seconds: int = 3600

    def describe(self, name: str) -> str:
        value = getattr(self, name)
        return {
            "processes": f"{value} processes and threads",
            "memory_mb": f"{value} MiB of memory",
            "file_size_mb": f"{value} MiB per file written",
            "cpu_seconds": f"{value} s of CPU time per process",
        }[name]


_NAMES = ResourceLimits._fields
_MOST = {
    "processes": 1 << 22,
    "memory_mb": 1 << 32,
    "file_size_mb": 1 << 32,
    "cpu_seconds": 1 << 32,
}
"""The largest value of each limit (the kernel's most PIDs; 4 PiB of memory or a file; 136
years of CPU). Above them the shell's ``ulimit`` (1024-byte blocks) and bwrap's tmpfs ``--size``
(bytes) overflowed: every command failed (``limit out of range``, exit 125) or ran under a
wrapped value."""


def limits_file(root: str, *, user: bool) -> str:
    """Where the limits of a user (``root`` = HOME) or of a project (``root``) are set."""
    if user:
        return os.path.join(root, ".air", "sandbox.yaml")
    return os.path.join(root, ".air", "shared", "sandbox.yaml")


def _bad(source: str, message: str) -> AirException:
    return AirException.of(
        kind=ErrorKind.CONFIG_ERROR,
        message=f"{source}: {message}",
        user_action=(
            f"Fix {source}: a mapping `limits:` of positive integers among "
            f"{', '.join(_NAMES)} (IMPL-SBX-8)."
        ),
    )


def _read(path: str) -> dict[str, int] | None:
    try:
        text = read_small(path, 64 * 1024).decode("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise _bad(path, f"cannot be read ({exc})") from exc
    from air.yamlload import load

    try:
        raw: Any = load(text)
    except Exception as exc:  # yaml.YAMLError and its kin: the file is the user's input
        raise _bad(path, f"is not valid YAML ({exc})") from exc
    if raw is None:
        return None
    if not isinstance(raw, dict) or set(raw) - {"limits"}:
        raise _bad(path, "must hold one key, `limits`")
    limits = raw.get("limits") or {}
    if not isinstance(limits, dict):
        raise _bad(path, "`limits` must be a mapping")
    out: dict[str, int] = {}
    for key, value in limits.items():
        if key not in _NAMES:
            raise _bad(path, f"unknown limit {key!r}")
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise _bad(path, f"{key} must be a positive integer, not {value!r}")
        if value > _MOST[key]:
            raise _bad(path, f"{key} must be at most {_MOST[key]}, not {value}")
        out[str(key)] = value
    return out


def _inherited(which: int) -> int | None:
    """air's own hard limit ``which`` (a sandbox inherits it: no command may go above it);
    None when unlimited."""
    import resource

    hard = resource.getrlimit(which)[1]
    return None if hard == resource.RLIM_INFINITY else hard


def within_inherited(limits: ResourceLimits) -> ResourceLimits:
    """``limits`` lowered to the hard limits air itself runs under (an HPC login node's
    ``ulimit -t``, a batch system's): a command can set no rlimit above them, and asking made
    every command fail (``ulimit: cannot modify limit``, exit 125)."""
    import resource

    changes: dict[str, int] = {}
    processes = _inherited(resource.RLIMIT_NPROC)
    if processes is not None and limits.processes > processes:
        changes["processes"] = max(processes, 1)
    size = _inherited(resource.RLIMIT_FSIZE)
    if size is not None and limits.file_size_mb > size // _MIB:
        changes["file_size_mb"] = max(size // _MIB, 1)
    cpu = _inherited(resource.RLIMIT_CPU)
    if cpu is not None and limits.cpu_seconds + 1 > cpu:  # its hard limit is one second more
        changes["cpu_seconds"] = max(cpu - 1, 1)
    return limits._replace(**changes) if changes else limits


def lowered(limits: ResourceLimits) -> dict[str, tuple[int, int]]:
    """The limits air's own hard limits lower (``within_inherited``): name -> (asked, held)."""
    held = within_inherited(limits)
    pairs = ((n, getattr(limits, n), getattr(held, n)) for n in _NAMES)
    return {n: (asked, got) for n, asked, got in pairs if asked != got}


def load_limits(project_root: str | None, *, home: str | None = None) -> ResourceLimits:
    """The limits of a command in ``project_root``: ``configured_limits``, lowered to the hard
    limits air itself runs under (``within_inherited``).

    Raises:
        AirException: as ``configured_limits``.
    """
    return within_inherited(configured_limits(project_root, home=home))


def configured_limits(project_root: str | None, *, home: str | None = None) -> ResourceLimits:
    """The limits the configuration asks for: defaults, then the user's file, then the
    project's (what ``air doctor`` compares with what holds).

    Args:
        project_root: the project (None: the user's limits only).
        home: the user's HOME (default ``~``).

    Raises:
        AirException: ``config_error`` for a malformed file; ``untrusted_config`` when the
            project raises a limit (a cloned repository must not lift the bounds the user
            chose; trusting it does not either: the trust scan does not read this file).
    """
    limits = ResourceLimits()
    user = _read(limits_file(home or os.path.expanduser("~"), user=True))
    if user:
        limits = limits._replace(**user)
    if project_root is None:
        return limits
    path = limits_file(project_root, user=False)
    project = _read(path)
    if not project:
        return limits
    raised = sorted(k for k, v in project.items() if v > getattr(limits, k))
    if raised:
        raise AirException.of(
            kind=ErrorKind.UNTRUSTED_CONFIG,
            message=(
                f"{path} raises {', '.join(raised)} above the user's limits: a project may "
                "only lower them"
            ),
            user_action=(
                f"Lower those values in {path}, or set them in "
                f"{limits_file('~', user=True)} instead."
            ),
        )
    return limits._replace(**project)


def limits_script(limits: ResourceLimits) -> str:
    """The shell line that sets the per-process rlimits, then runs the command (``$1``).

    Hard and soft limits both: a command cannot raise them again (it holds no capability).
    Never above air's own hard limits (``within_inherited``).
    RLIMIT_NPROC is set too: for an unprivileged air it bounds the sandbox's own user
    namespace; the kernel exempts root (IMPL-SBX-8), for which ``PidsCgroup``/``LimitWatch``
    hold the process limit.
    """
    import resource

    limits = within_inherited(limits)
    blocks = limits.file_size_mb * 1024  # bash counts -f in 1024-byte blocks
    size = _inherited(resource.RLIMIT_FSIZE)
    if size is not None:  # under one MiB, or not a whole number of them
        blocks = min(blocks, size // 1024)
    cpu = limits.cpu_seconds
    inherited_cpu = _inherited(resource.RLIMIT_CPU)
    cpu_hard = cpu + 1 if inherited_cpu is None else min(cpu + 1, inherited_cpu)
    # CPU: SIGXCPU at the soft limit (exit 152, attributed), SIGKILL a second later if ignored
    return (
        f"ulimit -H -S -u {limits.processes} -f {blocks} && ulimit -S -t {cpu} "
        f'&& ulimit -H -t {cpu_hard} || exit 125; exec /bin/bash --noprofile --norc -c "$1"'
    )


def resource_limit_error(name: str, limits: ResourceLimits, *, what: str = "") -> AirError:
    """The ``resource_limit`` error of a command ended for going over limit ``name``
    (``what``: what went over it, when not the command's processes themselves)."""
    went = f"the command's {what}" if what else "the command"
    return make_air_error(
        kind=ErrorKind.RESOURCE_LIMIT,
        message=f"{went} went over its {name} limit ({limits.describe(name)}) and was ended",
        user_action=(
            f"Make the command use less, or raise limits.{name} in "
            f"{limits_file('~', user=True)} (IMPL-SBX-8)."
        ),
        metadata={"limit": name, "value": getattr(limits, name)},
    )


_counter = itertools.count()


def _own_cgroup(controller: str) -> tuple[str, str] | None:
    """(hierarchy version "1"/"2", air's own cgroup path) for ``controller``, if mounted."""
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    unified = None
    for line in lines:
        hid, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return "1", os.path.join(f"/sys/fs/cgroup/{controller}", path.lstrip("/"))
        if hid == "0":
            unified = path
    if unified is None:
        return None
    for mount in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        if os.path.exists(os.path.join(mount, "cgroup.controllers")):
            return "2", os.path.join(mount, unified.lstrip("/"))
    return None


def _remove_orphans(parent: str) -> None:
    """Remove the empty cgroups an air that died (kill -9) left in ``parent``."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        prefix, _, rest = name.partition("-")
        owner = rest.partition("-")[0]
        if prefix != "air" or not owner.isdigit() or os.path.exists(f"/proc/{owner}"):
            continue
        try:
            os.rmdir(os.path.join(parent, name))
        except OSError:
            pass


class PidsCgroup:
    """A pids cgroup of one command, made inside air's own cgroup; None from ``create`` when
    air may not make one (no pids controller, not delegated, not writable).

    The process joins it before it execs bwrap (``join_argv``), so every process of the
    command, root's included, counts against ``pids.max``.

    On cgroup v1 the joining shell (one thread) moves itself through ``tasks``: moving the
    calling thread skips the kernel's global threadgroup lock, whose write side waits for an
    RCU grace period (8-25 ms a command through ``cgroup.procs``, ~1 ms this way). Cgroup v2
    has no ``tasks``: ``cgroup.procs`` there.
    """

    def __init__(self, path: str, version: str = "2") -> None:
        self.path = path
        self.join_file = "tasks" if version == "1" else "cgroup.procs"

    @classmethod
    def create(cls, limit: int) -> PidsCgroup | None:
        found = _own_cgroup("pids")
        if found is None:
            return None
        version, parent = found
        if version == "2":
            try:
                with open(os.path.join(parent, "cgroup.subtree_control"), encoding="ascii") as fh:
                    if "pids" not in fh.read().split():
                        return None
            except OSError:
                return None
        if not os.access(parent, os.W_OK):
            return None
        _remove_orphans(parent)
        path = os.path.join(parent, f"air-{os.getpid()}-{next(_counter)}")
        try:
            os.mkdir(path, 0o755)
        except OSError:
            return None
        made = cls(path, version)
        try:
            with open(os.path.join(path, "pids.max"), "w", encoding="ascii") as fh:
                fh.write(str(limit))
        except OSError:
            made.close()
            return None
        return made

    def join_argv(self, argv: list[str]) -> list[str]:
        """``argv`` run by a shell that first moves itself into this cgroup."""
        join = os.path.join(self.path, self.join_file)
        return ["/bin/sh", "-c", 'echo 0 > "$0" || exit 125; exec "$@"', join, *argv]

    def pids(self) -> list[int]:
        try:
            with open(os.path.join(self.path, "cgroup.procs"), encoding="ascii") as fh:
                return [int(p) for p in fh.read().split()]
        except OSError:
            return []

    def refused_forks(self) -> int:
        """How many forks the limit refused (``pids.events`` ``max``)."""
        try:
            with open(os.path.join(self.path, "pids.events"), encoding="ascii") as fh:
                for line in fh:
                    key, _, value = line.partition(" ")
                    if key == "max":
                        return int(value)
        except (OSError, ValueError):
            return 0
        return 0

    def close(self) -> None:
        """Kill what is left in it and remove it (bounded: a few tries)."""
        for _ in range(50):
            for pid in self.pids():
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                import time

                time.sleep(0.01)


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        ppid = int(stat[stat.rfind(b")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(name))
    return children


def _tree(root: int) -> list[int]:
    children = _children_map()
    found = [root]
    for pid in found:
        found.extend(children.get(pid, ()))
    return found


_PAGE = os.sysconf("SC_PAGE_SIZE")


def _usage(pids: list[int]) -> tuple[int, int]:
    """(threads, private resident bytes) of ``pids``."""
    threads = 0
    private = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/statm", "rb") as fh:
                parts = fh.read().split()
            threads += len(os.listdir(f"/proc/{pid}/task"))
        except OSError:
            continue
        private += max(0, int(parts[1]) - int(parts[2])) * _PAGE
    return threads, private


class LimitWatch:
    """Watches one running command and ends its process group when it goes over its process or
    memory limit; ``verdict`` names the limit that ended it, if one did.

    Processes: the pids cgroup's refused forks, or (without one) the count of the command's
    processes and threads reaching the limit; memory: the private resident memory of all its
    processes summed. Both are sampled every 50 ms, so a command can pass its memory limit by
    what it allocates in that time before it is ended.
    """

    def __init__(self, limits: ResourceLimits, pid: int, cgroup: PidsCgroup | None) -> None:
        self.limits = limits
        self.pid = pid
        self.cgroup = cgroup
        self.exceeded: str | None = None

    def check(self) -> str | None:
        """The limit the command is over now, if any (one sample)."""
        if self.cgroup is not None and self.cgroup.refused_forks() > 0:
            return "processes"
        pids = self.cgroup.pids() if self.cgroup is not None else _tree(self.pid)
        threads, private = _usage(pids)
        if self.cgroup is None and threads >= self.limits.processes:
            return "processes"
        if private > self.limits.memory_mb * _MIB:
            return "memory_mb"
        return None

    async def watch(self) -> None:
        """Sample until the command is over a limit, then kill its group and return."""
        while True:
            await trio.sleep(_POLL_S)
            over = self.check()
            if over is not None:
                self.end(over)
                return

    def end(self, over: str) -> None:
        """End the command's group as over limit ``over`` (its ``verdict`` from now on)."""
        if self.exceeded is None:
            self.exceeded = over
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except OSError:
            pass

    def verdict(self, returncode: int | None) -> str | None:
        """The limit that ended the command: the watch's, or an rlimit's signal (SIGXCPU,
        SIGXFSZ) as its exit code."""
        if self.exceeded is not None:
            return self.exceeded
        if returncode is not None:
            return _SIGNALLED.get(returncode)
        return None
