"""The paths a command touches: its write targets, its read targets and where they resolve.

Owns the write targets of a file-mutating program (``program_writes``), the read candidates of
an argument (every path-like word, brace-expanded, ``~`` and ``$HOME`` kept), whether a program
reads a directory whole (``recursive_reader``), the directories an option moves a build, VCS or
install tool into (``add_moved_targets``), whether a value looks outside the project
(``outside_looking``), and ``resolve_targets``: relative targets against ``cwd`` and every
directory a ``cd``, ``pushd``, ``env -C`` or ``tar -C`` moves to. Pure: no I/O.
"""

from __future__ import annotations

import os.path
import re
from collections.abc import Sequence

from air.contracts.permission import CommandCategory
from air.security.command_tables import INTERPRETERS, NULL_TARGETS, SHELLS
from air.security.command_words import (
    DYNAMIC,
    Segment,
    option_values,
    options_before_dashdash,
    positional_args,
)
from air.security.options import option_spec, scan
from air.security.paths import names_credentials

__all__ = [
    "add_moved_targets",
    "outside_looking",
    "program_writes",
    "read_candidates",
    "recursive_reader",
    "resolve_targets",
]

C = CommandCategory


_COPIERS = {
    "cp": option_spec("tS", ("--target-directory", "--suffix", "--sparse", "--no-preserve")),
    "mv": option_spec("tS", ("--target-directory", "--suffix")),
    "install": option_spec(
        "tSmog", ("--target-directory", "--suffix", "--mode", "--owner", "--group")
    ),
    "ln": option_spec("tS", ("--target-directory", "--suffix")),
}
"""How ``cp``, ``mv``, ``install`` and ``ln`` spell their options (GNU): the directory ``-t``
names, however written, holds what they write."""
_OUTPUT_OPTION = {"unzip": ("-d",), "patch": ("-o", "--output")}
"""Programs whose option names where they write besides their operands."""


def program_writes(prog: str, args: Sequence[str | None]) -> list[str]:
    """What a file-mutating or destructive ``prog`` writes: its operands (``ln -s``: all of
    them; ``cp``/``mv``/``install``/``ln``: ``-t``'s directory or the last one; ``tee``: those
    not a null target); ``$dynamic`` for one that depends on an expansion."""
    pos = positional_args(args)
    if prog == "ln" and any(
        a is not None
        and (a == "--symbolic" or (a.startswith("-") and not a.startswith("--") and "s" in a))
        for a in options_before_dashdash(args)
    ):
        return [p if p is not None else "$dynamic" for p in pos]
    if prog in _COPIERS:
        opts, operands = scan(args, _COPIERS[prog])
        into = [o.value for o in opts if o.name in ("-t", "--target-directory") and o.value != ""]
        if into:  # every operand is a source (``-tDIR``, ``-vt DIR``, ``--target=DIR`` too)
            return [into[-1] if into[-1] is not None else DYNAMIC]
        pos = operands[-1:] if len(operands) >= 2 else operands
    elif prog in _OUTPUT_OPTION:
        pos = [*pos, *option_values(args, _OUTPUT_OPTION[prog])]
    if prog == "tee":
        pos = [p for p in pos if p not in NULL_TARGETS]
    return [p if p is not None else "$dynamic" for p in pos]


_ALWAYS_RECURSIVE = frozenset(
    "tar zip 7z 7za rar cpio rsync rg ag ack find fd fdfind borg restic duplicity".split()
)
_RECURSIVE_WHEN_FLAGGED = frozenset("cp scp grep egrep fgrep zgrep chmod chown diff".split())


def recursive_reader(argv: Sequence[str | None]) -> bool:
    """Whether the command reads whole directory trees (through wrappers and busybox)."""
    for i, word in enumerate(argv):
        if word is None:
            continue
        name = word.rsplit("/", 1)[-1]
        if name in _ALWAYS_RECURSIVE:
            return True
        if name in _RECURSIVE_WHEN_FLAGGED:
            return any(
                a is not None
                and (
                    a in ("--recursive", "--archive", "--dereference-recursive")
                    or (a.startswith("-") and not a.startswith("--") and any(c in a for c in "rRa"))
                )
                for a in argv[i + 1 :]
            )
    return False


