"""The cpp.* tools: detect, configure, build, test and cppcheck through the shell sandbox.

Owns ``SandboxedCommandRunner`` (the ``air.cpp`` CommandRunner that runs every command with
``open_sandboxed`` — the same bubblewrap sandbox, allowlisted environment and no-sandbox-no-run
rule as ``shell.run`` — and records ``command.started`` / ``command.completed`` /
``command.failed``, the output as log artifacts and each parsed diagnostic as
``diagnostic.created`` while the command still runs), the tool executors and
``CPP_TOOL_DEFINITIONS``, the definitions the built-in C++ capability manifest declares.
Registration goes through ``air.capabilities`` (``register_cpp_tools`` is what the manifest's
registrar calls).

Each command runs in its ``CommandSpace`` (resource limits, IMPL-SBX-8; for a task without a
write area, the task's read-only view, through which the toolchain's own reads of build files
go: ``air.cpp.view``) under a ``LimitWatch``: going over a limit is a ``resource_limit`` error.

Every build and test run also records ``evidence.created`` for its command run (``build_output``
/ ``test_output`` pointing at the output artifact); the Scheduler's own evidence for a task is
derived from these records (``air.artifacts.evidence``), never from what a worker says.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import trio

from air.contracts.artifact import ArtifactType
from air.contracts.error import AirError, AirException, ErrorKind, make_air_error
from air.contracts.event import EntityType
from air.contracts.evidence import EvidenceKind
from air.contracts.ids import JsonObject, new_id
from air.contracts.tool import ToolCategory, ToolDefinition, ToolPermissionSpec
from air.tools.limits import LimitWatch, resource_limit_error
from air.tools.registry import ToolExecutor, ToolRegistry, is_cancellation
from air.tools.run import ToolRun
from air.tools.sandbox import (
    CommandSpace,
    SandboxRunner,
    open_sandboxed,
    sandbox_environment,
    task_view_dir,
)
from air.tools.shell import (
    command_space,
    interrupted_error,
    record_command_failed,
    record_command_started,
    store_output_logs,
)

if TYPE_CHECKING:
    from air.cpp.build import CppBuildInput, CppBuildOutput
    from air.cpp.clangd import ClangdPool
    from air.cpp.parsed_diagnostic import ParsedDiagnostic
    from air.cpp.process import CommandResult, OutputSink, Spawn
    from air.cpp.testing import CppTestOutput
    from air.cpp.view import OverlayView

# air.cpp (the toolchain: parsers, runners, clangd) is imported by the first cpp.* call, not
# with the definitions: every run registers these tools, few run them (IMPL-FAST-2).

__all__ = [
    "CPP_TOOL_DEFINITIONS",
    "SandboxedCommandRunner",
    "cpp_executors",
    "register_cpp_tools",
]


@dataclass(eq=False)
class SandboxedCommandRunner:
    """Runs the toolchain's commands for one tool run, sandboxed and recorded."""

    run_ctx: ToolRun
    sandbox: SandboxRunner
    current_command_run_id: str | None = None
    diagnostic_ids: list[str] = field(default_factory=list)
    diagnostics: list[tuple[str, ParsedDiagnostic]] = field(default_factory=list)
    """(diagnostic_id, diagnostic) in the order they were recorded."""
    command_runs: list[str] = field(default_factory=list)

    async def on_diagnostic(self, diagnostic: ParsedDiagnostic) -> None:
        """The DiagnosticSink the builder and configurator stream into."""
        await self.record_diagnostic(diagnostic)

    async def record_diagnostic(
        self, diagnostic: ParsedDiagnostic, command_run_id: str | None = None
    ) -> str:
        """Record one parsed diagnostic (``diagnostic.created``) against its command run."""
        run = self.run_ctx
        diagnostic_id = new_id("dg")
        await run.record(
            "diagnostic.created",
            {
                "diagnostic_id": diagnostic_id,
                "severity": diagnostic.severity.value,
                "message": diagnostic.message[:4000],
                "file": diagnostic.file,
                "line": diagnostic.line,
                "column": diagnostic.column,
                "code": diagnostic.code,
                "tool": diagnostic.tool,
                "semantic_signature": diagnostic.semantic_signature,
                "command_run_id": command_run_id or self.current_command_run_id,
                "task_id": run.context.task_id,
            },
        )
        if command_run_id is None:
            self.diagnostic_ids.append(diagnostic_id)
        self.diagnostics.append((diagnostic_id, diagnostic))
        return diagnostic_id

    async def run(
        self,
        argv: Sequence[str],
        *,
        cwd: str,
        timeout_s: float,
        on_output: OutputSink | None = None,
    ) -> CommandResult:
        import shlex

        from air.cpp.process import CommandResult, run_argv

        run = self.run_ctx
        workspace = run.workspace_realpath
        real_cwd = _realpath(cwd)
        command = shlex.join(argv)
        self.sandbox.check_available()  # no sandbox, no command (IMPL-SBX-6)
        command_run_id = new_id("cr")
        self.current_command_run_id = command_run_id
        self.diagnostic_ids = []
        self.command_runs.append(command_run_id)
        await record_command_started(run, command_run_id, command, real_cwd)

        async def forward(name: str, text: str) -> None:
            if not text:  # end of stream
                if on_output is not None:
                    await on_output(name, text)
                return
            redacted = run.redactor.redact(text)
            await run.emit(
                f"command.{name}.delta", {"command_run_id": command_run_id, "data": redacted}
            )
            await run.stream("stdout" if name == "stdout" else "stderr", redacted)
            if on_output is not None:
                await on_output(name, text)

        started = time.monotonic()
        env = sandbox_environment(os.environ)
        env["LC_ALL"] = "C.UTF-8"  # stable diagnostics (one quoting style, one language)
        watched = _Watched()
        try:
            with command_space(run) as space:
                spawn = _sandboxed(self.sandbox, command, workspace, real_cwd, env, space, watched)
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(watched.run)
                    code, out, err, timed_out = await run_argv(
                        (),
                        spawn=spawn,
                        cwd=real_cwd,
                        timeout_s=timeout_s,
                        env=env,
                        on_output=forward,
                    )
                    nursery.cancel_scope.cancel(reason="the command ended")
        except BaseException as exc:
            cancelled = is_cancellation(exc)
            error = interrupted_error(exc)
            with trio.move_on_after(5, shield=True):
                # why shielded: the command run must be closed even as the caller unwinds
                await self._failed(command_run_id, started, error, cancelled=cancelled)
            raise
        refs = store_output_logs(run, command_run_id, out, err)
        duration = int((time.monotonic() - started) * 1000)
        over = None if timed_out else watched.verdict(code)
        if over is not None:
            error = resource_limit_error(over[0], over[1].limits)
            await self._failed(command_run_id, started, error, refs=refs)
            raise AirException(error)
        if timed_out:
            error = make_air_error(
                kind=ErrorKind.TIMEOUT,
                message=f"{argv[0]} ran longer than {timeout_s:g}s",
                user_action="Raise timeout_s or make the build faster.",
            )
            await self._failed(command_run_id, started, error, refs=refs)
        else:
            await run.record(
                "command.completed",
                {
                    "command_run_id": command_run_id,
                    "exit_code": code,
                    "duration_ms": duration,
                    "stdout_artifact_id": refs.get("stdout"),
                    "stderr_artifact_id": refs.get("stderr"),
                    "diagnostic_ids": list(self.diagnostic_ids),
                },
            )
        return CommandResult(
            exit_code=-1 if code is None else code,
            stdout=out.decode("utf-8", "replace"),
            stderr=err.decode("utf-8", "replace"),
            duration_ms=duration,
            command_run_id=command_run_id,
            timed_out=timed_out,
        )

    async def _failed(
        self,
        command_run_id: str,
        started: float,
        error: AirError,
        *,
        cancelled: bool = False,
        refs: dict[str, str] | None = None,
    ) -> None:
        await record_command_failed(
            self.run_ctx,
            command_run_id,
            started,
            error,
            cancelled=cancelled,
            refs=refs,
            diagnostic_ids=self.diagnostic_ids,
        )


