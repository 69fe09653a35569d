"""The in-process ProjectionClient the console reads (SDD §13.2: v1 transport is in process).

Owns ``InProcessProjectionClient``: a read-only view of a ``ProjectionStore`` exposing exactly
the ``air.contracts.ui.ProjectionClient`` protocol (``snapshot`` and ``subscribe``), so the
console cannot reach ``apply`` or ``hydrate``.
"""

from __future__ import annotations

from collections.abc import Callable

from air.contracts.ui import ProjectionSnapshot, ProjectionSubscription
from air.projection.store import ProjectionStore

__all__ = ["InProcessProjectionClient"]


class InProcessProjectionClient:
    """``ProjectionClient`` over a ProjectionStore in the same process."""

    def __init__(self, store: ProjectionStore) -> None:
        self._store = store

    def snapshot(self) -> ProjectionSnapshot:
        return self._store.snapshot()

    def subscribe(self, handler: Callable[[int], None]) -> ProjectionSubscription:
        return self._store.subscribe(handler)
