"""Artifacts (files air keeps as evidence) and the knowledge stores' records.

Owns: ``ArtifactType``. The records (``ArtifactRef``, ``ArtifactCreateInput``,
``ArtifactContext``, ``ArtifactReadResult``) and the knowledge symbols SDD §3 merges here
(``DebugRecord``, ``LearnedMemory`` and their enums) are ``air.contracts.artifact_records``'
(IMPL-BOOT-12).
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["ArtifactType"]


class ArtifactType(StrEnum):
    LOG = "log"
    DIFF = "diff"
    SCREENSHOT = "screenshot"
    PCAP = "pcap"
    REPORT = "report"
    DIAGNOSTIC = "diagnostic"
    BUNDLE = "bundle"
    OTHER = "other"
