"""What an environment variable or a compiler flag a command sets changes about what runs.

Owns the variable tables (those that change what runs whatever their value, those naming a
program, those holding code search paths, those passing flags to a compiler or linker),
``env_risk`` (why ``NAME=value`` changes what runs, "" when it does not), ``program_value_ok``
(a program variable naming a known tool) and ``flags_risk``/``compiler_option_risk`` (compiler
and linker options that load code: plugins, specs, ``-B``, ``-fuse-ld``). Pure: no I/O.
"""

from __future__ import annotations

import os.path
from collections.abc import Sequence

from air.security.command_tables import BUILD_TEST_PROGRAMS, SAFE_BIN_DIRS, SHELLS
from air.security.command_targets import outside_looking
from air.security.options import (
    KNOWN_LINKERS,
    TOOLCHAIN_NAME,
)

__all__ = [
    "FLAG_VARIABLES",
    "PROGRAM_ENV",
    "compiler_option_risk",
    "env_risk",
    "flags_risk",
    "program_value_ok",
]

_DANGEROUS_ENV = frozenset(
    """PATH LD_PRELOAD LD_LIBRARY_PATH LD_AUDIT BASH_ENV ENV PROMPT_COMMAND IFS PS4 SHELLOPTS
    BASHOPTS GIT_DIR GIT_WORK_TREE GIT_SSH GIT_SSH_COMMAND GIT_EXEC_PATH GIT_EXTERNAL_DIFF
    GIT_ASKPASS SSH_ASKPASS GIT_PROXY_COMMAND GIT_CONFIG GIT_CONFIG_GLOBAL GIT_CONFIG_SYSTEM
    GIT_CONFIG_COUNT GIT_TEMPLATE_DIR GIT_INDEX_FILE EDITOR VISUAL PAGER GIT_PAGER GIT_EDITOR
    PYTHONSTARTUP PYTHONINSPECT PERL5OPT PERL5LIB RUBYOPT NODE_OPTIONS DYLD_INSERT_LIBRARIES
    HOME ZDOTDIR XDG_CONFIG_HOME""".split()
)
# Variables naming a program to run (a bare name is looked up on PATH; a path outside the
# project runs code from elsewhere) and search paths for code (any component outside does).
PROGRAM_ENV = frozenset(
    """CC CXX CPP LD AR AS NM RANLIB STRIP OBJCOPY FC F77 RUSTC RUSTC_WRAPPER
    RUSTC_WORKSPACE_WRAPPER CARGO_BUILD_RUSTC_WRAPPER CMAKE_C_COMPILER_LAUNCHER
    CMAKE_CXX_COMPILER_LAUNCHER MAKE SHELL CONFIG_SHELL PYTHON NODE JAVA_HOME GOROOT""".split()
)
_CODE_PATH_ENV = frozenset(
    """PYTHONPATH PYTHONHOME PYTHONUSERBASE PYTHONPYCACHEPREFIX NODE_PATH RUBYLIB PERLLIB
    CLASSPATH GEM_PATH GEM_HOME GOPATH GOFLAGS CARGO_HOME RUSTUP_HOME PKG_CONFIG_PATH
    CPATH C_INCLUDE_PATH LIBRARY_PATH ACLOCAL_PATH COMPILER_PATH GCC_EXEC_PREFIX""".split()
)
_ALWAYS_OPAQUE_ENV = frozenset(
    """JAVA_TOOL_OPTIONS _JAVA_OPTIONS JDK_JAVA_OPTIONS MAVEN_OPTS GRADLE_OPTS LESSOPEN
    LESSCLOSE MANPAGER BROWSER RUSTFLAGS RUSTDOCFLAGS CARGO_ENCODED_RUSTFLAGS PYTEST_ADDOPTS
    PYTEST_PLUGINS COVERAGE_PROCESS_START NPM_CONFIG_SCRIPT_SHELL npm_config_script_shell
    MAKEFLAGS MFLAGS GNUMAKEFLAGS MAKEFILES MAKEOVERRIDES RIPGREP_CONFIG_PATH""".split()
)


