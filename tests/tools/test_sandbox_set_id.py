"""A sandboxed command gives no file a set-user-ID or set-group-ID bit (IMPL-SBX-1).

Its files are the user's on the host (root's when air runs as root: the sandbox's uid maps
back to it), in the user's directory: ``cp /bin/sh x; chmod 4755 x`` made a set-user-ID root
shell there, which any local user reaching the directory could run. Every way to set the bit
fails with EPERM: ``chmod``/``fchmod``/``fchmodat``/``fchmodat2``, a file made by ``open``,
``openat``, ``creat``, ``mknod`` or ``O_TMPFILE`` with such a mode, ``install -m``;
``openat2`` and io_uring (whose modes a filter cannot read) are unknown calls (ENOSYS). Plain
modes, and an ``openat`` that creates nothing whatever its unused mode argument, still work.
Run as root and as nobody, through the real sandbox.
"""

from __future__ import annotations

import os
import stat

from tests.tools.sandbox_probe import Sandboxed

ATTEMPTS = r"""cp /bin/sh shell
install -m 4755 /bin/sh installed 2>/dev/null; echo "install $?"
python3 - <<'PY'
import ctypes, os, stat
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
AT_FDCWD = -100
def res(value):
    return "ok" if value >= 0 else os.strerror(ctypes.get_errno())
def attempt(name, call):
    try:
        call()
        print(name, "ok")
    except OSError as exc:
        print(name, exc.strerror)
attempt("chmod-suid", lambda: os.chmod("shell", 0o4755))
attempt("chmod-sgid", lambda: os.chmod("shell", 0o2755))
attempt("chmod-plain", lambda: os.chmod("shell", 0o750))
fd = os.open("shell", os.O_RDONLY)
attempt("fchmod-suid", lambda: os.fchmod(fd, 0o4755))
attempt("fchmod-plain", lambda: os.fchmod(fd, 0o755))
print("fchmodat2-suid", res(libc.syscall(452, AT_FDCWD, b"shell", 0o4755, 0)))
attempt("open-suid", lambda: os.open("made", os.O_CREAT | os.O_WRONLY, 0o4755))
attempt("open-plain", lambda: os.close(os.open("plain", os.O_CREAT | os.O_WRONLY, 0o755)))
print("creat-suid", res(libc.creat(b"created", 0o4755)))
attempt("mknod-suid", lambda: os.mknod("node", stat.S_IFREG | 0o4755))
O_TMPFILE = 0o20000000 | os.O_DIRECTORY
attempt("tmpfile-suid", lambda: os.open(".", O_TMPFILE | os.O_WRONLY, 0o4755))
# openat that creates nothing: its mode argument is unused, whatever it holds
print("openat-read", res(libc.syscall(257, AT_FDCWD, b"shell", os.O_RDONLY, 0o4755)))
print("openat2", res(libc.syscall(437, AT_FDCWD, b"shell", None, 0)))
print("io_uring_setup", res(libc.syscall(425, 1, None)))
PY
"""


def test_no_file_gets_a_set_id_bit(box: Sandboxed) -> None:
    out = box.run(ATTEMPTS)
    assert out["exit_code"] == 0, out
    lines = str(out["stdout"]).splitlines()
    denied = "Operation not permitted"
    assert lines == [
        "install 1",
        f"chmod-suid {denied}",
        f"chmod-sgid {denied}",
        "chmod-plain ok",
        f"fchmod-suid {denied}",
        "fchmod-plain ok",
        f"fchmodat2-suid {denied}",
        f"open-suid {denied}",
        "open-plain ok",
        f"creat-suid {denied}",
        f"mknod-suid {denied}",
        f"tmpfile-suid {denied}",
        "openat-read ok",
        "openat2 Function not implemented",
        "io_uring_setup Function not implemented",
    ], out
    for dirpath, _, filenames in os.walk(box.workspace):
        for name in filenames:
            mode = os.lstat(os.path.join(dirpath, name)).st_mode
            assert not mode & (stat.S_ISUID | stat.S_ISGID), (name, oct(mode))
    assert stat.S_IMODE(os.stat(box.workspace / "shell").st_mode) == 0o755
