"""Evidence: the references that prove a claim ("tests pass", "diff applied").

Owns: ``EvidenceKind``, ``EvidenceRef``, ``EvidenceCreateInput`` (contracts §14).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from air.contracts.event import EntityType
from air.contracts.ids import Contract, EvidenceRefID

__all__ = ["EvidenceCreateInput", "EvidenceKind", "EvidenceRef"]


class EvidenceKind(StrEnum):
    BUILD_OUTPUT = "build_output"
    TEST_OUTPUT = "test_output"
    LOG = "log"
    SCREENSHOT = "screenshot"
    DIFF = "diff"
    METRIC = "metric"
    OTHER = "other"


class EvidenceRef(Contract):
    evidence_ref_id: EvidenceRefID
    kind: EvidenceKind
    ref: str
    """What holds the proof: an artifact URI, a command_run id, a commit."""
    claim: str
    location_json: Any | None = None


class EvidenceCreateInput(Contract):
    kind: EvidenceKind
    ref: str
    claim: str
    location_json: Any | None = None
    entity_type: EntityType
    entity_id: str
