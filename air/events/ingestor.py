"""EventIngestor: the single runtime entry point for events (SDD §5.1).

Owns ``EventIngestor``: validate the envelope and payload with the registry, then route by the
type's persistence policy — durable → ``EventStore.append`` (transaction + projection +
post-commit publish), ephemeral → ``EventBus.publish`` (live only; an ``agent.heartbeat`` is
also folded into the agent's heartbeat columns). It creates no follow-up work itself. The
store call is synchronous and runs inline (IMPL-EVT-6); the async ``ingest`` then takes the
bus's backpressure.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from air.contracts.error import AirException
from air.contracts.event import EventPersistence, RuntimeEvent
from air.events.bus import EventBus
from air.events.registry import EventSchemaRegistry
from air.events.store import EventStore, too_large

__all__ = ["EventIngestor"]


class EventIngestor:
    """Validate and route events; see the module docstring."""

    def __init__(
        self,
        store: EventStore,
        bus: EventBus,
        registry: EventSchemaRegistry | None = None,
    ) -> None:
        self.store = store
        self.bus = bus
        self.registry = registry or store.registry

    def policy_for(self, event_type: str) -> EventPersistence:
        """The persistence policy of a type (``system_error`` when unknown)."""
        return self.registry.persistence(event_type)

    def ingest_sync(self, event: RuntimeEvent) -> int | None:
        """Synchronous ``ingest``: returns the stored seq, or None for an ephemeral event.

        Raises:
            AirException: ``system_error`` for an unknown type+version or a projection
                failure, ``validation_error`` for an invalid payload.
        """
        payload = self.registry.parse(event)
        if self.policy_for(event.type) is EventPersistence.EPHEMERAL:
            self._fold_heartbeat(event, payload)
            self.bus.publish(event)
            return None
        return self.store.append_parsed(event, payload)

    def _fold_heartbeat(self, event: RuntimeEvent, payload: BaseModel) -> None:
        # agent.heartbeat is coalesced into the agents' heartbeat columns (IMPL-EVT-4).
        if event.type != "agent.heartbeat":
            return
        from air.events.payloads.ends import AgentHeartbeatPayload  # loaded: payload is its

        if isinstance(payload, AgentHeartbeatPayload):
            try:
                self.store.store.agents.update_heartbeat(
                    payload.agent_id,
                    at=event.timestamp,
                    state=payload.state,
                    turn=payload.turn,
                    tokens=payload.tokens,
                )
            except OverflowError:
                raise too_large(event) from None

    async def ingest(self, event: RuntimeEvent) -> int | None:
        """Validate and route one event (durable → stored + published; ephemeral → published).

        After a durable event, waits (bounded) while a slow ``keep`` subscriber of the bus
        holds publishers back (``EventBus.wait_for_room``, IMPL-AGENT-6).
        """
        seq = self.ingest_sync(event)
        if seq is not None:
            await self.bus.wait_for_room()
        return seq

    async def ingest_many(self, events: Sequence[RuntimeEvent]) -> list[int]:
        """Store several durable events in one transaction (ephemeral ones are refused)."""
        return self.store.append_many(events)

    async def ingest_ephemeral(self, event: RuntimeEvent) -> None:
        """Publish an ephemeral event after validating it.

        Raises:
            AirException: ``system_error`` if the type is durable (it would be lost).
        """
        payload = self.registry.parse(event)
        if self.policy_for(event.type) is not EventPersistence.EPHEMERAL:
            raise AirException.of(
                kind="system_error",
                message=f"event {event.type} is durable; ingest_ephemeral would lose it",
                user_action="Call EventIngestor.ingest for durable events.",
                metadata={"event_type": event.type},
            )
        self._fold_heartbeat(event, payload)
        self.bus.publish(event)
