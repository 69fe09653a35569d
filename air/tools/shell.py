"""shell.run: commands in a bubblewrap sandbox, streamed, timed out and killed as a group.

Owns ``SandboxRunner`` (bwrap argv: workspace writable, everything else read-only, ``.git/config``,
``.git/hooks`` and ``.air`` read-only, no network unless granted, own PID namespace so nothing
outlives the command) and its visible degraded mode when bwrap is missing (IMPL-SEC-5: only
read_only and build_test commands run unsandboxed unless ``unsandboxed_allow`` says otherwise),
plus the streaming ``shell.run`` tool with command.* events and log artifacts.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import trio

from air.contracts.artifact import ArtifactType
from air.contracts.error import AirError, AirException, ErrorKind, make_air_error
from air.contracts.ids import JsonObject, new_id
from air.contracts.permission import CommandCategory
from air.contracts.tool import ToolCategory, ToolDefinition, ToolPermissionSpec
from air.security.commands import CommandRiskAnalyzer
from air.security.redact import looks_secret_name
from air.tools.registry import ToolRegistry, ToolRun, is_cancellation

__all__ = ["SandboxRunner", "clean_environment", "register_shell_tool"]

_KEEP_ENV = ("PATH", "LANG", "LC_ALL", "TERM", "TZ", "USER", "LOGNAME", "SHELL")
_DEFAULT_UNSANDBOXED = frozenset({CommandCategory.READ_ONLY, CommandCategory.BUILD_TEST})


def clean_environment(environ: Mapping[str, str], home: str) -> dict[str, str]:
    """The child's environment: a short allow-list, never a variable whose name looks secret."""
    env = {k: environ[k] for k in _KEEP_ENV if k in environ and not looks_secret_name(k)}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env["HOME"] = home
    return env


@dataclass
class SandboxRunner:
    """Builds the argv that runs one command, sandboxed when bubblewrap exists.

    Args:
        bwrap_path: path to ``bwrap``; None runs unsandboxed (degraded mode).
        unsandboxed_allow: command categories allowed to run in degraded mode.
    """

    bwrap_path: str | None = field(default_factory=lambda: shutil.which("bwrap"))
    unsandboxed_allow: frozenset[CommandCategory] = _DEFAULT_UNSANDBOXED

    @property
    def degraded(self) -> bool:
        return self.bwrap_path is None

    def argv(self, command: str, *, workspace: str, cwd: str, network: bool) -> list[str]:
        shell = ["/bin/bash", "--noprofile", "--norc", "-c", command]
        if self.bwrap_path is None:
            return shell
        ws = os.path.realpath(workspace)
        args = [
            self.bwrap_path,
            "--die-with-parent",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--new-session",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--tmpfs",
            "/tmp",
            "--bind",
            ws,
            ws,
        ]
        if not network:
            args.append("--unshare-net")
        for protected in (".git/config", ".git/hooks", ".air"):
            full = os.path.join(ws, protected)
            if os.path.lexists(full) and not os.path.islink(full):
                args += ["--ro-bind", full, full]
        args += ["--chdir", cwd, "--", *shell]
        return args

    def check_degraded(self, category: CommandCategory) -> None:
        """Refuse, in degraded mode, a command whose category is not allowed unsandboxed."""
        if self.degraded and category not in self.unsandboxed_allow:
            raise AirException.of(
                kind=ErrorKind.POLICY_ERROR,
                message=(
                    f"bubblewrap is not installed, so a {category.value} command cannot run "
                    "sandboxed"
                ),
                user_action=(
                    "Install bubblewrap (apt-get install bubblewrap) or run only read-only and "
                    "build/test commands."
                ),
            )


async def _pump(
    stream: trio.abc.ReceiveStream, kind: str, sink: trio.MemorySendChannel[tuple[str, bytes]]
) -> None:
    async with sink:
        async for chunk in stream:
            await sink.send((kind, bytes(chunk)))


def _kill_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _paths(workspace_root: str, cwd: str) -> tuple[str, str]:
    workspace = os.path.realpath(workspace_root)
    return workspace, os.path.realpath(os.path.join(workspace, cwd))


async def _forward(
    run: ToolRun,
    command_run_id: str,
    receive: trio.MemoryReceiveChannel[tuple[str, bytes]],
    out: bytearray,
    err: bytearray,
) -> None:
    """Collect the output and stream it: command.*.delta events and ToolEvents, redacted."""
    async with receive:
        async for kind, chunk in receive:
            (out if kind == "stdout" else err).extend(chunk)
            text = run.redactor.redact(chunk.decode("utf-8", "replace"))
            await run.emit(
                f"command.{kind}.delta", {"command_run_id": command_run_id, "data": text}
            )
            await run.stream("stdout" if kind == "stdout" else "stderr", text)