def _realpath(path: str) -> str:
    return os.path.realpath(path)


# -- evidence ---------------------------------------------------------------------------------


async def _evidence(
    run: ToolRun,
    kind: EvidenceKind,
    command_run_id: str | None,
    claim: str,
    artifact_uri: str | None,
    location: JsonObject,
) -> str | None:
    if command_run_id is None:
        return None
    from air.contracts.evidence_records import EvidenceRef  # IMPL-BOOT-12

    evidence = EvidenceRef(
        evidence_ref_id=new_id("ev"),
        kind=kind,
        ref=artifact_uri or f"command_run:{command_run_id}",
        claim=claim,
        location_json={"command_run_id": command_run_id, **location},
    )
    await run.record(
        "evidence.created",
        {
            **evidence.model_dump(mode="json"),
            "entity_type": EntityType.COMMAND_RUN.value,
            "entity_id": command_run_id,
        },
    )
    run.evidence_refs.append(evidence)
    return evidence.evidence_ref_id


# -- executors ---------------------------------------------------------------------------------


def _workspace(run: ToolRun) -> str:
    return run.workspace_realpath


def _str(input: JsonObject, name: str, default: str) -> str:
    value = input.get(name, default)
    return value if isinstance(value, str) else default


async def _detect(input: JsonObject, run: ToolRun) -> Any:
    from air.cpp.project import CppProjectDetector

    return CppProjectDetector().detect(_workspace(run)).to_json()


