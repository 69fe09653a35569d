"""A stored ``events`` row's payload as the readers that build no event model take it.

Owns ``stored_payload`` (the JSON object a row's ``payload_json`` holds) and ``damaged_row``
(the error naming a row that holds none: a damaged or hand-edited session database SQLite
still reads), shared by every reader of payload text and by the event store's replay, so a
damaged row is named the same way wherever it is met, with the repair (`air doctor --fix`
rebuilds the session from its readable rows). Needs nothing but ``json``; the error model
loads only when there is a damaged row to name.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from air.contracts.error import AirException

__all__ = ["damaged_row", "stored_payload"]


def stored_payload(body: str | bytes, seq: int) -> dict[str, Any]:
    """The JSON object of a stored payload.

    Raises:
        AirException: ``validation_error`` (``damaged_row``) when it holds no JSON object.
    """
    try:
        payload = json.loads(body)
    except ValueError:
        payload = None
    if isinstance(payload, dict):
        return payload
    raise damaged_row(seq, "its payload is no JSON object")


def damaged_row(seq: object, why: str, detail: str | None = None) -> AirException:
    """The ``validation_error`` of the stored event ``seq`` that cannot be read (``why``)."""
    from air.contracts.error import AirException

    return AirException.of(
        kind="validation_error",
        message=f"stored event {seq} cannot be read: {why}",
        detail=detail,
        user_action="Run `air doctor --fix`: it rebuilds the session from the readable events.",
        metadata={"seq": str(seq)},
    )
