"""Artifacts (files air keeps as evidence) and the knowledge stores' records.

Owns: ``ArtifactType``, ``ArtifactRef``, ``ArtifactCreateInput``, ``ArtifactContext``,
``ArtifactReadResult``, and the knowledge symbols merged here by SDD §3 (``DebugRecord``,
``LearnedMemory`` and their enums).
All but ``ArtifactType`` live in ``air.contracts.artifact_records``, public from here through a
module ``__getattr__`` (IMPL-BOOT-12).
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
