"""Event payload models, group ``doctor`` (``air.events.payloads``; IMPL-BOOT-7).

What ``air doctor`` records (IMPL names): a run, the issues it found, its end.
"""

from typing import Literal

from pydantic import Field

from air.contracts.ids import empty_list
from air.events.payloads.start import EventPayload

__all__ = [
    "DoctorIssueFoundPayload",
    "DoctorRunCompletedPayload",
    "DoctorRunStartedPayload",
]


# --- doctor -------------------------------------------------------------------------------


class DoctorRunStartedPayload(EventPayload):
    doctor_run_id: str
    checks: list[str] = Field(default_factory=empty_list)


class DoctorIssueFoundPayload(EventPayload):
    doctor_run_id: str
    check: str
    severity: Literal["info", "warning", "error"]
    message: str
    user_action: str | None = None


class DoctorRunCompletedPayload(EventPayload):
    doctor_run_id: str
    ok: bool
    issue_count: int = 0
    report_artifact_id: str | None = None
