"""The durable projection map (SDD §5.4 Table A): how each durable event changes domain rows.

Owns ``project(store, event, payload, seq)``: a deterministic function of (event, current rows)
that runs inside the caller's transaction and uses only the event's timestamp (never the
clock), the dispatch of each projected type to its step (``PROJECTED_TYPES``) and the session
row's own steps. An event that does not fit the current rows (unknown task, illegal status
transition, duplicate id) raises ``AirException(system_error)`` so the whole append rolls back.
Events of Table B and the append-only families (``APPEND_ONLY_TYPES``) write nothing here. Its
parts: ``air.events.projection_context`` (a step's context and guarded writes),
``projection_messages`` (the conversation), ``projection_tasks`` (the task graph) and
``projection_agents`` (agents, their runs and products, workspaces).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel

from air.contracts.event import RuntimeEvent
from air.events.payloads import DURABLE_TYPES
from air.events.projection_agents import AGENT_PROJECTIONS
from air.events.projection_context import ProjectionCtx, ProjectionStep, transition
from air.events.projection_messages import MESSAGE_PROJECTIONS
from air.events.projection_tasks import TASK_PROJECTIONS
from air.store.repositories import SessionStore

if TYPE_CHECKING:
    from air.events.payloads.ends import SessionArchivedPayload, SessionDeletedPayload
    from air.events.payloads.start import SessionCreatedPayload

__all__ = ["APPEND_ONLY_TYPES", "PROJECTED_TYPES", "project"]


def _session_created(ctx: ProjectionCtx, x: SessionCreatedPayload) -> None:
    ctx.store.sessions.insert(
        {
            "id": x.session_id,
            "project_id": x.project_id,
            "status": "active",
            "title": x.title,
            "mode": x.mode,
            "model_provider_id": x.model_provider_id,
            "model_id": x.model_id,
            "created_at": ctx.ts,
            "updated_at": ctx.ts,
        }
    )


def _session_status(status: str, column: str) -> ProjectionStep:
    def apply(ctx: ProjectionCtx, x: SessionArchivedPayload | SessionDeletedPayload) -> None:
        transition(
            ctx,
            ctx.store.sessions,
            x.session_id,
            f"session {x.session_id}",
            None,
            {"status": status, column: ctx.ts, "updated_at": ctx.ts},
        )

    return apply


_PROJECTIONS: dict[str, ProjectionStep] = {
    "session.created": _session_created,
    "session.archived": _session_status("archived", "archived_at"),
    "session.deleted": _session_status("deleted", "deleted_at"),
    **MESSAGE_PROJECTIONS,
    **TASK_PROJECTIONS,
    **AGENT_PROJECTIONS,
}

PROJECTED_TYPES: frozenset[str] = frozenset(_PROJECTIONS)
APPEND_ONLY_TYPES: frozenset[str] = frozenset(DURABLE_TYPES - PROJECTED_TYPES)
"""Durable types stored in ``events`` only (permission, doctor, requirement, architecture,
memory, debug: SDD §5.4 Table A "append" rows and Table B)."""


def project(store: SessionStore, event: RuntimeEvent, payload: BaseModel, seq: int) -> None:
    """Apply the domain update of one durable event inside the caller's transaction.

    Args:
        store: the repositories bound to the session DB (a transaction must be open).
        event: the envelope (its timestamp is the only time used).
        payload: the payload validated by the registry.
        seq: the ``events.seq`` assigned to this event.

    Raises:
        AirException: ``system_error`` when the event does not fit the current rows.
    """
    handler = _PROJECTIONS.get(event.type)
    if handler is not None:
        handler(ProjectionCtx(store, event, seq), payload)
