"""ToolRegistry: the only road from a tool call to a side effect (SDD §9.1, §9.3).

Owns ``ToolRegistry`` (``register``, ``register_streaming``, ``call``, ``call_streaming``,
``list``) and the prompt broker names (``PromptBroker``, ``HeadlessPromptBroker``); ``ToolRun``,
the handle an executor gets, is ``air.tools.run``'s. Each call validates its input
(``air.tools.schema``), asks the PermissionEngine (the request and the prompt are
``air.tools.call_permission``'s), branches on the six actions, and records ``tool.started`` /
``tool.completed`` / ``tool.failed`` / ``tool.cancelled``; everything recorded goes through the
SecretRedactor.
Deciding stays here; doing is the ``WorkspaceExecutor``'s (``air.tools.executor``; default
the local one), which every allowed call goes through (IMPL-LAUNCH-5).
"""

from __future__ import annotations

import builtins
import json
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import trio

from air.contracts.error import AirError, AirException, ErrorKind, make_air_error
from air.contracts.ids import JsonObject, new_id
from air.contracts.permission import PermissionAction
from air.contracts.prompt import FailClosedPrompt, PermissionPrompt
from air.contracts.tool import ToolDefinition
from air.contracts.utf8 import utf8_safe
from air.security.engine import PermissionEngine
from air.security.redact import SecretRedactor
from air.tools.call_permission import PathExtractor, ask_person, permission_request
from air.tools.executor import LocalWorkspaceExecutor, WorkspaceExecutor
from air.tools.run import ArtifactSink, EventRecorder, ToolRun
from air.tools.schema import integral_input, schema_problems, validate_schema, value_problems

if TYPE_CHECKING:  # built at the first tool call (IMPL-BOOT-12)
    from air.contracts.artifact_records import (
        ArtifactRef,
    )
    from air.contracts.evidence_records import EvidenceRef
    from air.contracts.permission_records import PermissionDecision
    from air.contracts.tool_runs import ToolEvent, ToolExecutionContext, ToolResultEnvelope

__all__ = [
    "HeadlessPromptBroker",
    "PromptBroker",
    "StreamingToolExecutor",
    "ToolExecutor",
    "ToolRegistry",
    "is_cancellation",
]


log = logging.getLogger(__name__)
_DEFECT_CHARS = 500
"""At most this much of an unexpected exception's text reaches the error (a message may quote
whatever the tool was reading)."""

PromptBroker = PermissionPrompt
"""Answers permission prompts (``air.contracts.permission``): the console implements it;
``None`` means headless."""
HeadlessPromptBroker = FailClosedPrompt
"""Answers every prompt with a refusal: headless runs fail closed."""


ToolExecutor = Callable[[JsonObject, ToolRun], Awaitable[Any]]
StreamingToolExecutor = Callable[[JsonObject, ToolRun], Awaitable[Any]]
"""Like ``ToolExecutor``; it sends progress with ``await run.stream(kind, data)`` meanwhile."""


class _Entry(NamedTuple):
    """A registered tool: its definition, its executor and how to find the paths it uses; a
    read-only record, so a NamedTuple (IMPL-BOOT-14)."""

    definition: ToolDefinition
    executor: ToolExecutor
    paths: PathExtractor | None


def is_cancellation(exc: BaseException) -> bool:
    """True for ``trio.Cancelled`` or a group made only of them."""
    if isinstance(exc, trio.Cancelled):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return all(is_cancellation(e) for e in exc.exceptions)
    return False


