"""The SQL projection of the conversation: ``messages`` and ``message_drafts`` rows.

Owns the steps of ``user.message.created`` and ``assistant.message.started / created / failed``
(``MESSAGE_PROJECTIONS``): a finished message becomes a ``messages`` row at its event ``seq``;
a streaming or failed answer is a draft, replaced by the message once it completes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from air.events.projection_context import (
    ProjectionCtx,
    ProjectionStep,
    opt_json,
    to_json,
)

if TYPE_CHECKING:
    from air.events.payloads.conversation import (
        AssistantMessageCreatedPayload,
        AssistantMessageFailedPayload,
        AssistantMessageStartedPayload,
        UserMessageCreatedPayload,
    )

__all__ = ["MESSAGE_PROJECTIONS"]


def _user_message(ctx: ProjectionCtx, x: UserMessageCreatedPayload) -> None:
    ctx.store.messages.insert(
        {
            "id": x.message_id,
            "session_id": ctx.event.session_id,
            "role": "user",
            "content_json": to_json(x.content),
            "task_id": x.task_id,
            "event_seq": ctx.seq,
            "created_at": ctx.ts,
        }
    )


def _assistant_started(ctx: ProjectionCtx, x: AssistantMessageStartedPayload) -> None:
    ctx.store.message_drafts.upsert(
        {
            "message_id": x.message_id,
            "session_id": ctx.event.session_id,
            "status": "streaming",
            "agent_id": x.agent_id,
            "task_id": x.task_id,
            "model_id": x.model_id,
            "error_json": None,
            "failure_artifact_id": None,
            "started_at": ctx.ts,
            "updated_at": ctx.ts,
        }
    )


def _assistant_created(ctx: ProjectionCtx, x: AssistantMessageCreatedPayload) -> None:
    ctx.store.messages.insert(
        {
            "id": x.message_id,
            "session_id": ctx.event.session_id,
            "role": "assistant",
            "content_json": to_json(x.content),
            "agent_id": x.agent_id,
            "task_id": x.task_id,
            "model_id": x.model_id,
            "stop_reason": x.stop_reason,
            "usage_json": opt_json(x.usage),
            "event_seq": ctx.seq,
            "created_at": ctx.ts,
        }
    )
    ctx.store.message_drafts.delete_for_message(x.message_id)


def _assistant_failed(ctx: ProjectionCtx, x: AssistantMessageFailedPayload) -> None:
    existing = ctx.store.message_drafts.get(x.message_id)
    ctx.store.message_drafts.upsert(
        {
            "message_id": x.message_id,
            "session_id": ctx.event.session_id,
            "status": "error",
            "agent_id": existing["agent_id"] if existing else None,
            "task_id": existing["task_id"] if existing else None,
            "model_id": existing["model_id"] if existing else None,
            "error_json": to_json(x.error),
            "failure_artifact_id": x.failure_artifact_id,
            "started_at": existing["started_at"] if existing else ctx.ts,
            "updated_at": ctx.ts,
        }
    )


MESSAGE_PROJECTIONS: dict[str, ProjectionStep] = {
    "user.message.created": _user_message,
    "assistant.message.started": _assistant_started,
    "assistant.message.created": _assistant_created,
    "assistant.message.failed": _assistant_failed,
}
"""The conversation's step per event type."""