_EXPANSION = re.compile(r"\$\{[^}]*\}|\$\([^)]*\)|\$[A-Za-z_][A-Za-z0-9_]*|\$.|`[^`]*`")
_HOME_PREFIX = re.compile(r"^(?:\$HOME|\$\{HOME\})(?=/|$)")
_BRACE = re.compile(r"\{([^{}]*,[^{}]*)\}")
_PLACEHOLDER = "/_dynamic_"
_CODE_CHARS = re.compile(r"[\s'\"();`|&<>]")
_TOKEN_SPLIT = re.compile(r"[\s'\"(),;:=<>|&`\[\]]+")


def _braces(word: str, limit: int = 16) -> list[str]:
    """Expand ``{a,b}`` groups (bash brace expansion) into at most ``limit`` words."""
    out = [word]
    for _ in range(4):
        nxt: list[str] = []
        changed = False
        for w in out:
            m = _BRACE.search(w)
            if m is None:
                nxt.append(w)
                continue
            changed = True
            nxt.extend(w[: m.start()] + alt + w[m.end() :] for alt in m.group(1).split(","))
        out = nxt[:limit]
        if not changed:
            break
    return out


_FILE_NAME = re.compile(r"[\w.@+,-]*[\w-]\.[A-Za-z0-9_]{1,12}")


def _pathish(value: str) -> bool:
    """A path (``/``, ``~``), a credential name, or a file name with an extension.

    Bare ``name.ext`` words are checked too: a workspace link ``notes.txt -> ~/.ssh/id_rsa``
    planted by a script is a credential once the engine resolves it.
    """
    return (
        "/" in value
        or value.startswith("~")
        or names_credentials(value)
        or _FILE_NAME.fullmatch(value) is not None
    )


def read_candidates(value: str | None, raw: str, *, always: bool = False) -> list[str]:
    """The paths an argument may name, for the engine's read check (credentials).

    Option values (``--file=x``, ``-f/x``) and ``key=value`` operands count; ``$HOME`` becomes
    ``~``; any other expansion becomes ``/_dynamic_`` so ``$X/.ssh/id_rsa`` is still seen to
    name an SSH key. Words that do not look like paths are skipped (no I/O is spent on them).
    """
    if value is None:
        text = _HOME_PREFIX.sub("~", re.sub(r"[\"'\\]", "", raw))
        if "$" in text or "`" in text:
            # What is left of a `$` or a backquote is literal (`"$H"/.ssh/key'$'`).
            text = _EXPANSION.sub(_PLACEHOLDER, text)
            if not text.startswith(("/", "~")):
                text = "/" + text
            if text.replace(_PLACEHOLDER, "").strip("/") == "":
                return []
        value = text
    if not always:
        if value.startswith("-"):
            if "=" in value and value.startswith("--"):
                value = value.split("=", 1)[1]
            elif len(value) > 2 and value[1] != "-" and value[2] in "/~":
                value = value[2:]
            else:
                return []
        elif "=" in value and not value.startswith(("/", "~", ".")):
            value = value.split("=", 1)[1]
    if not value or "\x00" in value:
        return []
    if value.startswith("@") and not always:  # curl -d @file, @response-file arguments
        value = value[1:]
    if not always and _CODE_CHARS.search(value):
        # Inline code or a message (`python -c "open('~/.netrc')"`): check the path-like
        # tokens inside it.
        return [t for t in _TOKEN_SPLIT.split(value) if t and _pathish(t)][:16]
    words = _braces(value) if "{" in value else [value]
    return [w for w in words if always or _pathish(w)]


