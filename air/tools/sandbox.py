"""The shell sandbox: a bubblewrap command line built from allowlists, and how it is spawned.

Owns ``SandboxRunner`` (the bwrap argv of one command: user namespace, every capability dropped,
no-new-privileges, own PID/IPC/UTS/cgroup/network namespaces, a seccomp filter that keeps the
command off bwrap's PID-1 init (``seccomp_program``); a filesystem made only of the
allowlisted system paths read-only, generated ``/etc/passwd``/``/etc/group``, the workspace
read-write with its git metadata read-only and ``.air`` hidden under an empty read-only tmpfs, a
fresh tmpfs HOME and a private /tmp; the rlimits of ``air.tools.limits`` set before the command),
``CommandSpace`` (what one command holds on the host: its pids cgroup and, for a task without a
write area, the read-only view: an overlay of the workspace whose writes land in the task's view
directory, ``task_view_dir``), ``sandbox_environment`` (the environment allowlist),
``check_sandbox_available`` (bubblewrap is installed and can create a user namespace here, else
an ``environment_error``: there is no unsandboxed mode), ``open_sandboxed`` (the synchronous
spawn) and ``SandboxProcess`` (the running command with its output streams, spawned on the
thread that runs the Trio loop so that ``--die-with-parent`` lasts as long as air and not as
long as an idle worker thread).
Decisions: IMPL-SBX-1 .. IMPL-SBX-6, IMPL-SBX-8 in docs/decisions.md.
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import struct
import subprocess
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import IO

import trio

from air.contracts.error import AirException, ErrorKind
from air.security.redact import looks_secret_name
from air.tools.limits import PidsCgroup, ResourceLimits, limits_script

__all__ = [
    "SANDBOX_HOME",
    "SANDBOX_USER",
    "CommandSpace",
    "SandboxProcess",
    "SandboxRunner",
    "check_sandbox_available",
    "open_sandboxed",
    "pin_protected",
    "sandbox_environment",
    "seccomp_program",
    "start_sandboxed",
    "task_view_dir",
]

SANDBOX_HOME = "/home/air"
SANDBOX_USER = "air"
_UID_FOR_ROOT = 1000
"""The uid (and gid) a command sees when air runs as root; otherwise it keeps air's own ids."""

_SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
"""Read-only system trees; on merged-/usr systems the top-level ones are recreated as symlinks."""

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

_NETWORK_ETC_PATHS = ("/etc/resolv.conf",)
"""Only bound when the command was granted the network."""

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

# seccomp BPF (linux/filter.h, linux/seccomp.h, linux/audit.h).
_LD_ABS, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06
_ALLOW, _EPERM = 0x7FFF0000, 0x00050000 | 1
_SYSCALLS = (
    (0xC000003E, 101, 311),  # x86_64: ptrace, process_vm_writev
    (0x40000003, 26, 348),  # i386
    (0xC00000B7, 117, 271),  # aarch64
)
_X32_BIT = 0x40000000
_Insn = tuple[int, str | None, str | None, int]


@functools.cache
def seccomp_program() -> bytes:
    """A seccomp filter: ``ptrace`` and ``process_vm_writev`` of PID 1 fail with EPERM.

    PID 1 is bwrap's init, which holds the parent-death signal that ends the sandbox with air;
    a command of the same uid could otherwise ptrace it and clear that signal. Other pids
    (a debugger on the command's own children, LeakSanitizer) are unaffected; the x32 ABI is
    refused (its syscall numbers would bypass the check). Architectures not listed are not
    filtered. Only the low 32 bits of the pid are compared: the kernel truncates to pid_t.
    """
    items: list[str | _Insn] = [(_LD_ABS, None, None, 4)]
    items += [(_JEQ, f"arch{i}", None, arch) for i, (arch, _, _) in enumerate(_SYSCALLS)]
    items.append((_RET, None, None, _ALLOW))
    for i, (arch, ptrace, vm_writev) in enumerate(_SYSCALLS):
        items += [f"arch{i}", (_LD_ABS, None, None, 0)]
        if arch == 0xC000003E:
            items.append((_JGE, "deny", None, _X32_BIT))
        items += [(_JEQ, "pid_arg1", None, ptrace), (_JEQ, "pid_arg0", None, vm_writev)]
        items.append((_RET, None, None, _ALLOW))
    items += ["pid_arg1", (_LD_ABS, None, None, 16 + 8), (_JEQ, "deny", "allow", 1)]
    items += ["pid_arg0", (_LD_ABS, None, None, 16), (_JEQ, "deny", "allow", 1)]
    items += ["allow", (_RET, None, None, _ALLOW), "deny", (_RET, None, None, _EPERM)]
    labels: dict[str, int] = {}
    index = 0
    for item in items:
        if isinstance(item, str):
            labels[item] = index
        else:
            index += 1
    out = bytearray()
    index = 0
    for item in items:
        if isinstance(item, str):
            continue
        code, jt, jf, k = item
        jump_true = 0 if jt is None else labels[jt] - index - 1
        jump_false = 0 if jf is None else labels[jf] - index - 1
        out += struct.pack("=HBBI", code, jump_true, jump_false, k)
        index += 1
    return bytes(out)


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


