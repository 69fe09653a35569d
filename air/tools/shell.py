"""shell.run: commands in the bubblewrap sandbox, streamed, timed out and killed as a group.

Owns the streaming ``shell.run`` tool (command.* events, timeout and group kill; its output,
redacted as it streams into the log artifacts and the result's tail: ``air.tools.output``)
and the command-event helpers the cpp.* tools share with it (``record_command_started``,
``record_command_failed``, ``interrupted_error``, ``store_output_logs``), on top of
``air.tools.sandbox`` (the allowlisted bwrap sandbox, IMPL-SBX-1..5; a task without a write
area sees the project read-only) and ``air.tools.limits`` (every command bounded in processes,
memory, file size and CPU time, ended with a ``resource_limit`` error when it goes over one,
IMPL-SBX-8; ``command_space`` builds both for a tool run). There is no unsandboxed
mode: without a working bubblewrap shell.run refuses with an ``environment_error``
(IMPL-SEC-5), and ``check_sandbox_available`` lets a front end refuse to start at all.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import trio

from air.contracts.artifact import ArtifactType
from air.contracts.error import AirError, AirException, ErrorKind, make_air_error
from air.contracts.ids import JsonObject, new_id
from air.contracts.tool import ToolCategory, ToolDefinition, ToolPermissionSpec
from air.tools.credential_files import hidden_from_commands
from air.tools.limits import LimitWatch, load_limits, resource_limit_error
from air.tools.registry import ToolRegistry, is_cancellation
from air.tools.run import ToolRun
from air.tools.sandbox import SandboxRunner, sandbox_environment
from air.tools.sandbox_check import check_sandbox_available

if TYPE_CHECKING:
    from air.tools.sandbox_spawn import CommandSpace

__all__ = [
    "SandboxRunner",
    "check_sandbox_available",
    "clean_environment",
    "command_space",
    "interrupted_error",
    "record_command_failed",
    "record_command_started",
    "register_shell_tool",
    "run_sandboxed_command",
    "store_output_logs",
]


def clean_environment(environ: Mapping[str, str], home: str) -> dict[str, str]:
    """The child's environment: the sandbox allowlist (IMPL-SBX-4) with HOME set to ``home``."""
    return sandbox_environment(environ, home=home)


def _kill_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _paths(workspace_root: str, cwd: str) -> tuple[str, str]:
    workspace = os.path.realpath(workspace_root)
    return workspace, os.path.realpath(os.path.join(workspace, cwd))


def command_space(run: ToolRun) -> CommandSpace:
    """The host side of one command of ``run``: the project's limits and, when the task may
    change nothing (``ToolRun.read_only``), the read-only view of the workspace.

    Raises:
        AirException: ``config_error``/``untrusted_config`` from the limits files,
            ``environment_error`` when the read-only view cannot be built.
    """
    # IMPL-BOOT-16: the spawn, view and output modules load at the first command
    from air.tools.sandbox_spawn import CommandSpace
    from air.tools.task_view import task_view_dir

    limits = load_limits(run.context.project_root)
    if not run.read_only:
        return CommandSpace(limits)
    ctx = run.context
    view = task_view_dir(ctx.workspace_root, ctx.session_id, ctx.task_id)
    return CommandSpace(limits, view_dir=view)


COMMAND_MAX = 131_071
"""Bytes a command may have: bash gets it as one argument, and Linux passes none longer
(``MAX_ARG_STRLEN``, 32 pages with its NUL: ``E2BIG`` at exec). The schema says it in characters,
before the command is analyzed."""


async def _shell_run(input: JsonObject, run: ToolRun, runner: SandboxRunner) -> Any:
    command: str = input["command"]
    size = len(command.encode("utf-8", "surrogatepass"))
    if size > COMMAND_MAX:
        raise AirException.of(
            kind=ErrorKind.VALIDATION_ERROR,
            message=f"the command is {size:,} bytes; Linux runs none over {COMMAND_MAX:,}",
            user_action="Write a long script to a file with fs.write and run that file.",
        )
    workspace, cwd = _paths(run.context.workspace_root, input.get("cwd", "."))
    timeout = float(input.get("timeout_s", 120))
    network = bool(input.get("network", False)) and run.context.network_granted
    runner.check_available()
    space = command_space(run)
    space.guard_build_dirs = True
    try:
        space.hidden = await hidden_from_commands(run)
        return await _run_in(space, command, workspace, cwd, network, run, runner, timeout)
    finally:
        space.close()


