"""The sandboxed, recorded command runner of the cpp.* tools.

Owns ``SandboxedCommandRunner`` (the ``air.cpp`` CommandRunner that runs every command with
``open_sandboxed`` — the same bubblewrap sandbox, allowlisted environment and no-sandbox-no-run
rule as ``shell.run`` — and records ``command.started`` / ``command.completed`` /
``command.failed``, the output as log artifacts (redacted in a worker thread), streamed live
redacted up to ``LIVE_CHARS`` a stream, and each parsed diagnostic as ``diagnostic.created``
while the command still runs), ``sandboxed_spawn`` (the spawn it hands
the toolchain: bwrap started on the Trio loop's thread, inside the command's ``CommandSpace``)
and ``WatchedCommand`` (the ``LimitWatch`` of the command that spawn starts: going over a limit
is a ``resource_limit`` error).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import trio

from air.contracts.error import AirError, AirException, ErrorKind, make_air_error
from air.contracts.ids import new_id
from air.tools.credential_files import hidden_from_commands
from air.tools.limits import LimitWatch, resource_limit_error
from air.tools.output import LiveBudget, send_live
from air.tools.registry import is_cancellation
from air.tools.run import ToolRun
from air.tools.sandbox import SandboxRunner, sandbox_environment
from air.tools.sandbox_spawn import CommandSpace, open_sandboxed
from air.tools.shell import (
    command_space,
    interrupted_error,
    record_command_failed,
    record_command_started,
    store_output_logs,
)

if TYPE_CHECKING:
    from air.cpp.parsed_diagnostic import ParsedDiagnostic
    from air.cpp.process import CommandResult, OutputSink, Spawn

__all__ = ["SandboxedCommandRunner", "WatchedCommand", "sandboxed_spawn"]


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
    scratch: tuple[str, str] | None = None
    """``CommandSpace.cover``'s (scratch dir, workspace dir) for every command it runs."""

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
                "message": run.redactor.redact_cut(diagnostic.message, 4000),
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

        # one RedactingStream per stream: a secret split between two chunks is still caught;
        # past a stream's live budget nothing more of it is redacted or sent (its log has it)
        redacting = {"stdout": run.redactor.stream(), "stderr": run.redactor.stream()}
        live = {"stdout": LiveBudget(), "stderr": LiveBudget()}

        async def forward(name: str, text: str) -> None:
            budget = live[name]
            if text and budget.left <= 0:
                budget.held_back += len(text)
            else:  # the end of the stream (an empty chunk) flushes its last line
                redacted = redacting[name].feed(text) if text else redacting[name].finish()
                if shown := budget.take(redacted):
                    await send_live(run, command_run_id, name, shown)
                if not text and (note := budget.note(name)):
                    await send_live(run, command_run_id, name, note)
            if on_output is not None:
                await on_output(name, text)

        started = time.monotonic()
        env = sandbox_environment(os.environ)
        env["LC_ALL"] = "C.UTF-8"  # stable diagnostics (one quoting style, one language)
        watched = WatchedCommand()
        try:
            with command_space(run) as space:
                if self.scratch is not None:
                    space.cover(*self.scratch)
                space.hidden = await hidden_from_commands(run)
                spawn = sandboxed_spawn(
                    self.sandbox, command, workspace, real_cwd, env, space, watched
                )
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
        refs, out, err = await store_output_logs(run, command_run_id, out, err)
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


def sandboxed_spawn(
    sandbox: SandboxRunner,
    command: str,
    workspace: str,
    cwd: str,
    env: dict[str, str],
    space: CommandSpace,
    watched: WatchedCommand,
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
class WatchedCommand:
    """The ``LimitWatch`` of the command a ``sandboxed_spawn`` starts, once it has started."""

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
