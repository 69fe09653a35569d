"""What one step of the SQL projection works with: its context and its guarded row writes.

Owns ``ProjectionCtx`` (the repositories, the event, its ``seq`` and timestamp: the only time a
step uses), ``ProjectionStep`` (the shape of one event type's step), ``transition`` (update a
row only from an allowed status, else fail precisely), ``require_row``, ``projection_error``
(the ``system_error`` that rolls the whole append back) and the JSON column encoders. The steps
themselves live in ``air.events.projection`` and its ``projection_*`` modules.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pydantic_core
from pydantic import BaseModel

from air.contracts.error import AirException
from air.contracts.event import RuntimeEvent
from air.store.repositories import SessionStore
from air.store.repository import Repository, Row

__all__ = [
    "ProjectionCtx",
    "ProjectionStep",
    "opt_json",
    "projection_error",
    "require_row",
    "to_json",
    "transition",
]


def to_json(value: Any) -> str:
    """A model or a plain value as the JSON text of a ``*_json`` column."""
    if isinstance(value, BaseModel):  # model_dump_json's serializer, without its keywords
        return value.__pydantic_serializer__.to_json(value).decode()
    return pydantic_core.to_json(value).decode()


def opt_json(value: Any) -> str | None:
    """``to_json``, with None kept as SQL NULL."""
    return None if value is None else to_json(value)


class ProjectionCtx:
    """One event being projected: the session's repositories, the event, its ``seq``."""

    __slots__ = ("event", "seq", "store", "ts")

    def __init__(self, store: SessionStore, event: RuntimeEvent, seq: int) -> None:
        self.store = store
        self.event = event
        self.seq = seq
        self.ts = event.timestamp


def projection_error(ctx: ProjectionCtx, message: str) -> AirException:
    """The ``system_error`` a step raises when the event does not fit the current rows."""
    return AirException.of(
        kind="system_error",
        message=f"cannot project {ctx.event.type}: {message}",
        user_action=(
            "The event does not fit the session's recorded state; run `air doctor` and report "
            "the bug with its bundle."
        ),
        metadata={"event_id": ctx.event.id, "event_type": ctx.event.type},
    )


def require_row(
    ctx: ProjectionCtx, row: Row | None, what: str, allowed: tuple[str, ...] | None
) -> Row:
    """The row, if it exists and its status is allowed; else the precise error."""
    if row is None:
        raise projection_error(ctx, f"{what} does not exist")
    if allowed is not None and row.get("status") not in allowed:
        raise projection_error(
            ctx, f"{what} is {row.get('status')}, expected one of {', '.join(allowed)}"
        )
    return row


def transition(
    ctx: ProjectionCtx,
    repo: Repository,
    key: Any,
    what: str,
    allowed: tuple[str, ...] | None,
    patch: dict[str, Any],
) -> None:
    """Update one row if it exists (and its status is allowed), else fail precisely."""
    if repo.update_if(key, patch, status_in=allowed) == 0:
        require_row(ctx, repo.get(key), what, allowed)
        raise projection_error(ctx, f"{what} was not updated")


ProjectionStep = Callable[[ProjectionCtx, Any], None]
"""One event type's step: writes the event's rows through the context's repositories."""