async def _configure(input: JsonObject, run: ToolRun, sandbox: SandboxRunner) -> Any:
    from air.cpp.project import CMakeConfigurator, CppCmakeConfigureInput

    runner = SandboxedCommandRunner(run, sandbox)
    out = await CMakeConfigurator(runner).configure(
        CppCmakeConfigureInput(
            workspace=_workspace(run),
            build_dir=_str(input, "build_dir", "build"),
            source_dir=_str(input, "source_dir", "."),
            build_type=_str(input, "build_type", "Debug"),
            export_compile_commands=bool(input.get("export_compile_commands", True)),
            generator=input.get("generator"),
            timeout_s=float(input.get("timeout_s", 300)),
        ),
        runner.on_diagnostic,
    )
    return {**out.to_json(), "diagnostic_ids": [i for i, _ in runner.diagnostics]}


async def run_build(
    run: ToolRun, sandbox: SandboxRunner, input: CppBuildInput
) -> tuple[CppBuildOutput, SandboxedCommandRunner, str | None]:
    """Build through the sandbox with records; returns the output, the runner and the build's
    evidence id."""
    from air.cpp.build import CppBuilder

    runner = SandboxedCommandRunner(run, sandbox)
    out = await CppBuilder(runner).build(input, runner.on_diagnostic)
    artifact = next((a.uri for a in reversed(run.artifacts) if a.type == ArtifactType.LOG), None)
    errors = len(out.errors)
    claim = "the build passed" if out.ok else f"the build failed with {errors} error(s)"
    evidence = await _evidence(
        run,
        EvidenceKind.BUILD_OUTPUT,
        out.command_run_id,
        claim,
        artifact,
        {
            "ok": out.ok,
            "build_dir": out.build_dir,
            "target": input.target,
            "source_dir": input.source_dir,
            "signature": out.signature(),
        },
    )
    return out, runner, evidence


async def _build(input: JsonObject, run: ToolRun, sandbox: SandboxRunner) -> Any:
    from air.cpp.build import CppBuildInput

    out, runner, evidence = await run_build(
        run,
        sandbox,
        CppBuildInput(
            workspace=_workspace(run),
            build_dir=_str(input, "build_dir", "build"),
            source_dir=_str(input, "source_dir", "."),
            target=input.get("target"),
            jobs=input.get("jobs"),
            export_compile_commands=bool(input.get("export_compile_commands", True)),
            timeout_s=float(input.get("timeout_s", 900)),
        ),
    )
    return {
        **out.to_json(),
        "signature": out.signature(),
        "diagnostic_ids": [i for i, _ in runner.diagnostics],
        "evidence_ref_id": evidence,
    }


async def _test(input: JsonObject, run: ToolRun, sandbox: SandboxRunner) -> Any:
    from air.cpp.project import safe_build_dir
    from air.cpp.testing import CppTestInput, CppTestRunner

    runner = SandboxedCommandRunner(run, sandbox)
    out: CppTestOutput = await CppTestRunner(runner).run_tests(
        CppTestInput(
            workspace=_workspace(run),
            build_dir=_str(input, "build_dir", "build"),
            regex=input.get("regex"),
            timeout_s=float(input.get("timeout_s", 600)),
        )
    )
    uri = None
    if out.junit_xml is not None:
        uri = run.add_artifact(
            ArtifactType.REPORT,
            "ctest-junit",
            out.junit_xml,
            extension=".xml",
            command_run_id=out.command_run_id,
        ).uri
    failed = [t.name for t in out.failed]
    claim = (
        f"ctest passed: {out.passed} test(s)"
        if out.ok
        else f"ctest failed: {', '.join(failed) or 'no test results'}"
    )
    evidence = await _evidence(
        run,
        EvidenceKind.TEST_OUTPUT,
        out.command_run_id,
        claim,
        uri,
        {
            "ok": out.ok,
            "passed": out.passed,
            "failed": failed,
            "total": len(out.tests),
            "filtered": out.filtered,
            "build_dir": safe_build_dir(_workspace(run), _str(input, "build_dir", "build")),
        },
    )
    return {**out.to_json(), "evidence_ref_id": evidence}


