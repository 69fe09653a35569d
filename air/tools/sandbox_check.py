"""Whether bubblewrap can build air's sandbox here: there is no unsandboxed mode (IMPL-SBX-6).

Owns the part of every bwrap command line that the probe tests (``identity_args``: the user
namespace with its ids, ``sandbox_ids``, the capability drop and the pid namespace; the read-only
system trees ``SYSTEM_PATHS``), ``check_sandbox_available`` (runs bwrap once per path, cached; an
``environment_error`` otherwise), ``missing_bwrap`` (the error when bwrap is not installed) and
``SandboxProbe`` (the check started in a thread while ``air run`` goes on importing,
IMPL-BOOT-11).
"""

from __future__ import annotations

import os
import subprocess
import threading

from air.contracts.error import AirException, ErrorKind
from air.search_path import installed

__all__ = [
    "SYSTEM_PATHS",
    "SandboxProbe",
    "check_sandbox_available",
    "identity_args",
    "missing_bwrap",
    "sandbox_ids",
]

_UID_FOR_ROOT = 1000
"""The uid (and gid) a command sees when air runs as root; otherwise it keeps air's own ids."""

SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
"""Read-only system trees; on merged-/usr systems the top-level ones are recreated as symlinks."""


def sandbox_ids() -> tuple[int, int]:
    """The uid and gid a command sees: air's own, or ``_UID_FOR_ROOT`` for root."""
    uid, gid = os.getuid(), os.getgid()
    return (uid or _UID_FOR_ROOT, gid or _UID_FOR_ROOT)


def identity_args() -> list[str]:
    """bwrap's user, pid namespace and capability drop: the same for a command and the probe."""
    uid, gid = sandbox_ids()
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


def missing_bwrap() -> AirException:
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
    path = bwrap_path if bwrap_path is not None else installed("bwrap")
    if path is None:
        raise missing_bwrap()
    if not probe:
        return path
    with _probe_lock:
        if path in _probed:
            return path
        argv = [
            path,
            *identity_args(),
            "--unshare-net",
            *[a for p in SYSTEM_PATHS if os.path.isdir(p) for a in ("--ro-bind", p, p)],
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
