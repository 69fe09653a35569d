"""Capabilities: manifests of optional tool packs and their trust (contracts §18).

Owns: ``CapabilityTrust``, ``CapabilityState``, ``CapabilityManifestV1``, ``ValidationResult``.
"""

from enum import StrEnum
from typing import Any, Literal

from pydantic import Field

from air.contracts.ids import Contract, empty_list

__all__ = ["CapabilityManifestV1", "CapabilityState", "CapabilityTrust", "ValidationResult"]


class CapabilityTrust(StrEnum):
    BUILT_IN = "built_in"
    PROJECT_LOCAL = "project_local"
    USER_INSTALLED = "user_installed"
    VERIFIED_PUBLISHER = "verified_publisher"
    UNTRUSTED = "untrusted"


class CapabilityState(StrEnum):
    DISCOVERED = "discovered"
    VALIDATED = "validated"
    DOCTOR_CHECKED = "doctor_checked"
    ENABLED = "enabled"
    REGISTERED = "registered"
    ACTIVE = "active"
    DISABLED = "disabled"
    FAILED = "failed"
    UPDATED = "updated"


class CapabilityManifestV1(Contract):
    schema_version: Literal[1] = 1
    capability_id: str
    name: str
    version: str
    trust: CapabilityTrust = CapabilityTrust.UNTRUSTED
    tools: list[dict[str, Any]] = Field(default_factory=empty_list)
    dependencies: list[str] = Field(default_factory=empty_list)
    triggers: list[str] = Field(default_factory=empty_list)
    evidence_types: list[str] = Field(default_factory=empty_list)
    config_schema: dict[str, Any] | None = None


class ValidationResult(Contract):
    ok: bool
    errors: list[str] = Field(default_factory=empty_list)