async def _cppcheck(input: JsonObject, run: ToolRun, sandbox: SandboxRunner) -> Any:
    from air.cpp.cppcheck import CppcheckInput, CppcheckRunner

    runner = SandboxedCommandRunner(run, sandbox)
    paths = input.get("paths") or []
    out = await CppcheckRunner(runner).run(
        CppcheckInput(
            workspace=_workspace(run),
            build_dir=_str(input, "build_dir", "build"),
            paths=[p for p in paths if isinstance(p, str)],
            enable=_str(input, "enable", "warning,style,performance,portability"),
            timeout_s=float(input.get("timeout_s", 600)),
        )
    )
    ids = [await runner.record_diagnostic(d, out.command_run_id) for d in out.diagnostics]
    if out.report:
        run.add_artifact(
            ArtifactType.REPORT,
            "cppcheck",
            out.report.encode(),
            extension=".xml",
            command_run_id=out.command_run_id,
        )
    return {**out.to_json(), "diagnostic_ids": ids}


@functools.cache
def _clangd_pool() -> ClangdPool:
    """The one ClangdPool of this process (made by the first cpp.clangd call)."""
    from air.cpp.clangd import ClangdPool

    return ClangdPool()


def _sandboxed(
    sandbox: SandboxRunner,
    command: str,
    workspace: str,
    cwd: str,
    env: dict[str, str],
    space: CommandSpace,
    watched: _Watched,
) -> Spawn:
    """Start ``command`` inside the shell sandbox (``open_sandboxed``: on the calling thread,
    which is the Trio loop's, so bwrap's parent-death signal lives as long as air), within
    ``space``; the command's ``LimitWatch`` goes to ``watched``."""

    def spawn(**pipes: Any) -> Any:
        popen = open_sandboxed(
            sandbox,
            command,
            workspace=workspace,
            cwd=cwd,
            network=False,
            env=env,
            space=space,
            **pipes,
        )
        watched.add(LimitWatch(space.limits, popen.pid, space.cgroup))
        return popen

    return spawn


@dataclass(eq=False)
class _Watched:
    """The ``LimitWatch`` of the command a ``_sandboxed`` spawn starts, once it has started."""

    started: trio.Event = field(default_factory=trio.Event)
    watches: list[LimitWatch] = field(default_factory=list)

    def add(self, watch: LimitWatch) -> None:
        self.watches.append(watch)
        self.started.set()

    def verdict(self, returncode: int | None) -> tuple[str, LimitWatch] | None:
        over = self.watches[0].verdict(returncode) if self.watches else None
        return None if over is None else (over, self.watches[0])

    async def run(self) -> None:
        await self.started.wait()
        await self.watches[0].watch()


async def _clangd(input: JsonObject, run: ToolRun, sandbox: SandboxRunner) -> Any:
    from air.cpp.clangd import ClangdQueryInput, clangd_command, open_clangd
    from air.cpp.process import is_plain_file
    from air.cpp.project import CMakeConfigurator, CppCmakeConfigureInput, safe_build_dir

    workspace = _workspace(run)
    build_dir = safe_build_dir(workspace, _str(input, "build_dir", "build"))
    timeout = float(input.get("timeout_s", 60))
    file = _realpath(os.path.join(workspace, str(input["file"])))
    if not file.startswith(workspace + os.sep) or not is_plain_file(file):
        raise AirException.of(
            kind=ErrorKind.VALIDATION_ERROR,
            message=f"{input['file']} is not a file inside the workspace",
            user_action="Pass a workspace-relative path of an existing source file.",
        )
    configured = None
    if not is_plain_file(workspace, build_dir, "compile_commands.json") and is_plain_file(
        workspace, "CMakeLists.txt"
    ):
        runner = SandboxedCommandRunner(run, sandbox)
        configured = await CMakeConfigurator(runner).configure(
            CppCmakeConfigureInput(
                workspace=workspace, build_dir=build_dir, export_compile_commands=True
            ),
            runner.on_diagnostic,
        )
    command = clangd_command(build_dir, memory_mb=int(input.get("memory_mb", 4096)))
    sandbox.check_available()  # no sandbox, no clangd (IMPL-SBX-6)
    env = sandbox_environment(os.environ)
    line = input.get("line")
    column = input.get("column")
    watched = _Watched()
    async with _clangd_pool().lock(workspace):
        # one server per workspace; started, asked and reaped (TERM → KILL) within the call
        with trio.fail_after(timeout * 4 + 10), command_space(run) as space:
            spawn = _sandboxed(sandbox, command, workspace, workspace, env, space, watched)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(watched.run)
                async with open_clangd(
                    workspace, (), env=env, spawn=spawn, init_timeout_s=timeout
                ) as client:
                    out = await client.query(
                        ClangdQueryInput(
                            file=str(input["file"]),
                            line=int(line) if line is not None else None,
                            column=int(column) if column is not None else None,
                            timeout_s=timeout,
                        )
                    )
                nursery.cancel_scope.cancel(reason="clangd was reaped")
    return {
        **out.to_json(),
        "configured": configured.to_json() if configured is not None else None,
    }


