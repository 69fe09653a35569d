"""Artifacts (files air keeps as evidence) and the knowledge stores' records.

Owns: ``ArtifactType``, ``ArtifactRef``, ``ArtifactCreateInput``, ``ArtifactContext``,
``ArtifactReadResult``, and the knowledge symbols merged here by SDD §3 (``DebugRecord``,
``LearnedMemory`` and their enums).
All but ``ArtifactType`` live in ``air.contracts.artifact_records``, public from here through a
module ``__getattr__`` (IMPL-BOOT-12).
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Any

from air.contracts.exports import lazy_export

if TYPE_CHECKING:
    from air.contracts.artifact_records import (
        ArtifactContext,
        ArtifactCreateInput,
        ArtifactReadResult,
        ArtifactRef,
        DebugRecord,
        LearnedMemory,
        MemoryStatus,
        MemoryType,
    )

__all__ = [
    "ArtifactContext",
    "ArtifactCreateInput",
    "ArtifactReadResult",
    "ArtifactRef",
    "ArtifactType",
    "DebugRecord",
    "LearnedMemory",
    "MemoryStatus",
    "MemoryType",
]


class ArtifactType(StrEnum):
    LOG = "log"
    DIFF = "diff"
    SCREENSHOT = "screenshot"
    PCAP = "pcap"
    REPORT = "report"
    DIAGNOSTIC = "diagnostic"
    BUNDLE = "bundle"
    OTHER = "other"


_LATE = dict.fromkeys(
    (
        "ArtifactContext",
        "ArtifactCreateInput",
        "ArtifactReadResult",
        "ArtifactRef",
        "DebugRecord",
        "LearnedMemory",
        "MemoryStatus",
        "MemoryType",
    ),
    "artifact_records",
)
"""The public names of this module that ``air.contracts.artifact_records`` holds."""


def __getattr__(name: str) -> Any:
    """A name of ``_LATE`` from ``air.contracts.artifact_records``, cached here afterwards."""
    return lazy_export("air.contracts", _LATE, globals(), name, owner=__name__)