def _sandbox_ids() -> tuple[int, int]:
    uid, gid = os.getuid(), os.getgid()
    return (uid or _UID_FOR_ROOT, gid or _UID_FOR_ROOT)


def _identity_args() -> list[str]:
    """bwrap's user, pid namespace and capability drop: the same for a command and the probe."""
    uid, gid = _sandbox_ids()
    return [
        "--unshare-user",
        "--disable-userns",
        "--uid",
        str(uid),
        "--gid",
        str(gid),
        "--cap-drop",
        "ALL",
        "--unshare-pid",
    ]


def _worktree_common_dir(dot_git: str, source: str) -> str | None:
    """The main repository's git dir of a worktree whose ``.git`` file is ``dot_git``.

    ``source`` is where to read the file (its pinned fd). Only a structurally valid worktree
    is exposed: the file names ``<common>/worktrees/<name>`` whose ``commondir`` leads back to
    ``<common>``, and ``<common>`` holds ``objects`` and ``HEAD``. Anything else (a tampered or
    foreign pointer) exposes nothing.
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
    except (OSError, UnicodeDecodeError):
        return None
    if os.path.realpath(os.path.join(gitdir, pointer)) != common:
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
    workspace: str, pinned: Mapping[str, int], *, read_only: bool = False
) -> list[str]:
    """Bind the workspace's git metadata read-only (IMPL-SBX-5).

    A ``.git`` directory is re-bound read-only as a whole; a worktree's ``.git`` file is bound
    read-only and its main repository's git dir is bound read-only at its own path so that
    ``git status``/``diff``/``log`` work inside. Git state changes go through the parent's
    hardened git tools (``git.commit``). In the read-only view (``read_only``) the workspace's
    own ``.git`` is already the overlay's, whose writes never reach the project: only a
    worktree's main git dir is bound.
    """
    args: list[str] = []
    for path, fd in pinned.items():
        if not read_only:
            args += ["--ro-bind-fd", str(fd), path]
        if os.path.basename(path) == ".git" and stat.S_ISREG(os.fstat(fd).st_mode):
            common = _worktree_common_dir(path, f"/proc/self/fd/{fd}")
            if common is not None and not _inside(common, workspace):
                args += ["--ro-bind", common, common]
    return args


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

    bwrap_path: str | None = field(default_factory=lambda: shutil.which("bwrap"))
    _checked: bool = field(default=False, init=False, repr=False)

    def check_available(self) -> str:
        """The bwrap path, once bubblewrap proved it can build the sandbox here (cached).

        Raises:
            AirException: ``environment_error`` when bwrap is missing or cannot create a user
                namespace (``user_action`` says to install bubblewrap / enable namespaces).
        """
        if self.bwrap_path is None:
            raise _missing_bwrap()
        path = check_sandbox_available(self.bwrap_path, probe=not self._checked)
        self._checked = True
        return path

    def generated_files(self) -> dict[str, bytes]:
        """Files made up for the sandbox (destination -> content), bound read-only."""
        uid, gid = _sandbox_ids()
        return {"/etc/passwd": _passwd(uid, gid), "/etc/group": _group(gid)}

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
    ) -> list[str]:
        """The full argv: ``bwrap <namespaces> <filesystem> -- /bin/bash -c <limits> command``.

        Args:
            command: the shell command.
            workspace: the workspace root (bound read-write).
            cwd: the working directory inside the workspace.
            network: keep the host network (otherwise a new, empty network namespace).
            pinned: ``pin_protected(workspace)`` of the real workspace path.
            data_fds: readable fds holding ``generated_files()``, keyed by destination.
            seccomp_fd: a readable fd holding ``seccomp_program()``.
            limits: the rlimits set before the command (default: ``ResourceLimits()``).
            read_only: the workspace path holds the read-only view (``CommandSpace``).

        Raises:
            AirException: ``environment_error`` when bubblewrap is missing.
        """
        if self.bwrap_path is None:
            raise _missing_bwrap()
        ws = os.path.realpath(workspace)
        limits = limits or ResourceLimits()
        tmpfs_bytes = limits.memory_mb << 20
        args = [
            self.bwrap_path,
            "--die-with-parent",
            *_identity_args(),
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--hostname",
            "air-sandbox",
            "--new-session",
        ]
        if not network:
            args.append("--unshare-net")
        args += ["--perms", "0755", "--dir", "/etc"]
        for path in _SYSTEM_PATHS:
            if os.path.islink(path):
                args += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                args += ["--ro-bind", path, path]
        for path in (*_ETC_PATHS, *(_NETWORK_ETC_PATHS if network else ())):
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
        args += _protected_binds(ws, pinned, read_only=read_only)
        hidden = os.path.realpath(os.path.join(ws, _HIDDEN))
        if _inside(hidden, ws) and hidden != ws and os.path.isdir(hidden):
            args += ["--perms", "0555", "--tmpfs", hidden, "--remount-ro", hidden]
        if seccomp_fd is not None:
            args += ["--seccomp", str(seccomp_fd)]
        args += ["--remount-ro", "/", "--chdir", cwd, "--"]
        script = limits_script(limits)
        return [*args, "/bin/bash", "--noprofile", "--norc", "-c", script, "air", command]


def _missing_bwrap() -> AirException:
    return AirException.of(
        kind=ErrorKind.ENVIRONMENT_ERROR,
        message="bubblewrap (bwrap) is not installed, and air never runs commands unsandboxed",
        user_action="Install bubblewrap (apt-get install bubblewrap, dnf install bubblewrap).",
    )


_probed: set[str] = set()
_probe_lock = threading.Lock()


def check_sandbox_available(bwrap_path: str | None = None, *, probe: bool = True) -> str:
    """Refuse to go on without a working sandbox; return the bwrap path.

    Runs ``bwrap`` once per path with the namespaces and capability drop the sandbox uses
    (``/bin/true`` inside). The first success is cached for the process.

    Args:
        bwrap_path: bwrap to check (default: ``bwrap`` on PATH).
        probe: False only checks that the path is set.

    Raises:
        AirException: ``environment_error`` when bwrap is missing or cannot build a sandbox.
    """
    path = bwrap_path if bwrap_path is not None else shutil.which("bwrap")
    if path is None:
        raise _missing_bwrap()
    if not probe:
        return path
    with _probe_lock:
        if path in _probed:
            return path
        argv = [
            path,
            *_identity_args(),
            "--unshare-net",
            *[a for p in _SYSTEM_PATHS if os.path.isdir(p) for a in ("--ro-bind", p, p)],
            "--proc",
            "/proc",
            "--",
            "true",
        ]
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
            )
            problem = done.stderr.strip() if done.returncode != 0 else ""
            problem = problem or (f"exit code {done.returncode}" if done.returncode else "")
        except (OSError, subprocess.SubprocessError) as exc:
            problem = str(exc)
        if problem:
            raise AirException.of(
                kind=ErrorKind.ENVIRONMENT_ERROR,
                message=f"bubblewrap cannot build the sandbox here: {problem[:500]}",
                user_action=(
                    "Install bubblewrap and allow unprivileged user namespaces "
                    "(sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces>0, "
                    "or an AppArmor profile for bwrap); air never runs commands unsandboxed."
                ),
            )
        _probed.add(path)
    return path


class SandboxProbe:
    """``check_sandbox_available`` started in a thread, so that ``air run`` goes on importing
    while bwrap builds its test sandbox (a few ms of waiting on the main thread; IMPL-BOOT-11).
    ``result`` is the check itself: it waits for the thread, then calls
    ``check_sandbox_available`` again, which answers from the cache after a success and probes
    (and raises) again after a failure, so the thread's outcome is never trusted blindly."""

    def __init__(self) -> None:
        self._thread = threading.Thread(target=self._probe, name="air-sandbox-probe", daemon=True)
        self._thread.start()

    @staticmethod
    def _probe() -> None:
        try:
            check_sandbox_available()
        except Exception:  # ``result`` probes again and reports it
            return

    def wait(self) -> None:
        """Until the probe's bwrap has exited (no child outlives a run refused early)."""
        self._thread.join()

    def result(self) -> str:
        """The bwrap path.

        Raises:
            AirException: ``environment_error`` when bwrap is missing or cannot build a sandbox.
        """
        self._thread.join()
        return check_sandbox_available()


