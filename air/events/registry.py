"""EventSchemaRegistry: payload model and persistence policy per event type and version (SDD §5.2).

Owns the registry that every event passes before it is stored or published: an unknown
``(type, version)`` is a ``system_error``, a payload that does not match its model is a
``validation_error``. Seeded from ``air.events.payloads``: a seeded registry takes each model
from ``PAYLOADS`` when it is first asked for it, so it imports only the payload groups of the
event types it meets (IMPL-BOOT-7).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from air.contracts.error import AirException
from air.contracts.event import EventPersistence, RuntimeEvent
from air.contracts.ids import JsonObject
from air.events.payloads import PAYLOADS, PERSISTENCE

__all__ = ["EventSchemaRegistry", "default_registry"]


class EventSchemaRegistry:
    """Payload models and persistence policies keyed by event type (+ version)."""

    def __init__(self) -> None:
        self._models: dict[tuple[str, int], type[BaseModel]] = {}
        self._seed: Mapping[tuple[str, int], type[BaseModel]] = {}
        """Models registered by ``seeded``, copied into ``_models`` at their first lookup."""
        self._persistence: dict[str, EventPersistence] = {}
        self._durable: set[str] = set()
        """The durable types (``is_durable`` of every stored event)."""

    @classmethod
    def seeded(cls) -> EventSchemaRegistry:
        """A registry holding every event type of baselines §A.7 (version 1)."""
        registry = cls()
        registry._seed = PAYLOADS
        for event_type, _version in PAYLOADS:
            registry._persistence[event_type] = PERSISTENCE[event_type]
            if PERSISTENCE[event_type] is EventPersistence.DURABLE:
                registry._durable.add(event_type)
        return registry

    def _model(self, key: tuple[str, int]) -> type[BaseModel] | None:
        model = self._models.get(key)
        if model is None and key in self._seed:
            model = self._models[key] = self._seed[key]
        return model

    def register(
        self,
        event_type: str,
        version: int,
        model: type[BaseModel],
        persistence: EventPersistence = EventPersistence.DURABLE,
    ) -> None:
        """Add a payload model; a type's persistence is the same for all its versions.

        Raises:
            AirException: ``system_error`` when the pair is already registered or the
                persistence contradicts an earlier version.
        """
        key = (event_type, version)
        known = self._persistence.get(event_type)
        taken = key in self._models or key in self._seed
        if taken or (known is not None and known != persistence):
            raise AirException.of(
                kind="system_error",
                message=f"event {event_type} v{version} is already registered differently",
                user_action="Register a new version instead of changing a published one.",
            )
        self._models[key] = model
        self._persistence[event_type] = persistence
        if persistence is EventPersistence.DURABLE:
            self._durable.add(event_type)

    def list(self) -> list[tuple[str, int]]:
        """Every registered ``(type, version)`` pair, sorted."""
        return sorted({*self._models, *self._seed})

    def get_model(self, event_type: str, version: int = 1) -> type[BaseModel] | None:
        return self._model((event_type, version))

    def get_schema(self, event_type: str, version: int = 1) -> JsonObject | None:
        """The JSON schema of a payload model, or None when unknown."""
        model = self._model((event_type, version))
        return None if model is None else model.model_json_schema()

    def persistence(self, event_type: str) -> EventPersistence:
        """The persistence policy of a type.

        Raises:
            AirException: ``system_error`` for an unknown type.
        """
        policy = self._persistence.get(event_type)
        if policy is None:
            raise self._unknown(event_type, None)
        return policy

    def is_durable(self, event_type: str) -> bool:
        """Whether events of the type are stored (raises for an unknown type, as
        ``persistence``)."""
        return (
            event_type in self._durable or self.persistence(event_type) is EventPersistence.DURABLE
        )

    def validate(self, event_type: str, version: int, payload: Any) -> bool:
        """True when ``payload`` is valid for the registered ``(type, version)``."""
        model = self._model((event_type, version))
        if model is None:
            return False
        try:
            model.model_validate(payload)
        except ValidationError:
            return False
        return True

    def parse(self, event: RuntimeEvent) -> BaseModel:
        """Validate an event's payload and return it as its model.

        Raises:
            AirException: ``system_error`` for an unknown type+version; ``validation_error``
                for a payload that does not match the model.
        """
        model = self._model((event.type, event.version))
        if model is None:
            raise self._unknown(event.type, event.version)
        try:  # model_validate's own validator, without the wrapper's per-call keywords
            return model.__pydantic_validator__.validate_python(event.payload)  # type: ignore[no-any-return]
        except ValidationError as exc:
            raise AirException.of(
                kind="validation_error",
                message=f"invalid payload for event {event.type} v{event.version}",
                detail=str(exc),
                retryability="after_change",
                user_action=(
                    "Fix the producer of this event so its payload matches the registered schema "
                    f"(air.events.payloads.{model.__name__})."
                ),
                metadata={"event_type": event.type, "event_id": event.id},
            ) from exc

    def _unknown(self, event_type: str, version: int | None) -> AirException:
        what = event_type if version is None else f"{event_type} v{version}"
        return AirException.of(
            kind="system_error",
            message=f"unknown event type {what}",
            retryability="never",
            user_action=(
                "Use a registered event type (air.events.payloads.PAYLOADS) or register the new "
                "type/version before emitting it."
            ),
            metadata={"event_type": event_type, "version": version},
        )


_DEFAULT: EventSchemaRegistry | None = None


def default_registry() -> EventSchemaRegistry:
    """The shared seeded registry (built once)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = EventSchemaRegistry.seeded()
    return _DEFAULT