# -- definitions --------------------------------------------------------------------------------

_BUILD_DIR = {"type": "string", "minLength": 1, "maxLength": 200}
_SOURCE_DIR = {"type": "string", "minLength": 1, "maxLength": 200}
_TIMEOUT = {"type": "number", "minimum": 1, "maximum": 3600}


def _schema(properties: dict[str, Any]) -> JsonObject:
    return {"type": "object", "additionalProperties": False, "properties": properties}


CPP_TOOL_DEFINITIONS: dict[str, ToolDefinition] = {
    d.name: d
    for d in (
        ToolDefinition(
            name="cpp.detect",
            description="Tell what kind of C++ project the workspace is (CMake, Make, Ninja, "
            "compile_commands.json) and which compilers and tools are installed.",
            category=ToolCategory.PROJECT,
            input_schema=_schema({}),
        ),
        ToolDefinition(
            name="cpp.configure",
            description="Configure a CMake project (Ninja preferred, Make fallback) into a build "
            "directory inside the workspace; returns CMake's parsed errors.",
            category=ToolCategory.BUILD,
            input_schema=_schema(
                {
                    "build_dir": _BUILD_DIR,
                    "source_dir": _SOURCE_DIR,
                    "build_type": {
                        "type": "string",
                        "enum": ["Debug", "Release", "RelWithDebInfo", "MinSizeRel"],
                    },
                    "export_compile_commands": {"type": "boolean"},
                    "generator": {"type": "string", "enum": ["Ninja", "Unix Makefiles"]},
                    "timeout_s": _TIMEOUT,
                }
            ),
            permissions=ToolPermissionSpec(execute=True),
        ),
        ToolDefinition(
            name="cpp.build",
            description="Build a CMake project (configuring it first when needed); returns the "
            "parsed compiler, linker and CMake diagnostics with their semantic signatures.",
            category=ToolCategory.BUILD,
            input_schema=_schema(
                {
                    "build_dir": _BUILD_DIR,
                    "source_dir": _SOURCE_DIR,
                    "target": {"type": "string", "minLength": 1, "maxLength": 200},
                    "jobs": {"type": "integer", "minimum": 1, "maximum": 64},
                    "export_compile_commands": {"type": "boolean"},
                    "timeout_s": _TIMEOUT,
                }
            ),
            permissions=ToolPermissionSpec(execute=True),
        ),
        ToolDefinition(
            name="cpp.test",
            description="Run ctest in a built directory; returns every test's result and the "
            "failing assertions (GoogleTest and Catch2 output understood).",
            category=ToolCategory.TEST,
            input_schema=_schema(
                {
                    "build_dir": _BUILD_DIR,
                    "regex": {"type": "string", "minLength": 1, "maxLength": 200},
                    "timeout_s": _TIMEOUT,
                }
            ),
            permissions=ToolPermissionSpec(execute=True),
        ),
        ToolDefinition(
            name="cpp.clangd",
            description="Ask clangd about one file: its diagnostics and, at a 1-based "
            "line/column, the definition, references and hover text of the symbol there.",
            category=ToolCategory.STATIC_ANALYSIS,
            input_schema={
                **_schema(
                    {
                        "file": {"type": "string", "minLength": 1, "maxLength": 500},
                        "line": {"type": "integer", "minimum": 1},
                        "column": {"type": "integer", "minimum": 1},
                        "build_dir": _BUILD_DIR,
                        "memory_mb": {"type": "integer", "minimum": 256, "maximum": 16384},
                        "timeout_s": {"type": "number", "minimum": 1, "maximum": 600},
                    }
                ),
                "required": ["file"],
            },
            permissions=ToolPermissionSpec(execute=True),
        ),
        ToolDefinition(
            name="cpp.cppcheck",
            description="Run cppcheck over the compile database (or the given paths) and "
            "return its findings as diagnostics.",
            category=ToolCategory.STATIC_ANALYSIS,
            input_schema=_schema(
                {
                    "build_dir": _BUILD_DIR,
                    "paths": {"type": "array", "items": {"type": "string", "minLength": 1}},
                    "enable": {"type": "string", "minLength": 1, "maxLength": 100},
                    "timeout_s": _TIMEOUT,
                }
            ),
            permissions=ToolPermissionSpec(execute=True),
        ),
    )
}


