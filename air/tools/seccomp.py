"""The seccomp filter of every sandboxed command: a classic BPF program, built once, that makes
``ptrace`` and ``process_vm_writev`` of PID 1 (bwrap's init) fail with EPERM (IMPL-SBX-2), and
any set-user-ID or set-group-ID bit a command would give a file (``chmod`` and its kin, a file
made by ``open``/``creat``/``mknod`` with such a mode) fail with EPERM, and the kernel's
keyrings unknown (ENOSYS).

A pure function of the architecture table; bwrap reads it from a memfd
(``air.tools.sandbox_spawn``).
"""

from __future__ import annotations

import functools
import struct

__all__ = ["seccomp_program"]

# seccomp BPF (linux/filter.h, linux/seccomp.h, linux/audit.h).
_LD_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW, _EPERM, _ENOSYS = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38
_X32_BIT = 0x40000000
_SET_ID = 0o6000
"""S_ISUID | S_ISGID."""
_CREATES = 0o100 | 0o20000000
"""O_CREAT | __O_TMPFILE (the same on x86 and the generic table): a mode argument is read."""

# What each checked system call is, by architecture: ("pid", (arg,)) denies PID 1 in that
# argument; ("mode", (arg,)) a set-id bit in it; ("create", (flags, mode)) one in ``mode``
# when ``flags`` create a file; ("enosys", ()) makes the call unknown: openat2 takes its mode
# in a struct a filter cannot read, io_uring opens files without a system call of its own, and
# the keyrings (add_key, request_key, keyctl) are not namespaced: a command inherited air's
# session keyring, and could read what the user's session keeps there.
_SYSCALLS: tuple[tuple[int, dict[int, tuple[str, tuple[int, ...]]]], ...] = (
    (
        0xC000003E,  # x86_64
        {
            101: ("pid", (1,)),  # ptrace
            311: ("pid", (0,)),  # process_vm_writev
            2: ("create", (1, 2)),  # open
            85: ("mode", (1,)),  # creat
            90: ("mode", (1,)),  # chmod
            91: ("mode", (1,)),  # fchmod
            133: ("mode", (1,)),  # mknod
            257: ("create", (2, 3)),  # openat
            259: ("mode", (2,)),  # mknodat
            268: ("mode", (2,)),  # fchmodat
            452: ("mode", (2,)),  # fchmodat2
            425: ("enosys", ()),  # io_uring_setup
            437: ("enosys", ()),  # openat2
            248: ("enosys", ()),  # add_key
            249: ("enosys", ()),  # request_key
            250: ("enosys", ()),  # keyctl
        },
    ),
    (
        0x40000003,  # i386
        {
            26: ("pid", (1,)),
            348: ("pid", (0,)),
            5: ("create", (1, 2)),
            8: ("mode", (1,)),
            15: ("mode", (1,)),
            94: ("mode", (1,)),
            14: ("mode", (1,)),
            295: ("create", (2, 3)),
            297: ("mode", (2,)),
            306: ("mode", (2,)),
            452: ("mode", (2,)),
            425: ("enosys", ()),
            437: ("enosys", ()),
            286: ("enosys", ()),
            287: ("enosys", ()),
            288: ("enosys", ()),
        },
    ),
    (
        0xC00000B7,  # aarch64 (the generic table: no open, creat, chmod or mknod)
        {
            117: ("pid", (1,)),
            271: ("pid", (0,)),
            56: ("create", (2, 3)),  # openat
            33: ("mode", (2,)),  # mknodat
            52: ("mode", (1,)),  # fchmod
            53: ("mode", (2,)),  # fchmodat
            452: ("mode", (2,)),
            425: ("enosys", ()),
            437: ("enosys", ()),
            217: ("enosys", ()),
            218: ("enosys", ()),
            219: ("enosys", ()),
        },
    ),
)
_Insn = tuple[int, str | None, str | None, int]


def _arg(index: int) -> _Insn:
    """Load the low 32 bits of argument ``index`` (little-endian ``seccomp_data.args``)."""
    return (_LD_ABS, None, None, 16 + 8 * index)


@functools.cache
def seccomp_program() -> bytes:
    """A seccomp filter: ``ptrace`` and ``process_vm_writev`` of PID 1 fail with EPERM, and
    so does any call that would give a file a set-user-ID or set-group-ID bit.

    PID 1 is bwrap's init, which holds the parent-death signal that ends the sandbox with air;
    a command of the same uid could otherwise ptrace it and clear that signal. Other pids
    (a debugger on the command's own children, LeakSanitizer) are unaffected; the x32 ABI is
    refused (its syscall numbers would bypass the check). Architectures not listed are not
    filtered. Only the low 32 bits of a pid or a mode are compared: the kernel truncates them.

    A set-id bit: the workspace is the user's directory, and a command's files are the user's
    on the host (root's when air runs as root), so ``chmod 4755`` on a copy of a shell made a
    set-user-ID root program there, which any local user who reaches the directory could run.
    """
    items: list[str | _Insn] = [(_LD_ABS, None, None, 4)]
    items += [(_JEQ, f"arch{i}", None, arch) for i, (arch, _) in enumerate(_SYSCALLS)]
    items.append((_RET, None, None, _ALLOW))
    for i, (arch, calls) in enumerate(_SYSCALLS):
        items += [f"arch{i}", (_LD_ABS, None, None, 0)]
        if arch == 0xC000003E:
            items.append((_JGE, f"deny{i}", None, _X32_BIT))
        items += [(_JEQ, f"call{i}_{nr}", None, nr) for nr in calls]
        items.append((_RET, None, None, _ALLOW))
        for nr, (kind, args) in calls.items():
            items.append(f"call{i}_{nr}")
            if kind == "pid":
                items += [_arg(args[0]), (_JEQ, f"deny{i}", f"allow{i}", 1)]
            elif kind == "mode":
                items += [_arg(args[0]), (_JSET, f"deny{i}", f"allow{i}", _SET_ID)]
            elif kind == "create":
                items += [_arg(args[0]), (_JSET, None, f"allow{i}", _CREATES)]
                items += [_arg(args[1]), (_JSET, f"deny{i}", f"allow{i}", _SET_ID)]
            else:
                items.append((_RET, None, None, _ENOSYS))
        items += [f"allow{i}", (_RET, None, None, _ALLOW), f"deny{i}", (_RET, None, None, _EPERM)]
    return _assemble(items)


def _assemble(items: list[str | _Insn]) -> bytes:
    """Instructions with label jumps resolved to forward offsets (``None``: the next one)."""
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
        assert 0 <= jump_true <= 255, item  # forward, 8 bits
        assert 0 <= jump_false <= 255, item
        out += struct.pack("=HBBI", code, jump_true, jump_false, k)
        index += 1
    return bytes(out)
