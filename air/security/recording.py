"""Recording a permission decision: the ``permission.decision.recorded`` event (contracts §13).

Owns ``record_decision``: the payload (``air.events.payloads.PermissionDecisionRecordedPayload``:
the decision with its reason redacted, the tool, the ids, and the subject judged, the command
else the paths, redacted) written through an ``EventSink``; a failed write is a value
(``PermissionRecordResult(ok=False)``), never an exception.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from air.contracts.error import ErrorKind, make_air_error
from air.contracts.event import EventSource, RuntimeEvent, new_event
from air.security.redact import SecretRedactor

if TYPE_CHECKING:  # built at the first permission check (IMPL-BOOT-12)
    from air.contracts.permission_records import (
        PermissionDecision,
        PermissionRecordResult,
        PermissionRequestContext,
    )

__all__ = ["EventSink", "record_decision"]

EventSink = Callable[[RuntimeEvent], Awaitable[object]]


async def record_decision(
    sink: EventSink | None,
    redactor: SecretRedactor,
    decision: PermissionDecision,
    context: PermissionRequestContext,
    *,
    tool_run_id: str | None = None,
) -> PermissionRecordResult:
    """Write ``permission.decision.recorded`` for ``decision`` through ``sink``.

    Returns:
        ``ok`` with the event id, or ``ok=False`` with the error when there is no sink or the
        write failed.
    """
    from air.contracts.permission_records import PermissionRecordResult

    if context.command:
        subject: str | None = redactor.redact(context.command)
    else:
        paths = [*context.write_paths, *context.read_paths]
        subject = redactor.redact(", ".join(paths)) if paths else None
    redacted = decision.model_copy(update={"reason": redactor.redact(decision.reason)})
    payload = {
        "decision": redacted.model_dump(mode="json", exclude_none=True),
        "tool_name": context.tool_name,
        "tool_run_id": tool_run_id,
        "task_id": context.task_id,
        "agent_id": context.agent_id,
        "subject": subject,
    }
    event = new_event(
        "permission.decision.recorded",
        payload,
        session_id=context.session_id,
        source=EventSource(kind="tool", id=context.tool_name),
    )
    if sink is None:
        return PermissionRecordResult(
            ok=False,
            error=make_air_error(
                kind=ErrorKind.SYSTEM_ERROR,
                message="the permission engine has no event sink",
                user_action="Construct PermissionEngine with sink=<ingestor.ingest>.",
            ),
        )
    try:
        await sink(event)
    except Exception as exc:  # the contract turns a failed write into a value
        return PermissionRecordResult(
            ok=False,
            error=make_air_error(
                kind=ErrorKind.STORAGE_ERROR,
                message=f"recording the decision failed: {exc}",
                user_action="Check the session database (air doctor).",
            ),
        )
    return PermissionRecordResult(ok=True, event_id=event.id)
