"""What a program's options do: the tables behind classifying a command by what it does.

Owns the option tables the command analyzer reads for programs whose options (or modes) run
another program, load code or write a file — ``cmake -E`` modes, make's special variables,
compiler drivers' linkers and toolchain names, sort's compressors, pytest's ini keys — and
``scan``, a GNU-style option scanner (``-abc`` clusters, ``-xVALUE``, ``--long=VALUE``,
``--long VALUE``, unambiguous abbreviations such as ``--comp`` for ``--compress-program``,
``--`` ends the options). Every lookup is a dict or set lookup: the cost of a decision does not
grow with the size of the tables. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

__all__ = [
    "CMAKE_E_MODES",
    "COMPRESSORS",
    "KNOWN_LINKERS",
    "MAKE_SPECIAL_VARIABLES",
    "PYTEST_SAFE_INI",
    "TOOLCHAIN_NAME",
    "Opt",
    "OptionSpec",
    "scan",
]


class Opt(NamedTuple):
    """One option as given: its canonical name (``-x`` or ``--long``) and its value (``""``
    for a flag, None when the value depends on an expansion)."""

    name: str
    value: str | None


class OptionSpec(NamedTuple):
    """How one program's options are spelled: short options taking a value, long options
    taking a value, and every unambiguous prefix (3 characters or more) of its long options."""

    short_valued: str
    long_valued: frozenset[str]
    prefixes: dict[str, str]


def option_spec(
    short_valued: str, long_valued: Iterable[str], long_flags: Iterable[str] = ()
) -> OptionSpec:
    """Build an ``OptionSpec``; GNU ``getopt_long`` accepts any unambiguous prefix of a long
    option, so each one maps to the option it abbreviates (an ambiguous prefix maps to
    nothing: the program itself refuses it)."""
    valued = frozenset(long_valued)
    names = sorted({*valued, *long_flags})
    seen: dict[str, set[str]] = {}
    for name in names:
        for end in range(3, len(name) + 1):
            seen.setdefault(name[:end], set()).add(name)
    prefixes = {p: next(iter(c)) for p, c in seen.items() if len(c) == 1}
    prefixes.update({n: n for n in names})
    return OptionSpec(short_valued, valued, prefixes)


DYNAMIC = "$dynamic"
"""The value the analyzer gives an option whose value is an expansion (``--pre=$X``)."""


def scan(
    args: Sequence[str | None], spec: OptionSpec, *, interspersed: bool = True
) -> tuple[list[Opt], list[str | None]]:
    """Split ``args`` into options and operands the way GNU ``getopt_long`` does (options may
    follow operands unless ``interspersed`` is False: then the first operand ends them, as
    optparse's ``disable_interspersed_args`` and ``python -m`` modules do; ``--`` ends them; a
    dynamic word is an operand; a ``$dynamic`` value is returned as None)."""
    opts = _scan(args, spec, interspersed)
    return [o if o.value != DYNAMIC else Opt(o.name, None) for o in opts[0]], opts[1]


def _scan(
    args: Sequence[str | None], spec: OptionSpec, interspersed: bool
) -> tuple[list[Opt], list[str | None]]:
    opts: list[Opt] = []
    operands: list[str | None] = []
    i, n = 0, len(args)
    while i < n:
        arg = args[i]
        i += 1
        if arg is None or arg == "-" or not arg.startswith("-"):
            if not interspersed:
                operands.extend(args[i - 1 :])
                break
            operands.append(arg)
            continue
        if arg == "--":
            operands.extend(args[i:])
            break
        if arg.startswith("--"):
            typed, eq, value = arg.partition("=")
            name = spec.prefixes.get(typed, typed)
            if eq:
                opts.append(Opt(name, value))
            elif name in spec.long_valued and i < n:
                opts.append(Opt(name, args[i]))
                i += 1
            else:
                opts.append(Opt(name, ""))
            continue
        for j in range(1, len(arg)):
            flag = "-" + arg[j]
            if arg[j] in spec.short_valued:
                if j + 1 < len(arg):
                    opts.append(Opt(flag, arg[j + 1 :]))
                elif i < n:
                    opts.append(Opt(flag, args[i]))
                    i += 1
                else:
                    opts.append(Opt(flag, ""))
                break
            opts.append(Opt(flag, ""))
    return opts, operands


# `cmake -E <mode>`: what each mode does with its operands.
#   read: reads or prints only; wrap: runs the rest as a command (env, time, chdir DIR);
#   write_all / write_last / write_both: writes every operand / the last / source and
#   destination (rename); remove: deletes every operand; tar: like tar itself.
CMAKE_E_MODES: dict[str, str] = {
    **dict.fromkeys(
        """capabilities echo echo_append environment true false compare_files md5sum sha1sum
        sha224sum sha256sum sha384sum sha512sum sleep cat help -h --help""".split(),
        "read",
    ),
    "env": "wrap_env",
    "time": "wrap",
    "chdir": "chdir",
    **dict.fromkeys("make_directory touch touch_nocreate".split(), "write_all"),
    **dict.fromkeys(
        """copy copy_if_different copy_directory copy_directory_if_different create_symlink
        create_hardlink""".split(),
        "write_last",
    ),
    "rename": "write_both",
    **dict.fromkeys("rm remove remove_directory".split(), "remove"),
    "tar": "tar",
}

# GNU make variables that change what make runs, whatever the makefile says.
#   shell: runs every recipe line (only a shell may be named); shellflags: its flags (only
#   `-c`-like clusters); make: re-reads options or makefiles (always opaque).
MAKE_SPECIAL_VARIABLES: dict[str, str] = {
    "SHELL": "shell",
    "MAKESHELL": "shell",
    ".SHELLFLAGS": "shellflags",
    **dict.fromkeys("MAKEFLAGS MFLAGS GNUMAKEFLAGS MAKEFILES MAKEOVERRIDES".split(), "make"),
}

# A compiler, linker or binutils name, with a target triple before it or a version after it
# (`x86_64-linux-gnu-gcc-12`, `clang++-17`, `ld.lld`, `llvm-ar`): what a `CC=`-style variable
# or `cmake -DCMAKE_C_COMPILER=` may name without asking.
TOOLCHAIN_NAME = re.compile(
    r"(?:[A-Za-z0-9_.]+-)*(?:gcc|g\+\+|cc|c\+\+|cpp|clang|clang\+\+|clang-cl|icc|icpc|icx|icpx"
    r"|tcc|zig|ld|ld\.bfd|ld\.gold|ld\.lld|lld|mold|gold|ar|as|nm|ranlib|strip|objcopy|objdump"
    r"|readelf|gfortran|f77|f95|rustc|nvcc|ccache|sccache|distcc|icecc|emcc|em\+\+|windres"
    r"|gcc-ar|gcc-nm|gcc-ranlib|make|gmake|ninja)(?:-[0-9.]+)?"
)

# `-fuse-ld=` names the driver resolves to its own linkers.
KNOWN_LINKERS = frozenset("bfd gold lld mold ld lld-link".split())

# `sort --compress-program` values that are plain compressors (run as filters).
COMPRESSORS = frozenset(
    "gzip bzip2 xz zstd lz4 lzop pigz pbzip2 pzstd lzip lzma brotli compress".split()
)

# pytest ini keys a `-o key=value` may set without loading code or moving its files: the rest
# (addopts, plugins, pythonpath, cache_dir, ...) run or load something, or write elsewhere.
PYTEST_SAFE_INI = frozenset(
    """console_output_style log_cli log_cli_level log_level log_format log_date_format
    log_cli_format log_cli_date_format xfail_strict filterwarnings markers testpaths
    python_files python_classes python_functions norecursedirs junit_family
    junit_suite_name junit_logging junit_duration_report empty_parameter_set_mark
    verbosity_assertions verbosity_test_cases truncation_limit_lines truncation_limit_chars
    asyncio_mode asyncio_default_fixture_loop_scope timeout strict_markers minversion
    faulthandler_timeout doctest_optionflags doctest_encoding usefixtures""".split()
)
