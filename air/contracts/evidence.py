"""Evidence: the references that prove a claim ("tests pass", "diff applied").

Owns: ``EvidenceKind``, ``EvidenceRef``, ``EvidenceCreateInput`` (contracts §14).
``EvidenceRef`` and ``EvidenceCreateInput`` live in ``air.contracts.evidence_records``, public
from here through a module ``__getattr__`` (IMPL-BOOT-12).
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Any

from air.contracts.exports import lazy_export

if TYPE_CHECKING:
    from air.contracts.evidence_records import EvidenceCreateInput, EvidenceRef

__all__ = ["EvidenceCreateInput", "EvidenceKind", "EvidenceRef"]


class EvidenceKind(StrEnum):
    BUILD_OUTPUT = "build_output"
    TEST_OUTPUT = "test_output"
    LOG = "log"
    SCREENSHOT = "screenshot"
    DIFF = "diff"
    METRIC = "metric"
    OTHER = "other"


_LATE = dict.fromkeys(
    ("EvidenceCreateInput", "EvidenceRef"),
    "evidence_records",
)
"""The public names of this module that ``air.contracts.evidence_records`` holds."""


def __getattr__(name: str) -> Any:
    """A name of ``_LATE`` from ``air.contracts.evidence_records``, cached here afterwards."""
    return lazy_export("air.contracts", _LATE, globals(), name, owner=__name__)
