"""The shell sandbox's bubblewrap command line, built from allowlists.

Owns ``SandboxRunner`` (the bwrap argv of one command: user namespace, every capability dropped,
no-new-privileges, own PID/IPC/UTS/cgroup/network namespaces (a granted command's joined to the
world by ``air.tools.sandbox_net``), the seccomp filter of
``air.tools.seccomp``; a filesystem made only of the allowlisted system paths read-only,
generated ``/etc/passwd``/``/etc/group``, the workspace read-write with its git metadata
read-only (``pin_protected``), for shell.run the cpp tools' build dirs read-only
(``air.tools.build_dirs``), ``.air`` hidden under an empty read-only tmpfs and the user's
credential files under ``/dev/null`` (``air.tools.credential_files``), a fresh tmpfs HOME and a
private /tmp; the rlimits of ``air.tools.limits`` set before the command) and
``sandbox_environment`` (the environment allowlist). Whether bwrap works here is
``air.tools.sandbox_check``; the spawn is ``air.tools.sandbox_spawn``.
Decisions: IMPL-SBX-1 .. IMPL-SBX-5, IMPL-SBX-8, IMPL-SBX-9 in docs/decisions.md.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from air.search_path import installed
from air.security.redact import looks_secret_name
from air.tools.limits import ResourceLimits, limits_script
from air.tools.sandbox_check import (
    SYSTEM_PATHS,
    check_sandbox_available,
    identity_args,
    missing_bwrap,
    sandbox_ids,
)
from air.tools.sandbox_net import SANDBOX_RESOLV_CONF

__all__ = [
    "SANDBOX_HOME",
    "SANDBOX_USER",
    "SandboxRunner",
    "pin_protected",
    "sandbox_environment",
]

SANDBOX_HOME = "/home/air"
SANDBOX_USER = "air"

_ETC_PATHS = (
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/nsswitch.conf",
    "/etc/host.conf",
    "/etc/hosts",
    "/etc/gai.conf",
    "/etc/protocols",
    "/etc/services",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/locale.alias",
    "/etc/os-release",
    "/etc/ssl/certs",
    "/etc/ssl/openssl.cnf",
    "/etc/ca-certificates.conf",
    "/etc/python3",
    "/etc/python3.11",
    "/etc/perl",
)
"""The /etc entries toolchains read (IMPL-SBX-3); nothing else of /etc exists in the sandbox."""

_ENV_KEEP = (
    "PATH",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_COLLATE",
    "LC_MESSAGES",
    "LC_NUMERIC",
    "LC_TIME",
    "LC_MONETARY",
    "TERM",
    "TZ",
    "NO_COLOR",
    "SOURCE_DATE_EPOCH",
    "CC",
    "CXX",
    "CFLAGS",
    "CXXFLAGS",
    "CPPFLAGS",
    "LDFLAGS",
    "CMAKE_GENERATOR",
)
"""Variables a command inherits from air (IMPL-SBX-4); every other one is dropped."""

_DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"

_GIT_FILE_PREFIX = "gitdir:"
_PROTECTED = (".git",)
"""Workspace entries bound read-only over the writable workspace."""
_HIDDEN = ".air"
"""air's own state (session databases, prompts, outputs): an empty read-only tmpfs inside."""

_INIT_MEM = ("/proc/1/mem", "/proc/1/task/1/mem")
"""The memory of bwrap's PID-1 init, masked with /dev/null (IMPL-SBX-2)."""


def sandbox_environment(environ: Mapping[str, str], home: str = SANDBOX_HOME) -> dict[str, str]:
    """The environment of a sandboxed command: the allowlist, never a secret-looking name.

    Args:
        environ: air's own environment (usually ``os.environ``).
        home: HOME inside the sandbox.

    Returns:
        ``_ENV_KEEP`` entries present in ``environ`` plus HOME, USER, LOGNAME, SHELL and TMPDIR.
    """
    env = {k: environ[k] for k in _ENV_KEEP if k in environ and not looks_secret_name(k)}
    env.setdefault("PATH", _DEFAULT_PATH)
    env.update(
        {
            "HOME": home,
            "USER": SANDBOX_USER,
            "LOGNAME": SANDBOX_USER,
            "SHELL": "/bin/bash",
            "TMPDIR": "/tmp",
        }
    )
    return env


