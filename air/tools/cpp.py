"""The cpp.* tools' executors: detect, configure, build, test, cppcheck and clangd through the
shell sandbox, and their registration.

Owns the tool executors (``cpp_executors``, each bound to the sandbox; ``run_build``), the
evidence every build and test run records, and ``register_cpp_tools`` (what the built-in C++
capability manifest's registrar calls, through ``air.capabilities``). The definitions are
``air.tools.cpp_definitions``'; every command runs through ``air.tools.cpp_runner``'s
``SandboxedCommandRunner`` (recorded, in its ``CommandSpace``, under a ``LimitWatch``).

For a task without a write area, the task's read-only view (IMPL-SBX-3) is also where the
toolchain's own reads of build files go (``air.cpp.view``).

Before configure, build and test use a build dir it is claimed (``air.tools.build_dirs``): one
these tools did not make (shipped, or prepared by a command) is made afresh, other commands
see theirs read-only, and cpp.test's tests (code the agent may change next) see it behind an
overlay whose writes are thrown away: the evidence never rests on a build file that a command
or an earlier version of the code wrote (IMPL-CPP-5).

Every build and test run also records ``evidence.created`` for its command run (``build_output``
/ ``test_output`` pointing at the output artifact); the Scheduler's own evidence for a task is
derived from these records (``air.artifacts.evidence``), never from what a worker says.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import trio

from air.contracts.artifact import ArtifactType
from air.contracts.error import AirException, ErrorKind
from air.contracts.event import EntityType
from air.contracts.evidence import EvidenceKind
from air.contracts.ids import JsonObject, new_id
from air.contracts.tool import ToolDefinition
from air.tools.build_dirs import claim_build_dir
from air.tools.cpp_definitions import CPP_TOOL_DEFINITIONS, permission_command
from air.tools.credential_files import hidden_from_commands
from air.tools.registry import ToolExecutor, ToolRegistry
from air.tools.run import ToolRun
from air.tools.sandbox import SandboxRunner, sandbox_environment
from air.tools.shell import command_space

if TYPE_CHECKING:
    from air.contracts.tool_runs import ToolExecutionContext
    from air.cpp.build import CppBuildInput, CppBuildOutput
    from air.cpp.clangd import ClangdPool
    from air.cpp.testing import CppTestOutput
    from air.cpp.view import OverlayView
    from air.tools.cpp_runner import SandboxedCommandRunner

# air.cpp (the toolchain: parsers, runners, clangd) is imported by the first cpp.* call, not
# with the definitions: every run registers these tools, few run them (IMPL-FAST-2).

__all__ = ["cpp_executors", "register_cpp_tools"]


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


async def _claim(run: ToolRun, build_dir: str) -> str | None:
    """``claim_build_dir`` of the build dir a cpp tool is about to use (IMPL-CPP-5): its path
    in the workspace; None in a task's read-only view, where nothing reaches the project and
    it is left as it is."""
    from air.cpp.project import safe_build_dir

    if _view(run) is not None:
        return None
    rel = safe_build_dir(_workspace(run), build_dir)
    await trio.to_thread.run_sync(_claim_in, run.context, _workspace(run), rel)
    return rel


def _claim_in(ctx: ToolExecutionContext, workspace: str, rel: str) -> bool:
    # in the project itself the build dir there is the person's: adopted, never removed
    theirs = os.path.realpath(ctx.workspace_root) == os.path.realpath(ctx.project_root)
    return claim_build_dir(workspace, rel, adopt=theirs)


async def _detect(input: JsonObject, run: ToolRun) -> Any:
    from air.cpp.project import CppProjectDetector

    return CppProjectDetector().detect(_workspace(run)).to_json()


async def _configure(input: JsonObject, run: ToolRun, sandbox: SandboxRunner) -> Any:
    from air.cpp.project import CMakeConfigurator, CppCmakeConfigureInput
    from air.tools.cpp_runner import SandboxedCommandRunner  # IMPL-BOOT-16: at the first call

    runner = SandboxedCommandRunner(run, sandbox)
    await _claim(run, _str(input, "build_dir", "build"))
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
    from air.tools.cpp_runner import SandboxedCommandRunner  # IMPL-BOOT-16: at the first call

    runner = SandboxedCommandRunner(run, sandbox)
    await _claim(run, input.build_dir)
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
    from air.tools.cpp_runner import SandboxedCommandRunner  # IMPL-BOOT-16: at the first call
    from air.tools.task_view import remove_scratch_dir, scratch_dir

    build_dir = _str(input, "build_dir", "build")
    claimed = await _claim(run, build_dir)
    # the tests run code the agent may change next: what they write never outlives the run
    scratch = None if claimed is None else scratch_dir()
    runner = SandboxedCommandRunner(run, sandbox)
    if scratch is not None and claimed is not None:
        runner.scratch = (scratch, os.path.join(_workspace(run), claimed))
    try:
        out: CppTestOutput = await CppTestRunner(runner, run.redactor.redact_bytes).run_tests(
            CppTestInput(
                workspace=_workspace(run),
                build_dir=build_dir,
                regex=input.get("regex"),
                timeout_s=float(input.get("timeout_s", 600)),
                results_dir=os.path.join(scratch, "u") if scratch is not None else None,
            )
        )
    finally:
        if scratch is not None:
            remove_scratch_dir(scratch)
    uri = None
    if out.junit_xml is not None:
        uri = run.add_artifact(
            ArtifactType.REPORT,
            "ctest-junit",
            out.junit_xml,
            extension=".xml",
            command_run_id=out.command_run_id,
            redacted=True,
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
    from air.tools.cpp_runner import SandboxedCommandRunner  # IMPL-BOOT-16: at the first call

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


async def _clangd(input: JsonObject, run: ToolRun, sandbox: SandboxRunner) -> Any:
    from air.cpp.clangd import ClangdQueryInput, clangd_command, open_clangd
    from air.cpp.process import is_plain_file
    from air.cpp.project import CMakeConfigurator, CppCmakeConfigureInput, safe_build_dir
    from air.tools.cpp_runner import SandboxedCommandRunner, WatchedCommand, sandboxed_spawn

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
    watched = WatchedCommand()
    async with _clangd_pool().lock(workspace):
        # one server per workspace; started, asked and reaped (TERM → KILL) within the call
        with trio.fail_after(timeout * 4 + 10), command_space(run) as space:
            space.hidden = await hidden_from_commands(run)
            spawn = sandboxed_spawn(sandbox, command, workspace, workspace, env, space, watched)
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


def _view(run: ToolRun) -> OverlayView | None:
    """The task's read-only view (IMPL-SBX-3) when it may change nothing (``ToolRun.read_only``):
    the toolchain's own reads and marks of build dirs go where the view's commands wrote."""
    if not run.read_only:
        return None
    from air.cpp.view import OverlayView
    from air.tools.task_view import task_view_dir

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
                definition, executor, paths=permission_command(definition.name)
            )
        else:
            registry.register(definition, executor)
        names.append(definition.name)
    return names