_VIEW_SCRIPT = (
    'mount --bind "$1" "$0/l" '
    '&& mount -t overlay -o "lowerdir=$0/l,upperdir=$0/u,workdir=$0/w,userxattr" air-view "$1" '
    '|| exit 125; shift; exec "$@"'
)
"""Mounts the read-only view, run by root of a fresh user and mount namespace that only the
command's bwrap lives in: the workspace (bound to ``$0/l`` first, so that its path is never
spelled in overlay's comma-separated options) under an overlay whose writes go to the task's
view directory ``$0/u``. Nothing reaches the workspace; the mounts vanish with the command."""

_VIEW_ROOT_PREFIX = "air-views-"
_VIEW_TTL_S = 24 * 3600
"""A task's view directory not used for this long is removed when another one is made."""
_SAFE_PATH = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-")


def _view_problem(message: str) -> AirException:
    return AirException.of(
        kind=ErrorKind.ENVIRONMENT_ERROR,
        message=f"cannot build the read-only view of a task without a write area: {message}",
        user_action=(
            "Install util-linux (unshare, mount), and point TMPDIR at a directory of your own "
            "whose path has only letters, digits and / . _ -"
        ),
    )


def _own_private_dir(path: str) -> None:
    """``path`` exists as a real directory of this uid, mode 0700 (a shared /tmp: another user
    could have made it first, or left a symlink there)."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise _view_problem(f"{path} is not a directory of this user")
    os.chmod(path, 0o700)


def _prune_views(root: str, keep: str) -> None:
    """Remove the view directories under ``root`` not used for ``_VIEW_TTL_S``."""
    import time

    now = time.time()
    for name in os.listdir(root):
        path = os.path.join(root, name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if path == keep or now - info.st_mtime <= _VIEW_TTL_S or not stat.S_ISDIR(info.st_mode):
            continue
        _open_work_dir(path)
        shutil.rmtree(path, ignore_errors=True)  # never follows a link a command left


def _open_work_dir(view_dir: str) -> None:
    """Make overlay's ``w/work`` (mode 000) removable; ``w`` is air's, out of commands' reach."""
    work = os.path.join(view_dir, "w", "work")
    if os.path.isdir(work) and not os.path.islink(work):
        try:
            os.chmod(work, 0o700)
        except OSError:
            pass