def env_risk(name: str, value: str | None) -> str:
    """Why setting ``name=value`` changes what runs ("" when it does not)."""
    if name in _DANGEROUS_ENV or name in _ALWAYS_OPAQUE_ENV:
        return f"sets {name}, which changes what runs"
    if name.startswith(("GIT_CONFIG_", "LD_", "DYLD_")):
        return f"sets {name}, which changes what runs"
    if name in PROGRAM_ENV or name in _CODE_PATH_ENV:
        if value is None:
            return f"sets {name} to a dynamic value, which changes what runs"
        parts = value.split(":") if name in _CODE_PATH_ENV else [value.split(" ", 1)[0]]
        outside = [p for p in parts if p and outside_looking(p)]
        if outside:
            return f"sets {name} to {outside[0]}, code from outside the project"
        if name in PROGRAM_ENV and value and not program_value_ok(name, value):
            return f"sets {name} to {value.split(' ', 1)[0]}, which then runs in its place"
    if (name in PROGRAM_ENV or name in FLAG_VARIABLES) and value:
        why = flags_risk(value.split())
        if why:
            return f"sets {name}: {why}"
    return ""


# Variables whose words a build passes to the compiler or linker (`make`'s implicit rules, cmake).
FLAG_VARIABLES = frozenset(
    "CFLAGS CXXFLAGS CPPFLAGS LDFLAGS LDLIBS FFLAGS ASFLAGS TARGET_ARCH OBJCFLAGS CCFLAGS".split()
)


def program_value_ok(name: str, value: str) -> bool:
    """Whether ``value`` of a variable naming a program (``CC``, ``SHELL``, ``PYTHON``) names a
    program of that kind; a directory variable (``JAVA_HOME``) is judged on its path only."""
    if name in ("JAVA_HOME", "GOROOT"):
        return True
    word = value.split(" ", 1)[0]
    head, base = os.path.split(word)
    if head and os.path.normpath(head) not in SAFE_BIN_DIRS and not outside_looking(word):
        return True  # a program of the project (`CC=./tools/cc`): workspace code, as before
    if name in ("SHELL", "CONFIG_SHELL", "MAKESHELL"):
        return base in SHELLS and value.strip() == word  # `SHELL='sh -c "rm x"'` is no shell
    if name in ("PYTHON", "NODE"):
        return base.startswith(("python", "pypy", "node"))
    return TOOLCHAIN_NAME.fullmatch(base) is not None or base in BUILD_TEST_PROGRAMS


_LINKER_B_MODES = frozenset(
    "-Bstatic -Bdynamic -Bsymbolic -Bsymbolic-functions -Bshareable -Bgroup -Bno-symbolic".split()
)


def compiler_option_risk(prog: str, x: str, nxt: str | None) -> str:
    """Why one compiler/linker option runs or loads code ("" when it does not)."""
    if x.startswith(("-fplugin=", "-fpass-plugin=", "--plugin=")) or x in (
        "-fplugin",
        "-plugin",
        "--plugin",
        "-load",
    ):
        return f"{prog} {x} loads a plugin into the compiler or linker"
    if x.startswith(("-specs", "--specs", "--spec")):
        return f"{prog} {x} reads a spec file (spec files run programs)"
    if x.startswith(("@", "--config")) or (x.startswith("-Wl,") and ",@" in x):
        return f"{prog} {x} reads more options from a file"
    if (x.startswith("-B") and x not in _LINKER_B_MODES) or x.startswith("--prefix"):
        # `-Bstatic`/`-Bdynamic` are linker modes; `-B DIR` is where cc1/as/ld are found
        return f"{prog} {x} runs its sub-programs (cc1, as, ld) from another directory"
    if (x.startswith("-fuse-ld=") and x.split("=", 1)[1] not in KNOWN_LINKERS) or x.startswith(
        "--ld-path"
    ):
        return f"{prog} {x} runs another program as the linker"
    if x == "-wrapper":
        return f"{prog} -wrapper runs another program around each sub-program"
    linked = f"{x},{nxt}" if x in ("-Xlinker", "-Xclang") else x
    if (linked.startswith(("-Wl,", "-Xlinker", "-Xclang")) and "plugin" in linked) or (
        x == "-Xclang" and nxt == "-load"
    ):
        return f"{prog} {x if x.startswith('-Wl,') else f'{x} {nxt}'} loads a plugin"
    return ""


def flags_risk(words: Sequence[str]) -> str:
    """Why compiler flags held by a variable (``CFLAGS``, ``CC='gcc ...'``) run code."""
    for i, word in enumerate(words):
        why = compiler_option_risk("the compiler", word, words[i + 1] if i + 1 < len(words) else "")
        if why:
            return why
    return ""
