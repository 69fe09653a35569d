"""One Main Agent model turn: stream it, record it, let Esc interrupt it (SDD §14.1, §5.4).

Owns the ports the Main Agent is built on — ``EventSink`` (the EventIngestor), ``ModelPort``
(the ProviderManager) — and ``TurnRunner``: ``visible`` turns record
``assistant.message.started``, one ephemeral ``assistant.message.delta`` per text piece, then
``assistant.message.created`` or ``assistant.message.failed``; ``hidden`` turns (intent and
change classification, planning) record nothing. Every turn runs in its own ``CancelScope``;
``interrupt()`` cancels that scope only, so Esc ends the current turn (recorded as
``assistant.message.failed`` with kind ``cancelled``) and nothing else. The text a visible
message had streamed when it failed or was interrupted is handed to the ``DraftSink`` (when the
composition root set ``drafts``); the failure event names the artifact it became
(``failure_artifact_id``), so a reopened session shows the draft (IMPL-FRAME-3).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import trio

from air.contracts.error import AirError, AirException, ErrorKind, Retryability, make_air_error
from air.contracts.event import EventSource, RuntimeEvent, new_event
from air.contracts.ids import new_id
from air.contracts.provider import (
    CanonicalMessage,
    ContentBlock,
    MessageStopEvent,
    ModelAssignment,
    ModelRequirement,
    ProviderCompletionInput,
    ProviderErrorEvent,
    ProviderStreamEvent,
    TextBlock,
    TextDeltaEvent,
    ToolSpec,
)

__all__ = [
    "DraftSink",
    "EventSink",
    "ModelPort",
    "TurnResult",
    "TurnRunner",
    "interrupted_error",
    "turn_error",
]

log = logging.getLogger(__name__)


class EventSink(Protocol):
    """Where the Main Agent's events go (``air.events.ingestor.EventIngestor`` fits)."""

    async def ingest(self, event: RuntimeEvent) -> Any: ...


class DraftSink(Protocol):
    """Keeps the streamed text of a visible message that did not finish (the console: an
    artifact of the session); returns the artifact's id."""

    def keep(self, message_id: str, text: str) -> str: ...


class ModelPort(Protocol):
    """How the Main Agent reaches its model (``air.llm.manager.ProviderManager`` fits)."""

    def select_model(self, requirement: ModelRequirement) -> ModelAssignment: ...

    def complete(
        self, request: ProviderCompletionInput
    ) -> AsyncGenerator[ProviderStreamEvent, None]: ...


@dataclass
class TurnResult:
    status: Literal["complete", "failed", "interrupted"]
    content: list[ContentBlock] = field(default_factory=list)
    stop_reason: str | None = None
    usage: dict[str, Any] | None = None
    error: AirError | None = None
    message_id: str | None = None
    """The recorded message of a visible turn (its ``messages`` row when complete)."""

    @property
    def text(self) -> str:
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))


def turn_error(turn: TurnResult) -> AirError:
    """The error of a failed turn (a generic provider error when the turn carries none)."""
    return turn.error or make_air_error(
        kind=ErrorKind.PROVIDER_ERROR,
        message="the model turn failed",
        user_action="Send the message again.",
    )


def interrupted_error() -> AirError:
    return make_air_error(
        kind=ErrorKind.CANCELLED,
        message="interrupted (Esc)",
        retryability=Retryability.AFTER_CHANGE,
        user_action="Send the message again to continue; nothing else was stopped.",
    )


