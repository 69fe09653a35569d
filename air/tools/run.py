"""ToolRun: the handle a tool's executor gets besides its input (SDD §9.1).

Owns ``ToolRun`` (the call's context, and the events, progress and artifacts it records through
the registry's services, redacted), ``ToolServices`` (what a ``ToolRun`` needs of the registry)
and the collaborator protocols the registry is built with (``EventRecorder``, ``ArtifactSink``).
Its own module so that the executors (``air.tools.executor``, the fs, shell, git and cpp tools)
and the registry import it without importing each other (IMPL-STRUCT-1).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from air.contracts.artifact import ArtifactType
from air.contracts.event import EventSource, RuntimeEvent, new_event
from air.contracts.ids import JsonObject
from air.contracts.runtime import PermissionTemplate
from air.contracts.tool import ToolDefinition

if TYPE_CHECKING:  # built at the first tool call (IMPL-BOOT-12)
    import trio

    from air.contracts.artifact_records import (
        ArtifactContext,
        ArtifactCreateInput,
        ArtifactReadResult,
        ArtifactRef,
    )
    from air.contracts.evidence_records import EvidenceRef
    from air.contracts.tool_runs import ToolEvent, ToolExecutionContext
    from air.security.redact import SecretRedactor

__all__ = [
    "ArtifactSink",
    "ArtifactWriting",
    "EventRecorder",
    "ToolEventKind",
    "ToolRun",
    "ToolServices",
]

ToolEventKind = Literal["progress", "stdout", "stderr", "text_delta", "provider_event"]


class EventRecorder(Protocol):
    """What the registry records into (``OpenSession.ingestor`` satisfies it)."""

    async def ingest(self, event: RuntimeEvent) -> Any: ...

    async def ingest_ephemeral(self, event: RuntimeEvent) -> Any: ...


class ArtifactWriting(Protocol):
    """An artifact written in pieces (``ArtifactSink.open_writer``; ``ArtifactWriter``)."""

    size: int

    def write(self, content: bytes) -> None: ...

    def close(self) -> None: ...

    def commit(self) -> ArtifactRef: ...

    def discard(self) -> None: ...


class ArtifactSink(Protocol):
    """What the registry stores artifacts in (``OpenSession.artifacts`` satisfies it)."""

    def create(self, input: ArtifactCreateInput, context: ArtifactContext) -> ArtifactRef: ...

    def open_writer(
        self, input: ArtifactCreateInput, context: ArtifactContext
    ) -> ArtifactWriting: ...

    def read(self, artifact_id: str, *, max_bytes: int | None = None) -> ArtifactReadResult: ...


class ToolServices(Protocol):
    """What a ``ToolRun`` uses of the registry that made it."""

    recorder: EventRecorder
    artifacts: ArtifactSink
    redactor: SecretRedactor
    read_observations: dict[tuple[str, str], str]
    """``fs.*``'s last-read content hash per (observer, path)."""