def _worktree_common_dir(dot_git: str, source: str) -> str | None:
    """The main repository's git dir of a worktree whose ``.git`` file is ``dot_git``.

    ``source`` is where to read the file (its pinned fd). Only a structurally valid worktree
    is exposed: the file names ``<common>/worktrees/<name>`` whose ``commondir`` leads back to
    ``<common>`` and whose ``gitdir`` names ``dot_git``, and ``<common>`` holds ``objects`` and
    ``HEAD``. Anything else (a tampered or foreign pointer) exposes nothing.
    """
    try:
        with open(source, encoding="utf-8") as fh:
            text = fh.read(4096).strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not text.startswith(_GIT_FILE_PREFIX):
        return None
    target = text[len(_GIT_FILE_PREFIX) :].strip()
    gitdir = os.path.realpath(os.path.join(os.path.dirname(dot_git), target))
    worktrees = os.path.dirname(gitdir)
    common = os.path.dirname(worktrees)
    if os.path.basename(worktrees) != "worktrees":
        return None
    try:
        with open(os.path.join(gitdir, "commondir"), encoding="utf-8") as fh:
            pointer = fh.read(4096).strip()
        with open(os.path.join(gitdir, "gitdir"), encoding="utf-8") as fh:
            back = fh.read(4096).strip()
    except (OSError, UnicodeDecodeError):
        return None
    if os.path.realpath(os.path.join(gitdir, pointer)) != common:
        return None
    # the record names this workspace's .git back (relative to the record with git >= 2.48's
    # worktree.useRelativePaths): a .git a task wrote, naming another repository's worktree
    # record, exposes nothing of that repository
    if os.path.realpath(os.path.join(gitdir, back)) != os.path.realpath(dot_git):
        return None
    if not (os.path.isdir(os.path.join(common, "objects")) and os.path.isfile(f"{common}/HEAD")):
        return None
    return common


def pin_protected(workspace: str) -> dict[str, int]:
    """O_PATH fds of the workspace's ``.git`` entry, keyed by path.

    Opened once with ``O_NOFOLLOW`` and checked through the fd, then bound with
    ``--ro-bind-fd``: bwrap binds exactly what was checked, even if a command running at the
    same time in this workspace swaps the entry for a symlink to a secret. A symlinked entry is
    not pinned (its target is not mounted). The caller closes the fds.
    """
    pinned: dict[str, int] = {}
    for name in _PROTECTED:
        path = os.path.join(workspace, name)
        try:
            fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        mode = os.fstat(fd).st_mode
        if stat.S_ISLNK(mode):
            os.close(fd)
            continue
        pinned[path] = fd
    return pinned


def _protected_binds(
    workspace: str,
    pinned: Mapping[str, int],
    *,
    read_only: bool = False,
    hidden: Sequence[str] = (),
) -> list[str]:
    """Bind the workspace's git metadata read-only (IMPL-SBX-5).

    A ``.git`` directory is re-bound read-only as a whole; a worktree's ``.git`` file is bound
    read-only and its main repository's git dir is bound read-only at its own path so that
    ``git status``/``diff``/``log`` work inside. Git state changes go through the parent's
    hardened git tools (``git.commit``). In the read-only view (``read_only``) the workspace's
    own ``.git`` is already the overlay's, whose writes never reach the project: only a
    worktree's main git dir is bound. A ``.git`` among what the command may not see
    (``hidden``: a task denied paths) exposes no main git dir: its objects hold those paths.
    """
    args: list[str] = []
    for path, fd in pinned.items():
        if path in hidden:  # as what was checked, whatever stands at its path by now
            args += _hidden_as(path, os.fstat(fd).st_mode)
            continue
        if not read_only:
            args += ["--ro-bind-fd", str(fd), path]
        if os.path.basename(path) == ".git" and stat.S_ISREG(os.fstat(fd).st_mode):
            common = _worktree_common_dir(path, f"/proc/self/fd/{fd}")
            if common is not None and not _inside(common, workspace):
                args += ["--ro-bind", common, common]
    return args