async def run_sandboxed_command(
    command: str, run: ToolRun, runner: SandboxRunner, timeout_s: float
) -> Any:
    """``shell.run``'s body for a command air built itself (a capability's tool, IMPL-CAP-1)."""
    return await _shell_run({"command": command, "timeout_s": timeout_s}, run, runner)


async def _run_in(
    space: CommandSpace,
    command: str,
    workspace: str,
    cwd: str,
    network: bool,
    run: ToolRun,
    runner: SandboxRunner,
    seconds: float,
) -> Any:
    """Run ``command`` in ``space`` for at most ``seconds``, recorded as one command run."""
    from air.tools.output import CommandOutput, pump, widen_pipe
    from air.tools.sandbox_spawn import start_sandboxed

    command_run_id = new_id("cr")
    env = sandbox_environment(os.environ)
    await record_command_started(run, command_run_id, command, cwd)
    started = time.monotonic()
    # Spawned on the loop's own thread, never a worker thread: see start_sandboxed.
    try:
        proc = start_sandboxed(
            runner, command, workspace=workspace, cwd=cwd, network=network, env=env, space=space
        )
    except (OSError, AirException) as exc:
        error = (
            exc.error
            if isinstance(exc, AirException)
            else make_air_error(
                kind=ErrorKind.ENVIRONMENT_ERROR,
                message=f"bubblewrap could not be started: {exc}",
                user_action="Check that bubblewrap is installed and runs (air doctor).",
            )
        )
        await record_command_failed(run, command_run_id, started, error)
        raise AirException(error) from exc
    failure: BaseException | None = None
    watch = LimitWatch(space.limits, proc.pid, space.cgroup)
    # its output logs are files it writes: the file size limit bounds them too
    output = CommandOutput(
        run,
        command_run_id,
        cap=space.limits.file_size_mb << 20,
        on_over=lambda: watch.end("file_size_mb"),
    )
    widen_pipe(proc.stdout)
    widen_pipe(proc.stderr)
    try:
        with trio.move_on_after(seconds) as scope:
            async with trio.open_nursery() as watching:
                watching.start_soon(watch.watch)
                send, receive = trio.open_memory_channel[tuple[str, bytes]](16)
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(pump, proc.stdout, "stdout", send.clone())
                    nursery.start_soon(pump, proc.stderr, "stderr", send)
                    nursery.start_soon(output.forward, receive)
                await proc.wait()
                watching.cancel_scope.cancel(reason="the command ended")
        timed_out = scope.cancelled_caught
    except BaseException as exc:
        failure = exc
        raise
    finally:
        if proc.returncode is None:
            # Shielded and bounded: the group must die even when the caller was cancelled.
            with trio.move_on_after(3, shield=True):
                _kill_group(proc.pid, signal.SIGTERM)
                with trio.move_on_after(1):
                    await proc.wait()
                _kill_group(proc.pid, signal.SIGKILL)
                await proc.wait()
        _kill_group(proc.pid, signal.SIGKILL)
        proc.close()
        if failure is not None:
            output.discard()
            cancelled = is_cancellation(failure)
            error = interrupted_error(failure)
            with trio.move_on_after(5, shield=True):
                await record_command_failed(
                    run, command_run_id, started, error, cancelled=cancelled
                )
    refs = await output.store()
    over = None if timed_out else watch.verdict(proc.returncode)
    if over is not None:
        stream = output.over_cap()
        what = f"{stream} (its log)" if stream else ""
        error = resource_limit_error(over, space.limits, what=what)
        await record_command_failed(run, command_run_id, started, error, refs=refs)
        raise AirException(error)
    if timed_out:
        error = make_air_error(
            kind=ErrorKind.TIMEOUT,
            message=f"the command ran longer than {seconds:g}s",
            user_action="Raise timeout_s or make the command faster.",
        )
        await record_command_failed(run, command_run_id, started, error, refs=refs)
        raise AirException(error)
    await run.record(
        "command.completed",
        {
            "command_run_id": command_run_id,
            "exit_code": proc.returncode,
            "duration_ms": _ms(started),
            "stdout_artifact_id": refs.get("stdout"),
            "stderr_artifact_id": refs.get("stderr"),
            "diagnostic_ids": [],
        },
    )
    result: JsonObject = {
        "exit_code": proc.returncode,
        "stdout": output.result("stdout"),
        "stderr": output.result("stderr"),
        "sandboxed": True,
        "command_run_id": command_run_id,
    }
    for name in ("stdout", "stderr"):
        if output.truncated(name):
            # the model sees the end; the whole stream is in its log artifact
            result[f"{name}_truncated"] = True
            result[f"{name}_artifact_id"] = refs[name]
    return result


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


