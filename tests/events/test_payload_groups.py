"""The payload models load by group, on first use, and are the models they were (IMPL-BOOT-7).

``payload_schemas.json`` was written from ``air/events/payloads.py`` at ba9668b (before the split):
per ``(type, version)`` the model's name, its persistence and its ``model_json_schema()`` (two
entries changed on purpose since: ``agent.completed`` keeps the worker's result, IMPL-RESUME-1;
``session.created`` the run's options, IMPL-RESUME-2). The
laziness is checked in fresh interpreters (``sys.modules`` after the code ran).
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import air.events.payloads as payloads
from air.contracts.error import AirException
from air.contracts.event import EventPersistence, EventSource, RuntimeEvent, new_event
from air.events.payloads import DURABLE_TYPES, EPHEMERAL_TYPES, PAYLOADS, PERSISTENCE
from air.events.registry import EventSchemaRegistry

SNAPSHOT = Path(__file__).with_name("payload_schemas.json")
PACKAGE = Path(payloads.__file__).parent
GROUPS = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")


def _snapshot() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SNAPSHOT.read_text())
    return data


def test_every_registered_model_has_the_name_persistence_and_schema_it_had() -> None:
    snap = _snapshot()
    assert sorted(f"{t} v{v}" for t, v in PAYLOADS) == sorted(snap)
    for (event_type, version), model in PAYLOADS.items():
        was = snap[f"{event_type} v{version}"]
        assert model.__name__ == was["model"], event_type
        assert PERSISTENCE[event_type].value == was["persistence"], event_type
        assert model.model_json_schema() == was["schema"], event_type


def test_the_plain_tables_are_what_they_were() -> None:
    snap = _snapshot()
    ephemeral = {k.rsplit(" ", 1)[0] for k, v in snap.items() if v["persistence"] == "ephemeral"}
    assert ephemeral == EPHEMERAL_TYPES
    assert len(EPHEMERAL_TYPES) == 7
    assert DURABLE_TYPES == {t for t, _ in PAYLOADS} - EPHEMERAL_TYPES
    assert set(PERSISTENCE) == {t for t, _ in PAYLOADS}
    assert all(type(v) is EventPersistence for v in PERSISTENCE.values())
    assert payloads.payload_model("task.created") is PAYLOADS[("task.created", 1)]
    assert payloads.payload_model("task.created", 2) is None
    assert payloads.payload_model("no.such.type") is None
    assert ("no.such.type", 1) not in PAYLOADS
    assert PAYLOADS.get(("no.such.type", 1)) is None
    with pytest.raises(KeyError):
        PAYLOADS[("no.such.type", 1)]


def _classes(group: str) -> list[str]:
    tree = ast.parse((PACKAGE / f"{group}.py").read_text())
    return [n.name for n in tree.body if isinstance(n, ast.ClassDef)]


def test_every_model_of_every_group_is_public_from_its_group() -> None:
    """A model added to a group but not to its ``__all__`` (or the other way round) fails
    here, and ``PAYLOADS`` holds each model where its group defines it."""
    defined = {name: group for group in GROUPS for name in _classes(group)}
    assert len(defined) == sum(len(_classes(g)) for g in GROUPS)  # no name in two groups
    for group in GROUPS:
        module = importlib.import_module(f"air.events.payloads.{group}")
        assert set(module.__all__) == set(_classes(group)), group
    for model in PAYLOADS.values():
        assert defined[model.__name__] == model.__module__.rsplit(".", 1)[1]


def _loaded_after(code: str) -> list[str]:
    """The modules of the payload classes a fresh interpreter has created after ``code`` (and
    ``worker_result`` when ``air.contracts.worker_result`` is loaded)."""
    script = textwrap.dedent(code) + textwrap.dedent(
        """
        import sys
        from pydantic import BaseModel

        def every(cls):
            for sub in cls.__subclasses__():
                yield sub
                yield from every(sub)

        homes = {c.__module__ for c in every(BaseModel) if c.__module__.startswith("air.events.")}
        print("\\n".join(sorted(homes)))
        print("worker_result" if "air.contracts.worker_result" in sys.modules else "")
        """
    )
    done = subprocess.run(
        [sys.executable, "-P", "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_the_tables_and_the_registry_import_no_model_until_one_is_used() -> None:
    loaded = _loaded_after(
        """
        from air.events import payloads as p
        from air.events.registry import default_registry

        assert len(p.PAYLOADS) == 67 and ("task.completed", 1) in p.PAYLOADS
        assert sorted(p.PAYLOADS)[0] == ("agent.cancelled", 1)
        assert "task.completed" in p.DURABLE_TYPES and "task.progress" in p.EPHEMERAL_TYPES
        assert p.PERSISTENCE["task.completed"].value == "durable"
        registry = default_registry()
        assert registry.is_durable("task.completed") and not registry.is_durable("task.progress")
        assert len(registry.list()) == 67
        import air.events.fold, air.events.projection, air.events.store, air.events.bus
        """
    )
    assert loaded == []


def test_a_model_looked_up_imports_its_own_group_only() -> None:
    loaded = _loaded_after(
        """
        from air.events.payloads import PAYLOADS, payload_model
        from air.events.payloads.start import SessionCreatedPayload
        from air.events.registry import default_registry

        assert PAYLOADS[("task.created", 1)].__name__ == "TaskCreatedPayload"
        assert payload_model("agent.started") is default_registry().get_model("agent.started")
        assert default_registry().validate("workspace.created", 1, {}) is False
        """
    )
    assert loaded == ["air.events.payloads.start"]  # and no air.contracts.worker_result
    loaded = _loaded_after(
        """
        from air.events.registry import default_registry

        assert default_registry().get_schema("doctor.run.started", 1) is not None
        """
    )
    assert loaded == ["air.events.payloads.doctor", "air.events.payloads.start"]
    loaded = _loaded_after("from air.events.payloads.ends import TaskCompletedPayload")
    assert loaded == ["air.events.payloads.ends", "air.events.payloads.start", "worker_result"]


def _event(event_type: str, payload: dict[str, Any], version: int = 1) -> RuntimeEvent:
    return new_event(
        event_type,
        payload,
        session_id="ses_1",
        source=EventSource(kind="scheduler"),
        version=version,
    )


@pytest.mark.parametrize(
    ("event_type", "version", "payload", "kind"),
    [
        ("task.completed", 2, {"task_id": "t"}, "system_error"),
        ("no.such.type", 1, {}, "system_error"),
        ("task.completed", 1, {"task_id": "t", "surprise": 1}, "validation_error"),
        (
            "task.completed",
            1,
            {"task_id": "t", "worker_result": {"status": "?"}},
            "validation_error",
        ),
        ("doctor.run.started", 1, {}, "validation_error"),
    ],
)
def test_a_seeded_registry_refuses_what_it_refused(
    event_type: str, version: int, payload: dict[str, Any], kind: str
) -> None:
    registry = EventSchemaRegistry.seeded()
    with pytest.raises(AirException) as caught:
        registry.parse(_event(event_type, payload, version))
    assert caught.value.error.kind == kind
    assert registry.validate(event_type, version, payload) is False


def test_a_seeded_registry_takes_no_second_model_for_a_seeded_type() -> None:
    registry = EventSchemaRegistry.seeded()
    model = PAYLOADS[("doctor.run.started", 1)]
    with pytest.raises(AirException) as caught:
        registry.register("doctor.run.started", 1, model)
    assert caught.value.error.kind == "system_error"
    with pytest.raises(AirException):
        registry.register("task.progress", 2, model)  # durable v2 of an ephemeral type
    registry.register("doctor.run.started", 2, model)
    assert registry.get_model("doctor.run.started", 2) is model
    assert ("doctor.run.started", 2) in registry.list()
    parsed = registry.parse(_event("task.completed", {"task_id": "t"}))
    assert type(parsed) is PAYLOADS[("task.completed", 1)]
