"""CppBuilder: ``cmake --build`` with diagnostics parsed while the output streams.

Owns ``CppBuildInput``, ``CppBuildOutput`` and ``CppBuilder.build``. Each output stream gets its
own ``DiagnosticStream`` (ninja prints the compilers' stderr on its stdout, make leaves it on
stderr), and every finished diagnostic is handed to ``on_diagnostic`` as soon as its notes are
complete, before the build ends. A build directory that was never configured is configured
first (``CMakeConfigurator``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from air.contracts.error import AirException, ErrorKind
from air.contracts.tool import DiagnosticSeverity
from air.cpp.diagnostics import (
    DiagnosticCollector,
    DiagnosticSink,
    DiagnosticStream,
    severity_counts,
)
from air.cpp.parsed_diagnostic import ParsedDiagnostic
from air.cpp.process import CommandRunner, is_plain_file
from air.cpp.project import (
    CMakeConfigurator,
    CppCmakeConfigureInput,
    CppCmakeConfigureOutput,
    safe_build_dir,
)

__all__ = ["CppBuildInput", "CppBuildOutput", "CppBuilder", "DiagnosticSink"]


@dataclass(frozen=True)
class CppBuildInput:
    workspace: str
    build_dir: str = "build"
    source_dir: str = "."
    """Where the top CMakeLists.txt is (used when the build dir must be configured first)."""
    target: str | None = None
    jobs: int | None = None
    export_compile_commands: bool = False
    timeout_s: float = 900.0


@dataclass(frozen=True)
class CppBuildOutput:
    ok: bool
    exit_code: int
    diagnostics: list[ParsedDiagnostic]
    build_dir: str
    command_run_id: str | None = None
    configure: CppCmakeConfigureOutput | None = None
    stdout: str = ""
    stderr: str = ""
    argv: list[str] = field(default_factory=list)
    not_kept: dict[str, int] = field(default_factory=dict)
    """Diagnostics past the ones kept (``DiagnosticCollector``): severity -> how many."""

    @property
    def errors(self) -> list[ParsedDiagnostic]:
        return [d for d in self.diagnostics if d.severity == DiagnosticSeverity.ERROR]

    def signature(self) -> str | None:
        """The build's failure signature: its first error's (None when it has none)."""
        errors = self.errors
        return errors[0].semantic_signature if errors else None

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "exit_code": self.exit_code,
            "build_dir": self.build_dir,
            **severity_counts(self.diagnostics, self.not_kept),
            "diagnostics": [d.summary() for d in self.diagnostics[:50]],
            "command_run_id": self.command_run_id,
            "configure": self.configure.to_json() if self.configure else None,
            "output_tail": (self.stdout + self.stderr)[-4000:],
        }


_TARGET_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-+/")


class CppBuilder:
    """Builds a CMake workspace (SDD §15)."""

    def __init__(
        self, runner: CommandRunner, configurator: CMakeConfigurator | None = None
    ) -> None:
        self.runner = runner
        self.configurator = configurator or CMakeConfigurator(runner)

    def argv(self, input: CppBuildInput, build_dir: str) -> list[str]:
        args = ["cmake", "--build", build_dir]
        if input.target:
            if not set(input.target) <= _TARGET_CHARS or input.target.startswith("-"):
                raise AirException.of(
                    kind=ErrorKind.VALIDATION_ERROR,
                    message=f"target {input.target!r} is not a CMake target name",
                    user_action="Pass a target name such as 'stats' or omit it to build all.",
                )
            args += ["--target", input.target]
        if input.jobs:
            args += ["--parallel", str(max(1, min(int(input.jobs), 64)))]
        return args

    async def build(
        self, input: CppBuildInput, on_diagnostic: DiagnosticSink | None = None
    ) -> CppBuildOutput:
        """Configure when needed, then build; diagnostics reach ``on_diagnostic`` as they come."""
        build_dir = safe_build_dir(input.workspace, input.build_dir)
        configured: CppCmakeConfigureOutput | None = None
        if not is_plain_file(input.workspace, build_dir, "CMakeCache.txt"):
            configured = await self.configurator.configure(
                CppCmakeConfigureInput(
                    workspace=input.workspace,
                    build_dir=build_dir,
                    source_dir=input.source_dir,
                    export_compile_commands=input.export_compile_commands,
                ),
                on_diagnostic,
            )
            if not configured.ok:
                return CppBuildOutput(
                    ok=False,
                    exit_code=configured.exit_code,
                    diagnostics=list(configured.diagnostics),
                    build_dir=build_dir,
                    command_run_id=configured.command_run_id,
                    configure=configured,
                    argv=configured.argv,
                )
        argv = self.argv(input, build_dir)
        streams = {
            "stdout": DiagnosticStream(input.workspace),
            "stderr": DiagnosticStream(input.workspace),
        }
        collector = DiagnosticCollector(on_diagnostic)
        diagnostics, deliver = collector.diagnostics, collector.deliver

        async def on_output(name: str, text: str) -> None:
            stream = streams[name]
            await deliver(stream.feed(text) if text else stream.close())

        result = await self.runner.run(
            argv, cwd=input.workspace, timeout_s=input.timeout_s, on_output=on_output
        )
        for stream in streams.values():
            await deliver(stream.close())
        return CppBuildOutput(
            ok=result.exit_code == 0 and not result.timed_out,
            exit_code=result.exit_code,
            diagnostics=diagnostics,
            build_dir=build_dir,
            command_run_id=result.command_run_id,
            configure=configured,
            stdout=result.stdout,
            stderr=result.stderr,
            argv=argv,
            not_kept=collector.not_kept,
        )
