"""The handlers of build and test tools: cmake, ctest, make, compilers, debuggers, pytest.

Owns ``HANDLERS`` for ``cmake`` (its cache variables naming compilers and flags, ``-P``
scripts, ``-E`` modes), ``ctest``, ``make`` (variables, ``-f`` files, ``$(shell)``), the
compilers and ``ld`` (options that load code), ``gdb``/``cgdb`` (``-x``, ``-ex``) and
``pytest`` (``-p`` plugins, ini options that run code). Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from air.contracts.permission import CommandCategory
from air.security.command_env import (
    FLAG_VARIABLES,
    PROGRAM_ENV,
    compiler_option_risk,
    flags_risk,
    program_value_ok,
)
from air.security.command_files import h_tar
from air.security.command_targets import outside_looking
from air.security.command_words import (
    DYNAMIC,
    Analyzer,
    HandlerFn,
    Segment,
    new_segment,
    options_before_dashdash,
)
from air.security.command_wrappers import h_env
from air.security.options import (
    CMAKE_E_MODES,
    MAKE_SPECIAL_VARIABLES,
    PYTEST_SAFE_INI,
    option_spec,
    scan,
)

__all__ = [
    "HANDLERS",
    "h_pytest",
]

C = CommandCategory


def _h_gdb(a: Analyzer, text: str, prog: str, args: list[str | None], depth: int) -> list[Segment]:
    scripted = ("-ex", "-iex", "--eval-command", "-x", "--command", "-ix", "--init-command")
    for x in args:
        if x is None or x in scripted or x.startswith(tuple(f"{o}=" for o in scripted)):
            return [new_segment(text, prog, C.OPAQUE, f"{prog} runs debugger commands (shell too)")]
        if x in ("-batch", "--batch", "-o", "--source"):
            return [new_segment(text, prog, C.OPAQUE, f"{prog} {x} runs a command file")]
    if "--args" in args:
        inner = list(args[args.index("--args") + 1 :])
        return a.wrapped_command(text, inner, depth, C.BUILD_TEST, prog, f"{prog} debugs a command")
    return [new_segment(text, prog, C.BUILD_TEST, f"{prog} debugs a program")]


_CMAKE_SPEC = option_spec(
    "DUCGTAStP",
    ("--build", "--install", "--toolchain", "--preset", "--target", "--config", "--prefix"),
)
_CMAKE_LAUNCH = re.compile(r"CMAKE_\w*_(?:COMPILER|COMPILER_LAUNCHER|LINKER_LAUNCHER|LINKER)$")
_CMAKE_FLAGS = re.compile(r"CMAKE_\w*FLAGS\w*$")
_CMAKE_CODE = frozenset(
    """CMAKE_TOOLCHAIN_FILE CMAKE_PROJECT_INCLUDE CMAKE_PROJECT_INCLUDE_BEFORE
    CMAKE_PROJECT_TOP_LEVEL_INCLUDES""".split()
)


def _h_cmake(
    a: Analyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[Segment]:
    """``cmake -E <mode>`` by its mode (options.CMAKE_E_MODES), ``-P``/``-C`` scripts and
    ``-D`` variables naming a program or code, ``--build DIR -- <native tool options>``."""
    if "-E" in args:
        return _cmake_e(a, text, list(args[args.index("-E") + 1 :]), depth)
    opts, _ = scan(options_before_dashdash(args), _CMAKE_SPEC)
    for opt in opts:
        value = opt.value
        if value is None:
            return [new_segment(text, prog, C.OPAQUE, f"cmake {opt.name} with a dynamic value")]
        if opt.name in ("-P", "-C") and outside_looking(value):
            return [
                new_segment(
                    text, prog, C.OPAQUE, f"cmake {opt.name} runs CMake code from outside: {value}"
                )
            ]
        if opt.name == "-D":
            var, _, setting = value.partition("=")
            var = var.split(":", 1)[0]
            if var in _CMAKE_CODE and outside_looking(setting):
                return [
                    new_segment(
                        text, prog, C.OPAQUE, f"cmake -D{var} loads CMake code from outside"
                    )
                ]
            if _CMAKE_FLAGS.match(var) or _CMAKE_LAUNCH.match(var):
                why = flags_risk(setting.split())
                if why:
                    return [new_segment(text, prog, C.OPAQUE, f"cmake -D{var}: {why}")]
            if _CMAKE_LAUNCH.match(var) and setting and not program_value_ok("CC", setting):
                return [
                    new_segment(
                        text,
                        prog,
                        C.OPAQUE,
                        f"cmake -D{var}={setting} runs {setting} as the compiler",
                    )
                ]
    if "--build" in args and "--" in args:
        native = list(args[args.index("--") + 1 :])
        why = _make_risk(native)
        if why:
            return [new_segment(text, prog, C.OPAQUE, f"cmake --build passes {why}")]
    if "-P" in args:
        return [
            new_segment(text, prog, C.BUILD_TEST, "cmake -P runs a CMake script of the workspace")
        ]
    return [new_segment(text, prog, C.BUILD_TEST, "cmake is build_test")]


def _cmake_e(a: Analyzer, text: str, rest: list[str | None], depth: int) -> list[Segment]:
    mode = rest[0] if rest else ""
    operands = rest[1:]
    if mode is None:
        return [new_segment(text, "cmake", C.OPAQUE, "cmake -E with a dynamic mode")]
    kind = CMAKE_E_MODES.get(mode)
    if kind is None:
        return [new_segment(text, "cmake", C.OPAQUE, f"cmake -E {mode}: unknown mode")]
    if kind == "read":
        return [new_segment(text, "cmake", C.READ_ONLY, f"cmake -E {mode} reads only")]
    if kind == "wrap_env":
        return h_env(a, text, "cmake", operands, depth + 1)
    if kind == "wrap":
        return a.wrapped_command(
            text, operands, depth, C.READ_ONLY, "cmake", f"cmake -E {mode} runs a command"
        )
    if kind == "chdir":
        where = operands[0] if operands and operands[0] is not None else DYNAMIC
        segs = a.wrapped_command(
            text, operands[1:], depth, C.READ_ONLY, "cmake", "cmake -E chdir runs a command"
        )
        segs[0].bases.append(where)
        return segs
    if kind == "tar":
        return h_tar(a, text, "cmake", operands, depth)
    paths = [
        p for p in operands if p is None or p not in ("-r", "-f", "-rf", "-fr", "-R", "--", "-t")
    ]
    if kind == "write_last" and "-t" in operands:  # copy -t DEST FILES...
        at = operands.index("-t")
        paths = operands[at + 1 : at + 2]
    elif kind == "write_last":
        paths = paths[-1:]
    cat = C.DESTRUCTIVE if kind == "remove" else C.FILE_MUTATION
    verb = "deletes" if kind == "remove" else "writes"
    seg = new_segment(text, "cmake", cat, f"cmake -E {mode} {verb} files")
    seg.write_targets.extend(p if p is not None else DYNAMIC for p in paths)
    return [seg]


def _h_ctest(
    a: Analyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[Segment]:
    """``ctest --test-command CMD`` runs CMD; ``-S``/``-SP``/``-SR`` scripts from outside are
    code from outside."""
    for i, x in enumerate(args):
        if x is None:
            continue
        if x == "--test-command":
            return a.wrapped_command(
                text,
                list(args[i + 1 :]),
                depth,
                C.BUILD_TEST,
                prog,
                "ctest --test-command runs a command",
            )
        if x in ("-S", "-SP", "-SR") and i + 1 < len(args):
            script = args[i + 1]
            if script is None or outside_looking(script):
                return [
                    new_segment(text, prog, C.OPAQUE, f"ctest {x} runs a CTest script from outside")
                ]
    return [new_segment(text, prog, C.BUILD_TEST, "ctest is build_test")]


_MAKE_SPEC = option_spec(  # -j/-l/-O take an optional, attached-only value here
    "CfIoWE",
    (
        "--directory",
        "--file",
        "--makefile",
        "--include-dir",
        "--old-file",
        "--assume-old",
        "--what-if",
        "--new-file",
        "--assume-new",
        "--eval",
    ),
    (
        "--jobs",
        "--load-average",
        "--output-sync",
        "--debug",
        "--dry-run",
        "--just-print",
        "--recon",
        "--keep-going",
        "--silent",
        "--quiet",
        "--always-make",
        "--environment-overrides",
        "--ignore-errors",
        "--question",
        "--touch",
        "--trace",
        "--print-directory",
        "--shuffle",
    ),
)
_MAKE_CODE_SUBST = re.compile(r"\$[({]\s*(?:shell|eval|file|guile|call|value)\b")
_STDIN_FILES = ("-", "/dev/stdin", "/proc/self/fd/0")


def _make_risk(args: Sequence[str | None]) -> str:
    """Why ``make args`` runs something the makefile does not say ("" when it does not)."""
    opts, operands = scan(args, _MAKE_SPEC)
    for opt in opts:
        if opt.name in ("-E", "--eval"):
            return f"make {opt.name} evaluates makefile text (its $(shell ...) runs commands)"
        if opt.name in ("-f", "--file", "--makefile") and (
            opt.value is None or opt.value in _STDIN_FILES or opt.value.startswith("/dev/fd/")
        ):
            return "make reads its makefile from standard input or a dynamic name"
        if opt.name in ("-I", "--include-dir") and (
            opt.value is None or outside_looking(opt.value)
        ):
            return "make includes makefiles from outside the project"
    for word in operands:
        if word is None:
            continue
        name, eq, value = word.partition("=")
        if not eq:
            continue
        name, value = name.split()[-1] if name.strip() else name, value.strip()
        if name.endswith("!"):
            return f"make {word} assigns the output of a shell command"
        name = name.rstrip(":+?").strip()
        kind = MAKE_SPECIAL_VARIABLES.get(name)
        if kind == "make":
            return f"make {name}= sets make's own options or makefiles"
        if kind == "shell" and not program_value_ok("SHELL", value):
            return f"make {name}={value} runs every recipe with {value}"
        if kind == "shellflags" and re.fullmatch(r"-[a-z]*c", value.strip()) is None:
            return f"make .SHELLFLAGS={value} changes how recipes run"
        if name in PROGRAM_ENV and value and not program_value_ok(name, value):
            return f"make {name}={value} runs {value.split(' ', 1)[0]} as its {name}"
        if name in PROGRAM_ENV or name in FLAG_VARIABLES:
            why = flags_risk(value.split())
            if why:
                return f"make {name}=: {why}"
        if _MAKE_CODE_SUBST.search(value):
            return f"make {name}= holds a make function that runs code"
    return ""


def _h_make(a: Analyzer, text: str, prog: str, args: list[str | None], depth: int) -> list[Segment]:
    why = _make_risk(args)
    if why:
        return [new_segment(text, prog, C.OPAQUE, why)]
    return [new_segment(text, prog, C.BUILD_TEST, f"{prog} is build_test")]


def _h_compiler(
    a: Analyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[Segment]:
    """Compiler drivers and linkers: ``-wrapper`` runs its program (classified), plugins,
    spec and response files, ``-B`` and unknown linkers run or load code (opaque)."""
    own = new_segment(text, prog, C.BUILD_TEST, f"{prog} is build_test")
    for i, x in enumerate(args):
        nxt = args[i + 1] if i + 1 < len(args) else ""
        if x is None:
            continue
        if x == "-wrapper":
            if nxt is None:
                return [
                    new_segment(text, prog, C.OPAQUE, f"{prog} -wrapper with a dynamic program")
                ]
            wrapped: list[str | None] = list(nxt.split(","))
            return [own, *a.classify_argv(text, wrapped, depth + 1)]
        why = compiler_option_risk(prog, x, nxt)
        if why:
            return [new_segment(text, prog, C.OPAQUE, why)]
    return [own]


_PYTEST_SPEC = option_spec(
    "pockmrW",
    (
        "--override-ini",
        "--basetemp",
        "--rootdir",
        "--config-file",
        "--confcutdir",
        "--pdbcls",
        "--junitxml",
        "--junit-xml",
        "--import-mode",
        "--deselect",
        "--ignore",
        "--ignore-glob",
        "--cov",
        "--cov-report",
        "--cov-config",
        "--debug",
        "--log-file",
        "--maxfail",
        "--durations",
        "--tb",
        "--capture",
    ),
    ("--collect-only", "--exitfirst", "--verbose", "--quiet", "--lf", "--ff", "--pyargs"),
)


def h_pytest(
    a: Analyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[Segment]:
    """pytest: ``-p NAME`` imports a plugin (``-p no:NAME`` only disables one), ``-o`` ini keys
    outside ``PYTEST_SAFE_INI`` and ``--pdbcls`` load code; ``--basetemp DIR`` deletes DIR
    first (destructive); ``--debug FILE``/``-o cache_dir=`` write there."""
    opts, _ = scan(args, _PYTEST_SPEC)
    destroyed: list[str] = []
    writes: list[str] = []
    for opt in opts:
        value = opt.value
        if value is None:
            return [new_segment(text, prog, C.OPAQUE, f"{prog} {opt.name} with a dynamic value")]
        if opt.name == "-p" and not value.startswith("no:"):
            return [new_segment(text, prog, C.OPAQUE, f"{prog} -p {value} imports a plugin module")]
        if opt.name in ("-o", "--override-ini"):
            key = value.split("=", 1)[0].strip()
            if key == "cache_dir":
                writes.append(value.split("=", 1)[1] if "=" in value else DYNAMIC)
            elif key not in PYTEST_SAFE_INI:
                return [
                    new_segment(
                        text, prog, C.OPAQUE, f"{prog} -o {key}= changes what pytest loads or runs"
                    )
                ]
        elif opt.name == "--pdbcls":
            return [new_segment(text, prog, C.OPAQUE, f"{prog} --pdbcls imports {value}")]
        elif opt.name == "--basetemp":
            destroyed.append(value)
    if destroyed:
        seg = new_segment(
            text, prog, C.DESTRUCTIVE, f"{prog} --basetemp deletes {destroyed[0]} before the run"
        )
        seg.write_targets.extend(destroyed)
    else:
        seg = new_segment(text, prog, C.BUILD_TEST, f"{prog} is build_test")
    seg.write_targets.extend(writes)
    return [seg]


HANDLERS: dict[str, HandlerFn] = {
    **dict.fromkeys(("gcc", "g++", "cc", "c++", "clang", "clang++", "ld"), _h_compiler),
    "cmake": _h_cmake,
    "ctest": _h_ctest,
    "make": _h_make,
    "gmake": _h_make,
    "gdb": _h_gdb,
    "cgdb": _h_gdb,
    "pytest": h_pytest,
    "py.test": h_pytest,
}