@dataclass(eq=False)
class ToolRun:
    """What an executor gets besides its input: the call's context and the registry's services."""

    tool_run_id: str
    definition: ToolDefinition
    context: ToolExecutionContext
    registry: ToolServices
    """The registry that made the call (``ToolRegistry`` satisfies it)."""
    artifacts: list[ArtifactRef] = field(default_factory=list)
    evidence_refs: list[EvidenceRef] = field(default_factory=list)
    """Evidence the executor recorded (``evidence.created``); attached to the result."""
    events: trio.MemorySendChannel[ToolEvent] | None = None
    """Where ``stream`` sends progress (set by the registry for streaming tools)."""
    revealed: tuple[str, ...] = ()
    """The credential paths the call's permission decision lets it read or write (a sensitive
    grant or rule); every other credential file of the workspace is hidden from its commands
    and kept out of what ``git.commit`` adds."""

    @property
    def redactor(self) -> SecretRedactor:
        return self.registry.redactor

    @property
    def workspace_realpath(self) -> str:
        """The workspace root with symlinks resolved."""
        return os.path.realpath(self.context.workspace_root)

    @property
    def denied(self) -> tuple[str, ...]:
        """The task's ``denied_paths``, resolved where they are for this call: below its
        workspace and in the project (``PathClassifier.scope_places``)."""
        ctx = self.context
        if not ctx.denied_paths:
            return ()
        from air.security.paths import PathClassifier  # only for a task that denies paths

        project, workspace = os.path.realpath(ctx.project_root), self.workspace_realpath
        classifier = PathClassifier()
        return tuple(
            place
            for entry in ctx.denied_paths
            for place in classifier.scope_places(entry, project, workspace)
        )

    @property
    def read_only(self) -> bool:
        """Whether the task may change no file of its workspace: it has no write area, or it
        works under the reviewer template (a review, a compaction). Its commands run behind
        the read-only view (IMPL-SBX-3): what they write never reaches the workspace, whatever
        the command's analysis missed."""
        ctx = self.context
        return ctx.write_area == [] or ctx.permission_template == PermissionTemplate.REVIEWER

    async def stream(self, kind: ToolEventKind, data: Any, *, redacted: bool = False) -> None:
        """Hand one progress item (redacted; ``redacted``: already, by this run's redactor, as
        a ``RedactingStream`` of it leaves it) to the caller of ``call_streaming``."""
        if self.events is not None:
            from air.contracts.tool_runs import ToolEvent

            data = data if redacted else self.redactor.redact_obj(data)
            await self.events.send(ToolEvent(tool_run_id=self.tool_run_id, kind=kind, data=data))

    def event(self, type: str, payload: JsonObject, *, redacted: bool = False) -> RuntimeEvent:
        return new_event(
            type,
            payload if redacted else self.redactor.redact_obj(payload),
            session_id=self.context.session_id,
            source=EventSource(kind="tool", id=self.definition.name),
        )

    async def record(self, type: str, payload: JsonObject) -> None:
        """Ingest a durable event (redacted)."""
        await self.registry.recorder.ingest(self.event(type, payload))

    async def emit(self, type: str, payload: JsonObject, *, redacted: bool = False) -> None:
        """Ingest an ephemeral event (redacted, unless ``redacted`` says it is already)."""
        await self.registry.recorder.ingest_ephemeral(self.event(type, payload, redacted=redacted))

    def add_artifact(
        self,
        type: ArtifactType,
        slug: str,
        content: bytes,
        *,
        extension: str = ".txt",
        command_run_id: str | None = None,
        redacted: bool = False,
    ) -> ArtifactRef:
        """Store a redacted artifact attributed to this run and attach it to the result
        (``redacted``: ``content`` already is, by this run's redactor)."""
        from air.contracts.artifact_records import ArtifactContext, ArtifactCreateInput

        ref = self.registry.artifacts.create(
            ArtifactCreateInput(
                type=type,
                slug=slug,
                extension=extension,
                content=content if redacted else self.redactor.redact_bytes(content),
            ),
            ArtifactContext(
                session_id=self.context.session_id,
                task_id=self.context.task_id,
                agent_id=self.context.agent_id,
                tool_run_id=self.tool_run_id,
                command_run_id=command_run_id,
            ),
        )
        self.artifacts.append(ref)
        return ref

    def open_artifact(
        self,
        type: ArtifactType,
        slug: str,
        *,
        extension: str = ".txt",
        command_run_id: str | None = None,
    ) -> ArtifactWriting:
        """An artifact of this run written in pieces, each redacted by the caller (a command's
        log, redacted as it streams: IMPL-REDACT-2); ``attach`` its ref once committed."""
        from air.contracts.artifact_records import ArtifactContext, ArtifactCreateInput

        return self.registry.artifacts.open_writer(
            ArtifactCreateInput(type=type, slug=slug, extension=extension, content=b""),
            ArtifactContext(
                session_id=self.context.session_id,
                task_id=self.context.task_id,
                agent_id=self.context.agent_id,
                tool_run_id=self.tool_run_id,
                command_run_id=command_run_id,
            ),
        )

    def attach(self, ref: ArtifactRef) -> None:
        """Attach an artifact stored through ``open_artifact`` to the result."""
        self.artifacts.append(ref)