def task_view_dir(workspace: str, session_id: str, task_id: str | None) -> str:
    """The view directory of one task's read-only view of ``workspace`` (made on first use):
    ``u`` holds what the task's commands wrote, ``w`` is overlay's work dir, ``l`` the mount
    point of the workspace. It lives outside the project (overlayfs refuses an upper dir inside
    its lower), under ``$TMPDIR/air-views-<uid>``; one not used for a day is removed.

    Raises:
        AirException: ``environment_error`` when the directory cannot be made safely.
    """
    import hashlib
    import tempfile  # at the first read-only command, not at start-up

    base = os.path.realpath(tempfile.gettempdir())
    if not set(base) <= _SAFE_PATH:
        raise _view_problem(f"TMPDIR {base!r} has characters overlayfs options cannot carry")
    if _inside(base, os.path.realpath(workspace)):
        raise _view_problem(f"TMPDIR {base!r} is inside the workspace (overlayfs refuses it)")
    root = os.path.join(base, f"{_VIEW_ROOT_PREFIX}{os.getuid()}")
    key = f"{os.path.realpath(workspace)}\0{session_id}\0{task_id or ''}".encode()
    path = os.path.join(root, hashlib.sha256(key).hexdigest()[:32])
    try:
        _own_private_dir(root)
        _prune_views(root, path)
        _own_private_dir(path)
        for sub in ("u", "w", "l"):
            _own_private_dir(os.path.join(path, sub))
        os.utime(path)
    except OSError as exc:
        raise _view_problem(str(exc)) from exc
    return path