def _permission_command(name: str) -> Any:
    """The command the PermissionEngine classifies for a cpp tool call (what it will run)."""

    def paths(input: JsonObject) -> tuple[list[str], list[str], str | None]:
        import shlex  # at the permission check, not before the first request (IMPL-BOOT-8)

        build_dir = str(input.get("build_dir", "build"))
        source = str(input.get("source_dir", "."))
        command = {
            "cpp.configure": ["cmake", "-S", source, "-B", build_dir],
            "cpp.build": ["cmake", "--build", build_dir],
            "cpp.test": ["ctest", "--test-dir", build_dir],
            "cpp.cppcheck": ["cppcheck", "--xml", "."],
            "cpp.clangd": ["clangd", "--log=error"],
        }.get(name)
        reads = [source] if name in ("cpp.configure", "cpp.build") else []
        if name == "cpp.clangd" and isinstance(input.get("file"), str):
            reads = [str(input["file"])]
        return reads, [], shlex.join(command) if command else None

    return paths


def _view(run: ToolRun) -> OverlayView | None:
    """The task's read-only view (IMPL-SBX-3) when it has no write area: the toolchain's own
    reads and marks of build dirs go where the view's commands wrote."""
    if run.context.write_area != []:
        return None
    from air.cpp.view import OverlayView

    ctx = run.context
    view_dir = task_view_dir(ctx.workspace_root, ctx.session_id, ctx.task_id)
    return OverlayView(run.workspace_realpath, os.path.join(view_dir, "u"))


def cpp_executors(sandbox: SandboxRunner) -> dict[str, ToolExecutor]:
    """Tool name → executor, each bound to ``sandbox``."""

    def bind(fn: Any) -> ToolExecutor:
        async def executor(input: JsonObject, run: ToolRun) -> Any:
            from air.cpp.view import using_view

            try:
                with using_view(_view(run)):
                    return await fn(input, run, sandbox)
            except (ValueError, TypeError) as exc:
                raise AirException.of(
                    kind=ErrorKind.VALIDATION_ERROR,
                    message=f"invalid input for {run.definition.name}: {exc}",
                    user_action="Fix the tool arguments to match the tool's input schema.",
                ) from exc

        return executor

    return {
        "cpp.detect": _detect,
        "cpp.configure": bind(_configure),
        "cpp.build": bind(_build),
        "cpp.test": bind(_test),
        "cpp.cppcheck": bind(_cppcheck),
        "cpp.clangd": bind(_clangd),
    }


def register_cpp_tools(
    registry: ToolRegistry,
    sandbox: SandboxRunner | None = None,
    definitions: Sequence[ToolDefinition] | None = None,
) -> list[str]:
    """Register the cpp.* tools (the built-in C++ capability's registrar).

    Args:
        registry: where the tools go; every call still passes its PermissionEngine.
        sandbox: the shell sandbox (default: a SandboxRunner that finds bwrap on PATH).
        definitions: the definitions to register (default: all of ``CPP_TOOL_DEFINITIONS``).

    Returns:
        The names registered.
    """
    sandbox = sandbox or SandboxRunner()
    executors = cpp_executors(sandbox)
    names = []
    for definition in definitions or CPP_TOOL_DEFINITIONS.values():
        executor = executors[definition.name]
        if definition.permissions.execute:
            registry.register_streaming(
                definition, executor, paths=_permission_command(definition.name)
            )
        else:
            registry.register(definition, executor)
        names.append(definition.name)
    return names
