"""CapabilityRegistry, manifest validation and trust (SDD §9.5)."""
