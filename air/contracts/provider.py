"""Provider contracts (contracts §15): capability matrix, model requirement and assignment,
completion input and the normalised stream events."""

from __future__ import annotations

__all__: list[str] = []
