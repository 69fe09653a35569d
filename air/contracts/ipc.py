"""IPC contracts between the parent and a worker (contracts §10): envelope, kinds, payloads."""

from __future__ import annotations

__all__: list[str] = []
