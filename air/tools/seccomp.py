"""The seccomp filter of every sandboxed command: a classic BPF program, built once, that makes
``ptrace`` and ``process_vm_writev`` of PID 1 (bwrap's init) fail with EPERM (IMPL-SBX-2).

A pure function of the architecture table; bwrap reads it from a memfd
(``air.tools.sandbox_spawn``).
"""

from __future__ import annotations

import functools
import struct

__all__ = ["seccomp_program"]

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