_view_checked: list[str] = []
_view_lock = threading.Lock()


def _view_argv(unshare: str, view_dir: str, lower: str, argv: list[str]) -> list[str]:
    """``argv`` run behind the overlay view of ``lower`` (``_VIEW_SCRIPT``) in a fresh user and
    mount namespace: the one command line both the probe and every read-only command use."""
    return [
        unshare,
        "--user",
        "--map-root-user",
        "--mount",
        "--propagation",
        "private",
        "/bin/sh",
        "-c",
        _VIEW_SCRIPT,
        view_dir,
        lower,
        *argv,
    ]


def _check_view_available() -> str:
    """``unshare``'s path, once the view's mounts proved they work here (cached per process):
    an unprivileged overlay needs Linux 5.11+ and user namespaces."""
    with _view_lock:
        if _view_checked:
            return _view_checked[0]
        unshare = shutil.which("unshare")
        if unshare is None or shutil.which("mount") is None:
            raise _view_problem("unshare or mount (util-linux) is missing")
        import tempfile

        with tempfile.TemporaryDirectory(prefix="air-view-check-") as tmp:
            for sub in ("view/u", "view/w", "view/l", "lower"):
                os.makedirs(os.path.join(tmp, sub))
            argv = _view_argv(
                unshare, os.path.join(tmp, "view"), os.path.join(tmp, "lower"), ["/bin/true"]
            )
            try:
                done = subprocess.run(
                    argv, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
                )
                problem = done.stderr.strip() or f"exit code {done.returncode}"
                problem = problem if done.returncode else ""
            except (OSError, subprocess.SubprocessError) as exc:
                problem = str(exc)
            _open_work_dir(os.path.join(tmp, "view"))
        if problem:
            raise _view_problem(f"an overlay cannot be mounted here: {problem[:300]}")
        _view_checked.append(unshare)
        return unshare