def resolve_targets(found: list[Segment], cwd: str | None) -> tuple[list[str], list[str]]:
    """Resolve relative targets against every directory the shell may be in at that point.

    A ``cd``/``pushd`` adds its directory to the possible ones (it may fail, so the old ones
    stay); after a ``&&`` it took effect and replaces them; a subshell, a substitution or a
    pipeline element does not move what follows it. ``bases`` (``tar -C``, ``env -C``) move one
    segment's own targets. A relative write after a dynamic ``cd`` could land anywhere: it adds
    ``$dynamic``.
    """
    writes: list[str] = []
    reads: list[str] = []
    possible: list[str | None] = [cwd]
    pending: list[str | None] | None = None
    dynamic_cd = False
    stack: list[tuple[list[str | None], list[str | None] | None, bool]] = []

    def add(out: list[str], target: str) -> None:
        if target not in out:
            out.append(target)

    def place(base: str | None, rel: str) -> str:
        if rel.startswith(("/", "~")) or base is None:
            return rel
        return os.path.join(base, rel)

    for seg in found:
        if seg.scope == "push":
            stack.append((list(possible), pending, dynamic_cd))
            pending = None
            continue
        if seg.scope == "pop":
            if stack:
                possible, pending, dynamic_cd = stack.pop()
            continue
        if seg.scope == "and":
            if pending is not None:
                possible, pending = pending, None
            continue
        own = [place(p, b) for b in seg.bases if b != DYNAMIC for p in possible]
        dynamic = dynamic_cd or DYNAMIC in seg.bases
        moved_bases = [*(p for p in possible if p != cwd), *own]
        for target in seg.weak_reads:
            for base in moved_bases:
                add(reads, place(base, target))
        for targets, out, is_write in (
            (seg.write_targets, writes, True),
            (seg.read_targets, reads, False),
        ):
            for target in targets:
                if target == _CWD:  # only where a `cd` moved it: the start is the workspace's
                    for base in (*possible, *own):
                        if base is not None and base != cwd:
                            add(out, base)
                    if dynamic:
                        add(out, DYNAMIC)
                    continue
                if target == DYNAMIC or target.startswith(("/", "~")):
                    add(out, target)
                    continue
                for base in (*possible, *own):
                    add(out, place(base, target))
                if is_write and dynamic:
                    add(out, DYNAMIC)
        if seg.chdir is not None:
            if seg.chdir == DYNAMIC:
                dynamic_cd = True
            else:
                moved: list[str | None] = [place(p, seg.chdir) for p in possible]
                pending = moved
                possible = [*possible, *(m for m in moved if m not in possible)]
    return writes, reads


def outside_looking(value: str) -> bool:
    """Lexically leaves the project: absolute, under a home, or through ``..``."""
    return value.startswith(("/", "~")) or ".." in value.split("/")


# Options that move a tool's work, input or output to another directory or file. Their values
# become write targets: the engine then checks them like any write (outside the project asks,
# credentials and .git ask as sensitive, a symlink leading out is denied).
_MOVED_OPTIONS: dict[str, tuple[str, ...]] = {
    "make": ("-C", "--directory", "-f", "--file", "--makefile", "-o", "--old-file"),
    "ninja": ("-C", "-f"),
    "cmake": ("-S", "-B", "--build", "--install", "-P", "-C", "--toolchain", "--install-prefix"),
    "ctest": ("--test-dir", "-S", "--build-dir", "-O", "--output-log", "--output-junit"),
    "meson": ("-C", "--prefix"),
    "npm": ("--prefix", "-C", "--cache", "--userconfig", "--globalconfig"),
    "pnpm": ("-C", "--dir", "--store-dir", "--config-dir"),
    "yarn": ("--cwd", "--modules-folder", "--cache-folder"),
    "go": ("-C", "-o", "-modfile", "-overlay"),
    "cargo": ("--manifest-path", "--target-dir", "--out-dir", "--artifact-dir", "-C"),
    "pytest": (
        "--rootdir",
        "-c",
        "--config-file",
        "--confcutdir",
        "--junitxml",
        "--junit-xml",
        "--cov-config",
    ),
    "tox": ("-c", "--conf", "--workdir", "--root"),
    "nox": ("-f", "--noxfile", "--envdir"),
    "pip": ("--target", "-t", "--prefix", "--root", "--src", "-e", "--editable", "--cache-dir"),
    "gcc": ("-o", "--output", "-MF", "-MJ"),
    "mvn": ("-f", "--file", "-s", "--settings", "-gs", "--global-settings"),
    "gradle": ("-b", "--build-file", "-p", "--project-dir", "-c", "--settings-file", "-I"),
    "pre-commit": ("-c", "--config"),
    "mypy": ("--config-file", "--cache-dir"),
    "ruff": ("--config", "--cache-dir"),
    "coverage": ("--rcfile", "--data-file", "-o"),
    "rsync": ("--files-from", "--exclude-from"),
    "sphinx-build": ("-c", "-d"),
    "bazel": ("--output_base", "--output_user_root", "--bazelrc"),
    "dotnet": ("--project", "-o", "--output"),
    "cppcheck": ("--output-file", "--cppcheck-build-dir", "--plist-output"),
    "deno": ("--config", "-c", "--import-map"),
}
for _alias, _of in (
    ("gmake", "make"),
    ("py.test", "pytest"),
    ("pip3", "pip"),
    ("g++", "gcc"),
    ("cc", "gcc"),
    ("c++", "gcc"),
    ("clang", "gcc"),
    ("clang++", "gcc"),
    ("gradlew", "gradle"),
    ("bazelisk", "bazel"),
):
    _MOVED_OPTIONS[_alias] = _MOVED_OPTIONS[_of]


