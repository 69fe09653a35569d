"""CapabilityRegistry, manifest validation and trust (SDD §9.5); the built-in C++ capability."""

from __future__ import annotations

from air.capabilities.builtin import CPP_CAPABILITY, builtin_capabilities, load_capabilities
from air.capabilities.registry import (
    CapabilityManifestValidator,
    CapabilityRecord,
    CapabilityRegistry,
    Registrar,
)

__all__ = [
    "CPP_CAPABILITY",
    "CapabilityManifestValidator",
    "CapabilityRecord",
    "CapabilityRegistry",
    "Registrar",
    "builtin_capabilities",
    "load_capabilities",
]
