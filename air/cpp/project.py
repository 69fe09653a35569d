"""CppProjectDetector and CMakeConfigurator: what a C++ workspace is and how to configure it.

Owns ``CppDetectOutput`` / ``CppProjectDetector.detect`` (CMake, Make, Ninja files, an existing
``compile_commands.json``, the compilers and tools on PATH) and ``CppCmakeConfigureInput`` /
``CppCmakeConfigureOutput`` / ``CMakeConfigurator.configure`` (Ninja preferred, Unix Makefiles
as fallback, ``CMAKE_EXPORT_COMPILE_COMMANDS`` when clangd or analysis needs it, the build
directory always inside the workspace), plus ``safe_build_dir``, the check every cpp tool
applies to a build directory it is given.
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from air.contracts.error import AirException, ErrorKind
from air.cpp.diagnostics import (
    DiagnosticCollector,
    DiagnosticSink,
    DiagnosticStream,
    severity_counts,
)
from air.cpp.parsed_diagnostic import ParsedDiagnostic
from air.cpp.process import CommandRunner, is_plain_file, read_workspace_file
from air.cpp.view import active_view
from air.search_path import installed
from air.tree_walk import dir_beneath, walk

__all__ = [
    "CMakeConfigurator",
    "CppCmakeConfigureInput",
    "CppCmakeConfigureOutput",
    "CppDetectOutput",
    "CppProjectDetector",
    "mark_build_dir",
    "safe_build_dir",
]

Which = Callable[[str], str | None]

_TOOLS = ("cmake", "ninja", "make", "g++", "clang++", "ctest", "cppcheck", "clangd")
_SKIP_DIRS = {".git", ".air", "build", "node_modules", ".venv"}


def _default_which(name: str) -> str | None:
    return installed(name)


@dataclass(frozen=True)
class CppDetectOutput:
    root: str
    build_system: str | None
    """``cmake``, ``make``, ``ninja`` or None when no build file is found."""
    cmake_lists: bool
    makefile: bool
    ninja_file: bool
    compile_commands: str | None
    """Relative path of an existing ``compile_commands.json``."""
    tools: dict[str, str | None] = field(default_factory=dict)
    """Tool name → absolute path (None: not installed)."""
    sources: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class CppProjectDetector:
    """Tells what kind of C++ project a directory holds (SDD §15)."""

    def __init__(self, which: Which | None = None) -> None:
        self.which = which or _default_which

    def detect(self, project_root: str) -> CppDetectOutput:
        root = os.path.realpath(project_root)
        if not os.path.isdir(root):
            raise AirException.of(
                kind=ErrorKind.VALIDATION_ERROR,
                message=f"{project_root} is not a directory",
                user_action="Point cpp.detect at the project's root directory.",
            )
        has = {n: os.path.isfile(os.path.join(root, n)) for n in ("CMakeLists.txt", "build.ninja")}
        makefile = any(
            os.path.isfile(os.path.join(root, n)) for n in ("Makefile", "makefile", "GNUmakefile")
        )
        compile_commands = None
        for candidate in ("compile_commands.json", "build/compile_commands.json"):
            full = os.path.join(root, candidate)
            if os.path.isfile(full) and not os.path.islink(full):
                compile_commands = candidate
                break
        build_system = (
            "cmake"
            if has["CMakeLists.txt"]
            else "make"
            if makefile
            else "ninja"
            if has["build.ninja"]
            else None
        )
        return CppDetectOutput(
            root=root,
            build_system=build_system,
            cmake_lists=has["CMakeLists.txt"],
            makefile=makefile,
            ninja_file=has["build.ninja"],
            compile_commands=compile_commands,
            tools={t: self.which(t) for t in _TOOLS},
            sources=_count_sources(root),
        )


def _count_sources(root: str, cap: int = 10_000) -> int:
    count = 0
    for _dirpath, dirnames, filenames in walk(root):
        dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS]
        count += sum(
            1 for f in filenames if f.endswith((".c", ".cc", ".cpp", ".cxx", ".h", ".hpp"))
        )
        if count >= cap:
            break
    return count


_BUILD_DIR = re.compile(r"^[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+)*$")


def safe_build_dir(workspace: str, build_dir: str, what: str = "build_dir") -> str:
    """``build_dir`` normalized, checked to stay inside ``workspace`` (``"."`` allowed only for
    ``source_dir``).

    Raises:
        AirException(validation_error): absolute, escaping, hidden internals (.git, .air) or a
            symlink that leads out.
    """
    norm = os.path.normpath(build_dir)
    parts = norm.split(os.sep)
    if what == "source_dir" and norm == ".":
        return norm
    if (
        not _BUILD_DIR.match(build_dir.strip("/"))
        or os.path.isabs(build_dir)
        or norm in (".", "")
        or ".." in parts
        or parts[0] in (".git", ".air")
    ):
        raise AirException.of(
            kind=ErrorKind.VALIDATION_ERROR,
            message=f"{what} {build_dir!r} must be a relative directory inside the workspace",
            user_action="Use a plain relative path such as 'build'.",
        )
    ws = os.path.realpath(workspace)
    real = os.path.realpath(os.path.join(ws, norm))
    if real != ws and not real.startswith(ws + os.sep):
        raise AirException.of(
            kind=ErrorKind.VALIDATION_ERROR,
            message=f"{what} {build_dir!r} leads outside the workspace",
            user_action="Remove the symlink or choose another build directory.",
        )
    return norm


def mark_build_dir(workspace: str, build_dir: str) -> None:
    """Create ``build_dir`` (``safe_build_dir``'s result) with a ``.gitignore`` of ``*`` so
    that git (and so a worktree's merge) never picks up build outputs, whatever the project's
    own ignore rules say; in a read-only view, in the view (``air.cpp.view``), never in the
    project. Made a directory at a time without following a link (``dir_beneath``): a link a
    command put in the way since ``safe_build_dir`` looked is refused, nothing made through it.

    Raises:
        AirException: ``policy_error`` when the build dir leads out of the workspace or view.
    """
    base = os.path.realpath(workspace)
    rel = os.path.normpath(build_dir)
    view = active_view()
    if view is not None:
        full = view.writable(os.path.join(base, rel))
        if not view.in_upper(full) or full == view.upper:
            raise _led_out(build_dir, "the task's read-only view")
        base, rel = view.upper, os.path.relpath(full, view.upper)
    try:
        fd = dir_beneath(base, rel.split(os.sep), make=True)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            where = "the workspace" if view is None else "the task's read-only view"
            raise _led_out(build_dir, where) from exc
        raise
    try:
        made = os.open(
            ".gitignore", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=fd
        )
    except FileExistsError:
        return  # the project's own, or this mark of an earlier call: kept as it is
    finally:
        os.close(fd)
    with os.fdopen(made, "w") as f:
        f.write("# written by air: build outputs are never committed\n*\n")


def _led_out(build_dir: str, where: str) -> AirException:
    return AirException.of(
        kind=ErrorKind.POLICY_ERROR,
        message=f"{build_dir} leads outside {where}",
        user_action="Remove the symlink a command left in the build dir's place.",
    )


@dataclass(frozen=True)
class CppCmakeConfigureInput:
    workspace: str
    build_dir: str = "build"
    source_dir: str = "."
    """The directory holding the top CMakeLists.txt, relative to the workspace."""
    build_type: str = "Debug"
    export_compile_commands: bool = False
    """Set when clangd or static analysis needs ``compile_commands.json``."""
    generator: str | None = None
    """None: Ninja when installed, else Unix Makefiles (or what the build dir already uses)."""
    definitions: dict[str, str] = field(default_factory=dict)
    timeout_s: float = 300.0


@dataclass(frozen=True)
class CppCmakeConfigureOutput:
    ok: bool
    exit_code: int
    generator: str
    build_dir: str
    compile_commands: str | None
    diagnostics: list[ParsedDiagnostic]
    command_run_id: str | None = None
    argv: list[str] = field(default_factory=list)
    not_kept: dict[str, int] = field(default_factory=dict)
    """Diagnostics past the ones kept (``DiagnosticCollector``): severity -> how many."""

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "exit_code": self.exit_code,
            "generator": self.generator,
            "build_dir": self.build_dir,
            "compile_commands": self.compile_commands,
            **severity_counts(self.diagnostics, self.not_kept),
            "diagnostics": [d.summary() for d in self.diagnostics[:50]],
            "command_run_id": self.command_run_id,
        }


_DEFINITION = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_FORBIDDEN_DEFS = (
    "CMAKE_CXX_COMPILER_LAUNCHER",
    "CMAKE_C_COMPILER_LAUNCHER",
    "CMAKE_PROJECT_INCLUDE",
)


class CMakeConfigurator:
    """Runs ``cmake -S . -B <build_dir>`` with the generator and options the workspace needs."""

    def __init__(self, runner: CommandRunner, which: Which | None = None) -> None:
        self.runner = runner
        self.which = which or _default_which

    def generator_for(self, workspace: str, build_dir: str, requested: str | None) -> str:
        """The generator: requested, else the one the build dir already uses, else Ninja when
        installed, else Unix Makefiles."""
        if requested:
            return requested
        cache = read_workspace_file(workspace, os.path.join(build_dir, "CMakeCache.txt"))
        if cache:
            m = re.search(rb"^CMAKE_GENERATOR:INTERNAL=(.+)$", cache, re.M)
            if m:
                return m.group(1).decode("utf-8", "replace").strip()
        if self.which("ninja"):
            return "Ninja"
        if self.which("make"):
            return "Unix Makefiles"
        raise AirException.of(
            kind=ErrorKind.ENVIRONMENT_ERROR,
            message="neither ninja nor make is installed",
            user_action="Install ninja-build (preferred) or make.",
        )

    def argv(self, input: CppCmakeConfigureInput, generator: str, build_dir: str) -> list[str]:
        source = safe_build_dir(input.workspace, input.source_dir, "source_dir")
        args = ["cmake", "-S", source, "-B", build_dir, "-G", generator]
        if not re.fullmatch(r"[A-Za-z]+", input.build_type):
            raise AirException.of(
                kind=ErrorKind.VALIDATION_ERROR,
                message=f"build_type {input.build_type!r} is not a CMake build type",
                user_action="Use Debug, Release, RelWithDebInfo or MinSizeRel.",
            )
        args.append(f"-DCMAKE_BUILD_TYPE={input.build_type}")
        if input.export_compile_commands:
            args.append("-DCMAKE_EXPORT_COMPILE_COMMANDS=ON")
        for name, value in sorted(input.definitions.items()):
            if not _DEFINITION.match(name) or name in _FORBIDDEN_DEFS:
                raise AirException.of(
                    kind=ErrorKind.VALIDATION_ERROR,
                    message=f"CMake definition {name!r} is not allowed",
                    user_action="Use plain cache variable names; launchers and project includes "
                    "cannot be set through cpp.configure.",
                )
            args.append(f"-D{name}={value}")
        return args

    async def configure(
        self,
        input: CppCmakeConfigureInput,
        on_diagnostic: DiagnosticSink | None = None,
    ) -> CppCmakeConfigureOutput:
        """Configure the workspace; CMake's errors and warnings reach ``on_diagnostic`` as they
        are printed."""
        source = safe_build_dir(input.workspace, input.source_dir, "source_dir")
        if not is_plain_file(input.workspace, source, "CMakeLists.txt"):
            raise AirException.of(
                kind=ErrorKind.VALIDATION_ERROR,
                message=f"{source} has no CMakeLists.txt",
                user_action="Run cpp.detect to see which build system the project uses.",
            )
        build_dir = safe_build_dir(input.workspace, input.build_dir)
        mark_build_dir(input.workspace, build_dir)
        generator = self.generator_for(input.workspace, build_dir, input.generator)
        argv = self.argv(input, generator, build_dir)
        stream = DiagnosticStream(input.workspace)
        collector = DiagnosticCollector(on_diagnostic)
        diagnostics, deliver = collector.diagnostics, collector.deliver

        async def on_output(_name: str, text: str) -> None:
            await deliver(stream.feed(text) if text else [])

        result = await self.runner.run(
            argv, cwd=input.workspace, timeout_s=input.timeout_s, on_output=on_output
        )
        await deliver(stream.close())
        cc = os.path.join(build_dir, "compile_commands.json")
        has_cc = is_plain_file(input.workspace, cc)
        return CppCmakeConfigureOutput(
            ok=result.exit_code == 0,
            exit_code=result.exit_code,
            generator=generator,
            build_dir=build_dir,
            compile_commands=cc if has_cc else None,
            diagnostics=diagnostics,
            command_run_id=result.command_run_id,
            argv=argv,
            not_kept=collector.not_kept,
        )