def _failure(name: str, exc: BaseException, redact: Callable[[str], str]) -> AirError:
    """What a call whose executor raised ``exc`` reports: every started call ends recorded
    (SDD §9.1). Air's own refusal as it is; an OSError as the tool's; any other exception is a
    defect of air's, which ends this call, never the run (editing a Latin-1 file once ended a
    whole batch with a traceback), its traceback kept in air.log. A BaseException that is no
    Exception (KeyboardInterrupt, SystemExit) is raised again."""
    if isinstance(exc, AirException):
        return exc.error
    if isinstance(exc, OSError):
        return make_air_error(
            kind=ErrorKind.TOOL_ERROR,
            message=redact(f"{name} failed: {exc.strerror or exc}"),
            user_action="Check the path and try again.",
        )
    if not isinstance(exc, Exception):
        raise exc
    log.error("%s failed on a defect of air", name, exc_info=exc)
    what = redact(f"{type(exc).__name__}: {exc}")
    return make_air_error(
        kind=ErrorKind.SYSTEM_ERROR,
        message=f"{name} failed on a defect of air ({what[:_DEFECT_CHARS]})",
        user_action=(
            "Go on without this call; report the defect with `air doctor --bundle FILE` "
            "(air.log holds its traceback)."
        ),
    )


def _summary(output: Any, limit: int = 2000) -> str:
    text = output if isinstance(output, str) else json.dumps(output, default=str, sort_keys=True)
    return text if len(text) <= limit else text[:limit] + "…"


# -- the registry --------------------------------------------------------------------------


