"""A command cannot tamper with bwrap's PID-1 init, which makes the sandbox die with air.

The init holds the parent-death signal; with the same uid, a command could ptrace it (or write
its memory) and clear that signal to outlive air. The seccomp filter refuses ``ptrace`` and
``process_vm_writev`` aimed at PID 1 (also with high bits set in the pid argument) and PID 1's
memory files are masked, while ptrace of the command's own children (debuggers, sanitizers)
still works. Run as root and as nobody.
"""

from __future__ import annotations

from tests.tools.sandbox_probe import Sandboxed

TAMPER = r"""python3 - <<'PY'
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
libc.process_vm_writev.argtypes = [
    ctypes.c_long, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong
]
def result(value):
    return "ok" if value >= 0 else os.strerror(ctypes.get_errno())
PTRACE_SEIZE, PTRACE_DETACH = 0x4206, 17
print("ptrace-init", result(libc.ptrace(PTRACE_SEIZE, 1, None, None)))
print("ptrace-init-high", result(libc.ptrace(PTRACE_SEIZE, (1 << 32) | 1, None, None)))
print("vm-writev-init", result(libc.process_vm_writev(1, None, 0, None, 0, 0)))
for path in ("/proc/1/mem", "/proc/1/task/1/mem"):
    try:
        os.close(os.open(path, os.O_RDWR))
        print("open", path, "ok")
    except OSError as exc:
        print("open", path, exc.strerror)
child = os.fork()
if child == 0:
    time.sleep(5)
    os._exit(0)
print("ptrace-child", result(libc.ptrace(PTRACE_SEIZE, child, None, None)))
os.kill(child, 9)
os.waitpid(child, 0)
PY"""


def test_the_init_cannot_be_traced_or_written_but_children_can(box: Sandboxed) -> None:
    out = box.run(TAMPER)
    assert out["exit_code"] == 0, out
    lines = str(out["stdout"]).splitlines()
    assert "ptrace-init Operation not permitted" in lines
    assert "ptrace-init-high Operation not permitted" in lines
    assert "vm-writev-init Operation not permitted" in lines
    assert "open /proc/1/mem Permission denied" in lines
    assert "open /proc/1/task/1/mem Permission denied" in lines
    assert "ptrace-child ok" in lines
