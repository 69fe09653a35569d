"""``EvidenceRef`` and ``EvidenceCreateInput`` (contracts §14).

Its users import it where they use one of its models; a run builds none of them before its first
model request (IMPL-BOOT-12).
"""

from typing import Any

from air.contracts.event import EntityType
from air.contracts.evidence import EvidenceKind
from air.contracts.ids import Contract, EvidenceRefID

__all__ = ["EvidenceCreateInput", "EvidenceRef"]


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