class TurnRunner:
    """Runs the Main Agent's model turns and records the visible ones.

    Args:
        events: receives every event (durable and ephemeral).
        models: the provider facade.
        model: the session's model (fixed for the session).
        session_id / project_id: stamped on every event.
        agent_id: the Main Agent's id on its messages.
    """

    def __init__(
        self,
        events: EventSink,
        models: ModelPort,
        model: ModelAssignment,
        *,
        session_id: str,
        project_id: str | None,
        agent_id: str = "main",
    ) -> None:
        self.events = events
        self.models = models
        self.model = model
        self.session_id = session_id
        self.project_id = project_id
        self.agent_id = agent_id
        self.source = EventSource(kind="main", id=agent_id)
        self._scope: trio.CancelScope | None = None
        self.drafts: DraftSink | None = None
        """Where an unfinished message's streamed text is kept (None: it is not kept)."""
        self._streamed: dict[str, list[str]] = {}

    # -- events ----------------------------------------------------------------------------
    async def record(self, type: str, payload: dict[str, Any]) -> None:
        await self.events.ingest(
            new_event(
                type,
                payload,
                session_id=self.session_id,
                source=self.source,
                project_id=self.project_id,
            )
        )

    async def say(self, text: str, *, task_id: str | None = None) -> str:
        """Record a complete assistant message that is not a model turn (plan, summary)."""
        message_id = new_id("msg")
        await self.started(message_id, task_id)
        await self.record(
            "assistant.message.created",
            {
                "message_id": message_id,
                "content": [{"type": "text", "text": text}],
                "agent_id": self.agent_id,
                "task_id": task_id,
            },
        )
        return message_id

    async def show_failure(self, error: AirError) -> str:
        """Record a failed assistant message carrying ``error`` (a clear failure)."""
        message_id = new_id("msg")
        await self.started(message_id, None)
        await self.record(
            "assistant.message.failed",
            {"message_id": message_id, "error": error.model_dump(mode="json")},
        )
        return message_id

    async def started(self, message_id: str, task_id: str | None) -> None:
        """Record ``assistant.message.started`` for ``message_id``."""
        await self.record(
            "assistant.message.started",
            {
                "message_id": message_id,
                "agent_id": self.agent_id,
                "task_id": task_id,
                "model_id": self.model.model_id,
            },
        )

    # -- interruption ----------------------------------------------------------------------
    @property
    def in_turn(self) -> bool:
        return self._scope is not None

    def interrupt(self) -> bool:
        """Cancel the current turn only; False when no turn runs."""
        if self._scope is None:
            return False
        self._scope.cancel(reason="interrupted by the person (Esc)")
        return True

    # -- turns -----------------------------------------------------------------------------
    def request(
        self,
        system: str,
        messages: Sequence[CanonicalMessage],
        tools: Sequence[ToolSpec] = (),
    ) -> ProviderCompletionInput:
        return ProviderCompletionInput(
            provider_id=self.model.provider_id,
            model_id=self.model.model_id,
            system=system,
            messages=list(messages),
            tools=list(tools),
            session_id=self.session_id,
            agent_id=self.agent_id,
        )

    async def hidden(self, request: ProviderCompletionInput) -> TurnResult:
        """A turn nobody sees (classification, planning); Esc interrupts it."""
        with trio.CancelScope() as scope:
            self._scope = scope
            try:
                return await self._stream(request, None)
            finally:
                self._scope = None
        return TurnResult(status="interrupted", error=interrupted_error())

    async def visible(
        self, request: ProviderCompletionInput, *, message_id: str | None = None
    ) -> TurnResult:
        """A streamed answer: started, deltas, then created / failed (Esc → failed)."""
        message_id = message_id or new_id("msg")
        await self.started(message_id, None)
        result = TurnResult(status="interrupted", error=interrupted_error())
        with trio.CancelScope() as scope:
            self._scope = scope
            try:
                result = await self._stream(request, message_id)
            finally:
                self._scope = None
        result.message_id = message_id
        await self.finish(message_id, result)
        return result

    async def finish(self, message_id: str, result: TurnResult) -> None:
        """Record the end of a visible message."""
        streamed = "".join(self._streamed.pop(message_id, []))
        if result.status == "complete":
            await self.record(
                "assistant.message.created",
                {
                    "message_id": message_id,
                    "content": [b.model_dump(mode="json") for b in result.content],
                    "agent_id": self.agent_id,
                    "model_id": self.model.model_id,
                    "stop_reason": result.stop_reason,
                    "usage": result.usage,
                },
            )
        else:
            error = result.error or interrupted_error()
            payload: dict[str, Any] = {
                "message_id": message_id,
                "error": error.model_dump(mode="json"),
            }
            if streamed and self.drafts is not None:
                try:
                    payload["failure_artifact_id"] = self.drafts.keep(message_id, streamed)
                except AirException as exc:  # the failure is recorded all the same
                    log.warning("the draft of %s was not kept: %s", message_id, exc.error.message)
            await self.record("assistant.message.failed", payload)

    async def stream_into(self, request: ProviderCompletionInput, message_id: str) -> TurnResult:
        """One model call whose text streams into an already started message (direct mode);
        the caller records the end and owns the cancel scope (``scope``)."""
        return await self._stream(request, message_id)

    def scope(self) -> trio.CancelScope:
        """A cancel scope registered as the current turn (leave it with ``release``)."""
        scope = trio.CancelScope()
        self._scope = scope
        return scope

    def release(self) -> None:
        self._scope = None

    async def _stream(self, request: ProviderCompletionInput, message_id: str | None) -> TurnResult:
        try:
            return await self._consume(request, message_id)
        except AirException as exc:  # bad input (exhausted cassette, unknown model): a value
            return TurnResult(status="failed", error=exc.error)

    async def _consume(
        self, request: ProviderCompletionInput, message_id: str | None
    ) -> TurnResult:
        async with aclosing(self.models.complete(request)) as stream:
            async for event in stream:
                if isinstance(event, TextDeltaEvent) and message_id is not None and event.text:
                    self._streamed.setdefault(message_id, []).append(event.text)
                    await self.record(
                        "assistant.message.delta",
                        {"message_id": message_id, "index": event.index, "text": event.text},
                    )
                elif isinstance(event, MessageStopEvent):
                    return TurnResult(
                        status="complete",
                        content=list(event.content),
                        stop_reason=str(event.stop_reason),
                        usage=event.usage.model_dump(mode="json", exclude_none=True),
                    )
                elif isinstance(event, ProviderErrorEvent):
                    return TurnResult(status="failed", error=event.error)
        return TurnResult(
            status="failed",
            error=make_air_error(
                kind=ErrorKind.PROVIDER_ERROR,
                message="the model's stream ended without a final message",
                retryability=Retryability.TRANSIENT,
                user_action="Send the message again.",
            ),
        )
