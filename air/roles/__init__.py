"""The worker side: ``python -m air.roles`` and the five roles on one agent loop (SDD §8.3)."""
