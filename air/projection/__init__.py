"""ProjectionStore and the ProjectionClient it hands to the console (SDD §13.1).

Owns the console's projection of a session (``ProjectionStore``), the in-process client
(``InProcessProjectionClient``) and the read-only ``ReplayPlayer`` that feeds a stored event
log into a ProjectionStore with pause / step / speed.
"""

from __future__ import annotations

from air.projection.client import InProcessProjectionClient
from air.projection.replay import ReplayPlayer
from air.projection.store import ProjectionStore, StoreSubscription

__all__ = ["InProcessProjectionClient", "ProjectionStore", "ReplayPlayer", "StoreSubscription"]