class CommandSpace:
    """What one sandboxed command holds on the host, released by ``close`` once it has ended.

    Args:
        limits: the command's resource limits (IMPL-SBX-8).
        view_dir: the task has no write area: the command sees the workspace through an overlay
            whose writes land in this ``task_view_dir`` (IMPL-SBX-3), so builds work, later
            commands of the task see their outputs, and nothing reaches the project.

    Raises:
        AirException: ``environment_error`` when the read-only view needs ``unshare`` or
            ``mount`` (util-linux) and they are missing.
    """

    def __init__(self, limits: ResourceLimits, *, view_dir: str | None = None) -> None:
        self.limits = limits
        self.view_dir = view_dir
        self._unshare: str | None = None
        if view_dir is not None:
            self._unshare = _check_view_available()
        self.cgroup = PidsCgroup.create(limits.processes)

    @property
    def read_only(self) -> bool:
        return self.view_dir is not None

    def wrap(self, argv: list[str], workspace: str) -> list[str]:
        """``argv`` (a bwrap command line) behind the view's mounts and the cgroup's join."""
        if self._unshare is not None and self.view_dir is not None:
            argv = _view_argv(self._unshare, self.view_dir, workspace, argv)
        if self.cgroup is not None:
            argv = self.cgroup.join_argv(argv)
        return argv

    def close(self) -> None:
        """Remove the cgroup, killing what is left in it."""
        if self.cgroup is not None:
            self.cgroup.close()
            self.cgroup = None

    def __enter__(self) -> CommandSpace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_sandboxed(
    runner: SandboxRunner,
    command: str,
    *,
    workspace: str,
    cwd: str,
    network: bool,
    env: Mapping[str, str],
    stdout: int | IO[bytes] | None,
    stderr: int | IO[bytes] | None,
    stdin: int | IO[bytes] | None = subprocess.DEVNULL,
    space: CommandSpace | None = None,
) -> subprocess.Popen[bytes]:
    """Spawn ``command`` in the sandbox on the CALLING thread (synchronous, a few ms).

    ``space`` holds the command's limits, pids cgroup and read-only view (None: the default
    limits' rlimits only, the workspace writable; the caller closes it after the command).
    bwrap's ``--die-with-parent`` (PR_SET_PDEATHSIG) fires when the thread that forked bwrap
    exits, so the caller's thread must live as long as the command should (IMPL-SBX-2).
    The generated files and the seccomp filter travel in memfds, the protected workspace
    entries as O_PATH fds (``pin_protected``); all are closed here once bwrap has them.

    Raises:
        AirException: ``environment_error`` when bubblewrap is missing.
        OSError: when bwrap cannot be started.
    """
    opened: list[int] = []

    def memfd(content: bytes) -> int:
        fd = os.memfd_create("air-sandbox")
        opened.append(fd)
        os.write(fd, content)
        os.lseek(fd, 0, os.SEEK_SET)
        return fd

    try:
        pinned = pin_protected(os.path.realpath(workspace))
        opened += pinned.values()
        data_fds = {dest: memfd(content) for dest, content in runner.generated_files().items()}
        seccomp_fd = memfd(seccomp_program())
        argv = runner.argv(
            command,
            workspace=workspace,
            cwd=cwd,
            network=network,
            pinned=pinned,
            data_fds=data_fds,
            seccomp_fd=seccomp_fd,
            limits=space.limits if space is not None else None,
            read_only=space is not None and space.read_only,
        )
        if space is not None:
            argv = space.wrap(argv, os.path.realpath(workspace))
        return subprocess.Popen(
            argv,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            env=dict(env),
            start_new_session=True,
            pass_fds=tuple(opened),
        )
    finally:
        for fd in opened:
            os.close(fd)


class SandboxProcess:
    """A running sandboxed command: its pid, output streams and an async ``wait``."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        stdout: trio.lowlevel.FdStream,
        stderr: trio.lowlevel.FdStream,
    ) -> None:
        self._popen = popen
        self.stdout = stdout
        self.stderr = stderr
        self._pidfd: int | None
        try:
            self._pidfd = os.pidfd_open(popen.pid)
        except (OSError, AttributeError):  # pragma: no cover - kernels older than 5.3
            self._pidfd = None

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        return self._popen.returncode

    async def wait(self) -> int:
        """Wait for bwrap to exit (pidfd readable), reap it and return its exit code."""
        while self._popen.poll() is None:
            if self._pidfd is not None:
                await trio.lowlevel.wait_readable(self._pidfd)
            else:  # pragma: no cover - no pidfd: poll
                await trio.sleep(0.05)
        return self._popen.returncode

    def close(self) -> None:
        """Close the output streams and the pidfd (synchronous: safe in a cancelled finally)."""
        for stream in (self.stdout, self.stderr):
            stream.close()
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None


def start_sandboxed(
    runner: SandboxRunner,
    command: str,
    *,
    workspace: str,
    cwd: str,
    network: bool,
    env: Mapping[str, str],
    space: CommandSpace | None = None,
) -> SandboxProcess:
    """Start ``command`` from the thread running the Trio loop, with piped stdout/stderr.

    Synchronous on purpose: spawning in a Trio worker thread would tie ``--die-with-parent``
    to that thread, which Trio ends after 10 s idle, killing the command (issue 9, item 3).
    The loop's thread lives as long as air, so the command lives until its own timeout and
    still dies with air.

    Raises:
        AirException: ``environment_error`` when bubblewrap is missing.
        OSError: when bwrap cannot be started.
    """
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        popen = open_sandboxed(
            runner,
            command,
            workspace=workspace,
            cwd=cwd,
            network=network,
            env=env,
            stdout=out_w,
            stderr=err_w,
            space=space,
        )
    except BaseException:
        os.close(out_r)
        os.close(err_r)
        raise
    finally:
        os.close(out_w)
        os.close(err_w)
    return SandboxProcess(popen, trio.lowlevel.FdStream(out_r), trio.lowlevel.FdStream(err_r))