async def _shell_run(
    input: JsonObject, run: ToolRun, runner: SandboxRunner, analyzer: CommandRiskAnalyzer
) -> Any:
    command: str = input["command"]
    workspace, cwd = _paths(run.context.workspace_root, input.get("cwd", "."))
    timeout = float(input.get("timeout_s", 120))
    network = bool(input.get("network", False)) and run.context.network_granted
    runner.check_degraded(analyzer.analyze(command, cwd).category)
    command_run_id = new_id("cr")
    env = clean_environment(os.environ, home=os.environ.get("HOME", workspace))
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
    started = time.monotonic()
    out = bytearray()
    err = bytearray()
    proc = await trio.lowlevel.open_process(
        runner.argv(command, workspace=workspace, cwd=cwd, network=network),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=env,
        start_new_session=True,
    )
    failure: BaseException | None = None
    try:
        with trio.move_on_after(timeout) as scope:
            send, receive = trio.open_memory_channel[tuple[str, bytes]](16)
            async with trio.open_nursery() as nursery:
                if proc.stdout is None or proc.stderr is None:
                    raise AirException.of(
                        kind=ErrorKind.SYSTEM_ERROR,
                        message="the command's output pipes are missing",
                        user_action="Report this as a bug in air.",
                    )
                nursery.start_soon(_pump, proc.stdout, "stdout", send.clone())
                nursery.start_soon(_pump, proc.stderr, "stderr", send)
                nursery.start_soon(_forward, run, command_run_id, receive, out, err)
            await proc.wait()
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
        if failure is not None:
            cancelled = is_cancellation(failure)
            error = make_air_error(
                kind=ErrorKind.CANCELLED if cancelled else ErrorKind.TOOL_ERROR,
                message="the command was cancelled"
                if cancelled
                else f"the command failed: {failure}",
                user_action="None: the caller stopped it." if cancelled else "Retry the command.",
            )
            with trio.move_on_after(5, shield=True):
                await _record_failure(run, command_run_id, started, error, cancelled=cancelled)
    refs = {}
    for name, data in (("stdout", out), ("stderr", err)):
        if data:
            refs[name] = run.add_artifact(
                ArtifactType.LOG,
                f"{name}",
                bytes(data),
                extension=".log",
                command_run_id=command_run_id,
            ).artifact_id
    if timed_out:
        error = make_air_error(
            kind=ErrorKind.TIMEOUT,
            message=f"the command ran longer than {timeout:g}s",
            user_action="Raise timeout_s or make the command faster.",
        )
        await _record_failure(run, command_run_id, started, error, refs=refs)
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
    return {
        "exit_code": proc.returncode,
        "stdout": run.redactor.redact(out[-20000:].decode("utf-8", "replace")),
        "stderr": run.redactor.redact(err[-20000:].decode("utf-8", "replace")),
        "sandboxed": not runner.degraded,
        "command_run_id": command_run_id,
    }


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


async def _record_failure(
    run: ToolRun,
    command_run_id: str,
    started: float,
    error: AirError,
    *,
    cancelled: bool = False,
    refs: dict[str, str] | None = None,
) -> None:
    refs = refs or {}
    await run.record(
        "command.failed",
        {
            "command_run_id": command_run_id,
            "duration_ms": _ms(started),
            "stdout_artifact_id": refs.get("stdout"),
            "stderr_artifact_id": refs.get("stderr"),
            "error": error.model_dump(mode="json"),
            "cancelled": cancelled,
        },
    )


def register_shell_tool(
    registry: ToolRegistry, runner: SandboxRunner | None = None
) -> SandboxRunner:
    """Register ``shell.run`` with ``runner`` (a default SandboxRunner finds bwrap on PATH)."""
    runner = runner or SandboxRunner()
    analyzer = registry.engine.analyzer
    definition = ToolDefinition(
        name="shell.run",
        description="Run a shell command in the workspace (sandboxed)."
        + (
            " DEGRADED: bubblewrap missing, only read-only and build/test commands run."
            if runner.degraded
            else ""
        ),
        category=ToolCategory.SHELL,
        input_schema={
            "type": "object",
            "additionalProperties": False,
            "required": ["command"],
            "properties": {
                "command": {"type": "string", "minLength": 1},
                "cwd": {"type": "string"},
                "timeout_s": {"type": "number", "minimum": 0.1, "maximum": 3600},
                "network": {"type": "boolean"},
            },
        },
        permissions=ToolPermissionSpec(execute=True),
        streaming=True,
    )

    async def executor(input: JsonObject, run: ToolRun) -> Any:
        return await _shell_run(input, run, runner, analyzer)

    registry.register_streaming(definition, executor)
    return runner