_IN_PLACE: dict[str, frozenset[str]] = {
    "clang-format": frozenset({"-i"}),
    "clang-tidy": frozenset(
        f"{dash}{name}" for dash in ("-", "--") for name in ("fix", "fix-errors", "fix-notes")
    ),
    "cppcheck": frozenset({"--dump"}),
}
"""Formatters, fixers and checkers that, so told, write their operands (or files beside them)."""
_LLVM_OUTPUTS = ("-export-fixes", "--export-fixes")
"""clang-tidy's file of fixes: LLVM options take ``-name=value`` with one dash too."""


# Compilers and checkers only read their operands (`gcc -I /usr/include x.c`); their outputs
# are options of `_MOVED_OPTIONS` (`-o`).
_INPUT_ONLY_TOOLS = frozenset(
    """gcc g++ cc c++ clang clang++ ld as ar ranlib cppcheck mypy pylint flake8 pyright
    shellcheck bandit pydocstyle luacheck nm objdump readelf size addr2line gcov""".split()
)


# Tools that load code or configuration from the directory they run in (a Makefile, conftest.py,
# tox.ini): after a `cd` elsewhere that directory is a target like `make -C` (`cd /tmp/x && make`).
_CWD_CODE_TOOLS = frozenset("make gmake ninja cmake ctest pytest py.test tox nox meson".split())
_CWD = "$cwd"


def add_moved_targets(seg: Segment, prog: str, args: Sequence[str | None]) -> None:
    """Add the directories and files a tool is moved to, and what it is given outside the project.

    Build/test and install tools write where they run (caches, build trees, outputs) and run
    what they are given, so each option of ``_MOVED_OPTIONS`` and every literal operand that
    lexically leaves the project (``/x``, ``~/x``, ``../x``, ``--opt=/x``, ``DESTDIR=/x``) is
    a write target. Interpreters and shells are judged on their script instead.
    """
    options = _MOVED_OPTIONS.get(prog)
    found: list[str] = option_values(args, options) if options else []
    words = options_before_dashdash(args)
    if prog in _IN_PLACE and _IN_PLACE[prog].intersection(w for w in words if w is not None):
        found.extend(w if w is not None else DYNAMIC for w in positional_args(words))
    if prog == "clang-tidy":
        found.extend(option_values(words, _LLVM_OUTPUTS))
    if prog in _CWD_CODE_TOOLS and seg.category == C.BUILD_TEST:
        found.append(_CWD)  # its makefile / conftest.py / tox.ini are read where it runs
    if seg.category in (C.BUILD_TEST, C.PACKAGE_INSTALL) and not (
        prog in INTERPRETERS
        or prog in SHELLS
        or prog.startswith(("python", "pypy"))
        or prog in _INPUT_ONLY_TOOLS
    ):
        for arg in args:
            if arg is None:
                continue
            value = arg
            if arg.startswith("--") and "=" in arg:
                value = arg.split("=", 1)[1]
            elif arg.startswith("-"):
                continue
            elif "=" in arg and not arg.startswith(("/", "~", ".")):
                value = arg.split("=", 1)[1]
            if value and outside_looking(value) and value not in NULL_TARGETS:
                found.append(value)
    for value in found:
        if value not in seg.write_targets:
            seg.write_targets.append(value)
        if value not in seg.tool_targets:
            seg.tool_targets.append(value)