def _hiding(workspace: str, paths: Sequence[str]) -> list[str]:
    """The mounts that hide ``paths`` (IMPL-SBX-3); an entry no longer inside ``workspace`` or
    no longer a plain file or directory (swapped since the scan) is hidden as what it is now or
    not at all: a link is never a mount point."""
    args: list[str] = []
    for path in paths:
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            continue
        if not _inside(path, workspace) or path == workspace:
            continue
        args += _hidden_as(path, mode)
    return args


def _hidden_as(path: str, mode: int) -> list[str]:
    """Hide a directory under an empty read-only tmpfs, a file under ``/dev/null``."""
    if stat.S_ISDIR(mode):
        return ["--perms", "0555", "--tmpfs", path, "--remount-ro", path]
    if stat.S_ISREG(mode):
        return ["--ro-bind", "/dev/null", path]
    return []


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _passwd(uid: int, gid: int) -> bytes:
    return (
        "root:x:0:0:root:/root:/usr/sbin/nologin\n"
        f"{SANDBOX_USER}:x:{uid}:{gid}:air sandbox:{SANDBOX_HOME}:/bin/bash\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
    ).encode()


def _group(gid: int) -> bytes:
    return f"root:x:0:\n{SANDBOX_USER}:x:{gid}:\nnogroup:x:65534:\n".encode()