async def record_command_started(run: ToolRun, command_run_id: str, command: str, cwd: str) -> None:
    """Record ``command.started`` of a command ``run`` is about to start in ``cwd``."""
    await run.record(
        "command.started",
        {
            "command_run_id": command_run_id,
            "command": command,
            "cwd": cwd,
            "task_id": run.context.task_id,
            "agent_id": run.context.agent_id,
            "tool_run_id": run.tool_run_id,
            "origin_message_id": run.context.origin_message_id,
        },
    )


async def store_output_logs(
    run: ToolRun, command_run_id: str, out: bytes, err: bytes
) -> tuple[dict[str, str], bytes, bytes]:
    """Store each stream that wrote anything as a log artifact. Returns stream name ->
    artifact id, and stdout and stderr as stored: redacted whole, what a caller parses and cuts
    (a tail of the raw output, cut first, began inside a private key block whose first line
    it lost, and kept the key). Redacted in a worker thread: a stream may be tens of MiB, too
    much for the Trio thread."""
    streams = [(name, data) for name, data in (("stdout", out), ("stderr", err)) if data]
    redacted = await trio.to_thread.run_sync(
        lambda: [run.redactor.redact_bytes(data) for _, data in streams]
    )
    stored = dict(zip((name for name, _ in streams), redacted, strict=True))
    refs = {
        name: run.add_artifact(
            ArtifactType.LOG,
            name,
            data,
            extension=".log",
            command_run_id=command_run_id,
            redacted=True,
        ).artifact_id
        for name, data in stored.items()
    }
    return refs, stored.get("stdout", b""), stored.get("stderr", b"")


def interrupted_error(exc: BaseException) -> AirError:
    """The error of a command stopped by ``exc``: ``cancelled`` when the caller cancelled it."""
    cancelled = is_cancellation(exc)
    return make_air_error(
        kind=ErrorKind.CANCELLED if cancelled else ErrorKind.TOOL_ERROR,
        message="the command was cancelled" if cancelled else f"the command failed: {exc}",
        user_action="None: the caller stopped it." if cancelled else "Retry the command.",
    )


async def record_command_failed(
    run: ToolRun,
    command_run_id: str,
    started: float,
    error: AirError,
    *,
    cancelled: bool = False,
    refs: dict[str, str] | None = None,
    diagnostic_ids: list[str] | None = None,
) -> None:
    """Record ``command.failed`` (``refs``: the log artifact of each stream that wrote any)."""
    refs = refs or {}
    payload: JsonObject = {
        "command_run_id": command_run_id,
        "duration_ms": _ms(started),
        "stdout_artifact_id": refs.get("stdout"),
        "stderr_artifact_id": refs.get("stderr"),
    }
    if diagnostic_ids is not None:
        payload["diagnostic_ids"] = list(diagnostic_ids)
    payload["error"] = error.model_dump(mode="json")
    payload["cancelled"] = cancelled
    await run.record("command.failed", payload)


def register_shell_tool(
    registry: ToolRegistry, runner: SandboxRunner | None = None
) -> SandboxRunner:
    """Register ``shell.run`` with ``runner`` (a default SandboxRunner finds bwrap on PATH)."""
    runner = runner or SandboxRunner()
    definition = ToolDefinition(
        name="shell.run",
        description=(
            "Run a shell command in the workspace, sandboxed: only the workspace is writable, "
            "HOME and /tmp are fresh and empty, git metadata is read-only, no network unless "
            "granted."
        ),
        category=ToolCategory.SHELL,
        input_schema={
            "type": "object",
            "additionalProperties": False,
            "required": ["command"],
            "properties": {
                "command": {"type": "string", "minLength": 1, "maxLength": COMMAND_MAX},
                "cwd": {"type": "string"},
                "timeout_s": {"type": "number", "minimum": 0.1, "maximum": 3600},
                "network": {"type": "boolean"},
            },
        },
        permissions=ToolPermissionSpec(execute=True),
        streaming=True,
    )

    async def executor(input: JsonObject, run: ToolRun) -> Any:
        return await _shell_run(input, run, runner)

    registry.register_streaming(definition, executor)
    return runner
