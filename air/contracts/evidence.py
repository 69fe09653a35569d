"""Evidence: the references that prove a claim ("tests pass", "diff applied").

Owns: ``EvidenceKind`` (contracts §14). ``EvidenceRef`` and ``EvidenceCreateInput`` are
``air.contracts.evidence_records``' (IMPL-BOOT-12).
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["EvidenceKind"]


class EvidenceKind(StrEnum):
    BUILD_OUTPUT = "build_output"
    TEST_OUTPUT = "test_output"
    LOG = "log"
    SCREENSHOT = "screenshot"
    DIFF = "diff"
    METRIC = "metric"
    OTHER = "other"