class ToolRegistry:
    """Register tools and run them under the PermissionEngine (SDD §9.1).

    Args:
        engine: decides every call.
        recorder: receives the durable and ephemeral events (an EventIngestor).
        artifacts: stores diff, log and reject artifacts (an ArtifactStore).
        redactor: applied to every event payload and artifact.
        prompts: answers ``ask_user``; None means headless (fail closed).
        workspace: does the allowed calls (default ``LocalWorkspaceExecutor``: in process).
    """

    def __init__(
        self,
        *,
        engine: PermissionEngine,
        recorder: EventRecorder,
        artifacts: ArtifactSink,
        redactor: SecretRedactor | None = None,
        prompts: PromptBroker | None = None,
        workspace: WorkspaceExecutor | None = None,
    ) -> None:
        self.engine = engine
        self.workspace: WorkspaceExecutor = workspace or LocalWorkspaceExecutor()
        self.recorder = recorder
        self.artifacts = artifacts
        self.redactor = redactor or engine.redactor
        self.prompts = prompts
        self._tools: dict[str, _Entry] = {}
        self.read_observations: dict[tuple[str, str], str] = {}
        """(task or session id, realpath) → sha256 of the content last read (read-before-edit)."""

    # -- registration --------------------------------------------------------------------

    def register(
        self,
        definition: ToolDefinition,
        executor: ToolExecutor,
        *,
        paths: PathExtractor | None = None,
    ) -> None:
        """Register a tool whose executor returns its output."""
        self._add(_Entry(definition, executor, paths))

    def register_streaming(
        self,
        definition: ToolDefinition,
        executor: StreamingToolExecutor,
        *,
        paths: PathExtractor | None = None,
    ) -> None:
        """Register a tool whose executor streams progress with ``run.stream`` and returns its
        output; ``call_streaming`` hands the progress to the caller as ``ToolEvent`` items."""
        self._add(_Entry(definition.model_copy(update={"streaming": True}), executor, paths))

    def _add(self, entry: _Entry) -> None:
        name = entry.definition.name
        if name in self._tools:
            raise AirException.of(
                kind=ErrorKind.SYSTEM_ERROR,
                message=f"tool {name} is registered twice",
                user_action="Register each tool name once.",
            )
        # an MCP server's or a capability's schema is theirs: read before any call is checked
        problems = schema_problems(entry.definition.input_schema)
        if problems:
            raise AirException.of(
                kind=ErrorKind.CONFIG_ERROR,
                message=f"tool {name} has an input schema air cannot check: "
                + "; ".join(problems[:3]),
                user_action="Fix the tool's input schema where it is declared (its MCP server "
                "or capability manifest), or remove that server or capability.",
            )
        self._tools[entry.definition.name] = entry
        self.workspace.install(entry.definition.name, entry.executor)

    def list(self) -> list[ToolDefinition]:
        """The definitions of every registered tool, in registration order."""
        return [e.definition for e in self._tools.values()]

    # -- calling ---------------------------------------------------------------------------

    async def call(
        self, name: str, input: JsonObject, context: ToolExecutionContext
    ) -> ToolResultEnvelope:
        """Run tool ``name`` to completion and return its envelope (streams consumed inside)."""
        from air.contracts.tool_runs import ToolResultEnvelope

        final: ToolResultEnvelope | None = None
        async with self.call_streaming(name, input, context) as items:
            async for item in items:
                if isinstance(item, ToolResultEnvelope):
                    final = item
        if final is None:  # the stream always ends with an envelope unless it was cancelled
            raise AirException.of(
                kind=ErrorKind.SYSTEM_ERROR,
                message=f"{name} ended without a result",
                user_action="Report this as a bug in air.",
            )
        return final

    @trio.as_safe_channel
    async def call_streaming(
        self, name: str, input: JsonObject, context: ToolExecutionContext
    ) -> AsyncGenerator[ToolEvent | ToolResultEnvelope, None]:
        """Run tool ``name``; the channel carries its progress and exactly one final envelope.

        Use as ``async with registry.call_streaming(...) as items: async for item in items``.
        If the caller is cancelled or leaves the block early, the tool is cancelled too,
        ``tool.cancelled`` is recorded and the cancellation propagates.
        """
        tool_run_id = new_id("tr")
        started = time.monotonic()
        entry = self._tools.get(name)
        if entry is None:
            yield self._envelope(
                tool_run_id,
                name,
                "error",
                started,
                error=make_air_error(
                    kind=ErrorKind.TOOL_ERROR,
                    message=f"unknown tool {name!r}",
                    user_action=f"Use one of: {', '.join(sorted(self._tools))}.",
                ),
            )
            return
        definition = entry.definition
        input = integral_input(definition.input_schema, input)
        problems = validate_schema(definition.input_schema, input) or value_problems(input)
        if problems:
            yield self._envelope(
                tool_run_id,
                name,
                "error",
                started,
                error=make_air_error(
                    kind=ErrorKind.VALIDATION_ERROR,
                    message=f"invalid input for {name}: {'; '.join(problems[:5])}",
                    user_action="Fix the tool arguments to match the tool's input schema.",
                ),
            )
            return
        try:
            request = permission_request(definition, entry.paths, input, context)
        except AirException as exc:  # the tool's extractor refuses what the schema allows
            yield self._envelope(tool_run_id, name, "error", started, error=exc.error)
            return
        evaluation = self.engine.explain(request)
        decision = evaluation.decision
        await self.engine.record(decision, request, tool_run_id=tool_run_id)
        run = ToolRun(
            tool_run_id=tool_run_id,
            definition=definition,
            context=context,
            registry=self,
            revealed=evaluation.credential_paths,
        )

        action = decision.action
        if action == PermissionAction.ASK_USER:
            decision = await ask_person(self.engine, self.prompts, run, request, decision)
            action = decision.action
        if action == PermissionAction.DENY:
            yield self._envelope(
                tool_run_id,
                name,
                "denied",
                started,
                decision=decision,
                error=make_air_error(
                    kind=ErrorKind.PERMISSION_DENIED,
                    message=self.redactor.redact(decision.reason),
                    user_action=(
                        "Choose a safer action, or add an allow rule to "
                        ".air/shared/permissions.yaml."
                    ),
                ),
            )
            return
        if action == PermissionAction.BLOCK:
            yield self._envelope(
                tool_run_id,
                name,
                "blocked",
                started,
                decision=decision,
                error=make_air_error(
                    kind=ErrorKind.PERMISSION_DENIED,
                    message=self.redactor.redact(decision.reason),
                    user_action="The task needs a wider scope: report a blocker.",
                ),
            )
            return
        if action == PermissionAction.REFUSE:
            yield self._envelope(
                tool_run_id,
                name,
                "error",
                started,
                decision=decision,
                error=make_air_error(
                    kind=ErrorKind.POLICY_ERROR,
                    message=self.redactor.redact(decision.reason),
                    user_action="This tool may not do that; use a tool that declares it.",
                ),
            )
            return

        await run.record(
            "tool.started",
            {
                "tool_run_id": tool_run_id,
                "tool_name": name,
                "task_id": context.task_id,
                "agent_id": context.agent_id,
                "origin_message_id": context.origin_message_id,
                "input": input,
            },
        )
        output: Any = None
        try:
            if not definition.streaming:
                output = await self.workspace.execute(name, input, run)
            else:
                from air.contracts.tool_runs import ToolEvent

                send, receive = trio.open_memory_channel[ToolEvent](32)
                run.events = send
                result: builtins.list[Any] = []
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._run_streaming, name, input, run, result)
                    async with receive:
                        async for item in receive:
                            yield item
                if isinstance(result[0], Exception):
                    raise result[0]
                output = result[0]
        except BaseException as exc:
            if is_cancellation(exc):
                # Shielded and bounded: the record must land even though the caller is cancelled.
                with trio.move_on_after(5, shield=True):
                    await run.record(
                        "tool.cancelled",
                        {
                            "tool_run_id": tool_run_id,
                            "reason": "the caller was cancelled",
                            "duration_ms": self._ms(started),
                        },
                    )
                raise
            error = _failure(name, exc, self.redactor.redact)
            await run.record(
                "tool.failed",
                {
                    "tool_run_id": tool_run_id,
                    "error": error.model_dump(mode="json"),
                    "artifact_ids": [a.artifact_id for a in run.artifacts],
                    "duration_ms": self._ms(started),
                },
            )
            yield self._envelope(
                tool_run_id,
                name,
                "error",
                started,
                decision=decision,
                error=error,
                artifacts=run.artifacts,
            )
            return
        # a file name that is no UTF-8 (a repository's Latin-1 one) comes from os.listdir
        # with surrogates no event or IPC line can encode: listing it ended the whole run
        redacted = utf8_safe(self.redactor.redact_obj(output))
        await run.record(
            "tool.completed",
            {
                "tool_run_id": tool_run_id,
                "output_summary": _summary(redacted),
                "artifact_ids": [a.artifact_id for a in run.artifacts],
                "evidence_ref_ids": [e.evidence_ref_id for e in run.evidence_refs],
                "duration_ms": self._ms(started),
            },
        )
        yield self._envelope(
            tool_run_id,
            name,
            "ok",
            started,
            decision=decision,
            output=redacted,
            artifacts=run.artifacts,
            evidence_refs=run.evidence_refs,
        )

    async def _run_streaming(
        self,
        name: str,
        input: JsonObject,
        run: ToolRun,
        result: builtins.list[Any],
    ) -> None:
        assert run.events is not None
        async with run.events:
            try:
                result.append(await self.workspace.execute(name, input, run))
            except Exception as exc:
                result.append(exc)  # re-raised outside the nursery, where it is reported

    def _envelope(
        self,
        tool_run_id: str,
        name: str,
        status: Any,
        started: float,
        *,
        decision: PermissionDecision | None = None,
        output: Any = None,
        error: AirError | None = None,
        artifacts: Sequence[ArtifactRef] | None = None,
        evidence_refs: Sequence[EvidenceRef] | None = None,
    ) -> ToolResultEnvelope:
        from air.contracts.tool_runs import ToolResultEnvelope

        return ToolResultEnvelope(
            tool_run_id=tool_run_id,
            tool_name=name,
            status=status,
            output=output,
            error=error,
            decision=decision,
            artifacts=list(artifacts or []),
            evidence_refs=list(evidence_refs or []),
            duration_ms=self._ms(started),
        )

    @staticmethod
    def _ms(started: float) -> int:
        return int((time.monotonic() - started) * 1000)