@dataclass(eq=False)
class SandboxRunner:
    """Builds the bwrap command line of one sandboxed command.

    Args:
        bwrap_path: path to ``bwrap``; None when bubblewrap is missing, and then every command
            is refused (``check_available``), never run unsandboxed.
    """

    bwrap_path: str | None = field(default_factory=lambda: installed("bwrap"))
    _checked: bool = field(default=False, init=False, repr=False)

    def check_available(self) -> str:
        """The bwrap path, once bubblewrap proved it can build the sandbox here (cached).

        Raises:
            AirException: ``environment_error`` when bwrap is missing or cannot create a user
                namespace (``user_action`` says to install bubblewrap / enable namespaces).
        """
        if self.bwrap_path is None:
            raise missing_bwrap()
        path = check_sandbox_available(self.bwrap_path, probe=not self._checked)
        self._checked = True
        return path

    def generated_files(self, network: bool = False) -> dict[str, bytes]:
        """Files made up for the sandbox (destination -> content), bound read-only; with
        ``network``, a resolv.conf naming slirp4netns's DNS forwarder."""
        uid, gid = sandbox_ids()
        files = {"/etc/passwd": _passwd(uid, gid), "/etc/group": _group(gid)}
        if network:
            files["/etc/resolv.conf"] = SANDBOX_RESOLV_CONF
        return files

    def argv(
        self,
        command: str,
        *,
        workspace: str,
        cwd: str,
        network: bool,
        pinned: Mapping[str, int],
        data_fds: Mapping[str, int] | None = None,
        seccomp_fd: int | None = None,
        limits: ResourceLimits | None = None,
        read_only: bool = False,
        hidden: Sequence[str] = (),
        life_fd: int | None = None,
        network_fds: tuple[int, int, int] | None = None,
        build_dirs: Sequence[tuple[str, int, bool]] = (),
    ) -> list[str]:
        """The full argv: ``bwrap <namespaces> <filesystem> -- /bin/bash -c <limits> command``.

        Args:
            command: the shell command.
            workspace: the workspace root (bound read-write).
            cwd: the working directory inside the workspace.
            network: granted the network: its own namespace waits, after bwrap's setup, until
                ``air.tools.sandbox_net`` has connected it (``network_fds``).
            pinned: ``pin_protected(workspace)`` of the real workspace path.
            data_fds: readable fds holding ``generated_files()``, keyed by destination.
            seccomp_fd: a readable fd holding ``seccomp_program()``.
            limits: the rlimits set before the command (default: ``ResourceLimits()``).
            read_only: the workspace path holds the read-only view (``CommandSpace``).
            hidden: credential files and directories in the workspace the command may not see
                (``air.tools.credential_files``): ``/dev/null`` over a file, an empty read-only
                tmpfs over a directory.
            life_fd: the read end of ``air.tools.sandbox_spawn``'s life pipe, open in the
                sandbox: the command runs only if its write end (air's alone) is still open.
            network_fds: ``NetworkLink.sandbox_fds`` (bwrap's info fd, the script's ``hello``
                and ``go``), required with ``network``.
            build_dirs: ``air.tools.build_dirs.pin_build_dirs``: the cpp tools' build dirs,
                bound read-only, and their parents, bound onto themselves (IMPL-CPP-5).

        Raises:
            AirException: ``environment_error`` when bubblewrap is missing.
            ValueError: ``network`` without ``network_fds``.
        """
        if self.bwrap_path is None:
            raise missing_bwrap()
        if network and network_fds is None:
            raise ValueError("a command granted the network needs its NetworkLink's fds")
        ws = os.path.realpath(workspace)
        limits = limits or ResourceLimits()
        tmpfs_bytes = limits.memory_mb << 20
        args = [
            self.bwrap_path,
            "--die-with-parent",
            *identity_args(),
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--hostname",
            "air-sandbox",
            "--new-session",
            "--unshare-net",
        ]
        if network_fds is not None:
            args += ["--info-fd", str(network_fds[0])]
        args += ["--perms", "0755", "--dir", "/etc"]
        for path in SYSTEM_PATHS:
            if os.path.islink(path):
                args += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                args += ["--ro-bind", path, path]
        for path in _ETC_PATHS:
            if os.path.exists(path):
                args += ["--ro-bind", path, path]
        args += ["--symlink", "/proc/self/mounts", "/etc/mtab"]
        for dest, fd in (data_fds or {}).items():
            args += ["--perms", "0644", "--ro-bind-data", str(fd), dest]
        args += [
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            *[a for mem in _INIT_MEM for a in ("--ro-bind", "/dev/null", mem)],
            # tmpfs pages are memory no process's RSS shows: bounded by the memory limit
            "--size",
            str(tmpfs_bytes),
            "--tmpfs",
            "/tmp",
            "--size",
            str(tmpfs_bytes),
            "--tmpfs",
            SANDBOX_HOME,
            "--bind",
            ws,
            ws,
        ]
        args += _protected_binds(ws, pinned, read_only=read_only, hidden=hidden)
        for path, fd, ro in build_dirs:
            args += ["--ro-bind-fd" if ro else "--bind-fd", str(fd), path]
        state = os.path.realpath(os.path.join(ws, _HIDDEN))
        if _inside(state, ws) and state != ws and os.path.isdir(state):
            args += ["--perms", "0555", "--tmpfs", state, "--remount-ro", state]
        args += _hiding(ws, [p for p in hidden if p not in pinned])
        if seccomp_fd is not None:
            args += ["--seccomp", str(seccomp_fd)]
        args += ["--remount-ro", "/", "--chdir", cwd, "--"]
        script = limits_script(limits)
        if network and network_fds is not None:
            # bwrap's setup is over (its loopback made): slirp4netns may join; then wait for it
            _, hello, go = network_fds
            script = (
                f"printf 1 >&{hello}; exec {hello}>&-; read -r -N 1 -u {go} || exit 125; "
                f"exec {go}<&-; {script}"
            )
        if life_fd is not None:
            # EOF (every writer gone) reads as input: air died before bwrap armed its
            # parent-death signal, so nothing would end the command once it started
            script = f"read -t 0 -u {life_fd} && exit 125; exec {life_fd}<&-; {script}"
        return [*args, "/bin/bash", "--noprofile", "--norc", "-c", script, "air", command]
