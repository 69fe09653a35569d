"""The contracts are frozen, reject unknown fields, and AirError signatures are stable."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import pydantic
import pytest

import air.contracts
from air.contracts.error import (
    AirException,
    ErrorKind,
    ErrorSeverity,
    Retryability,
    make_air_error,
    normalize_message,
    semantic_signature_for,
)
from air.contracts.ids import new_id, new_ulid
from air.contracts.runtime import AgentType
from air.contracts.task import TaskSpec, TaskStatus, TaskType


def test_contracts_are_frozen_and_forbid_extra_fields() -> None:
    spec = TaskSpec(id="task_1", type=TaskType.EXECUTE, title="t", description="d")
    with pytest.raises(pydantic.ValidationError):
        spec.title = "changed"  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError):
        TaskSpec.model_validate(
            {"id": "task_1", "type": "execute", "title": "t", "description": "d", "bogus": 1}
        )


def test_every_exported_model_is_frozen_with_extra_forbid() -> None:
    models = _exported_models()
    assert len(models) > 40
    for model in models:
        assert model.model_config.get("frozen") is True, model.__name__
        assert model.model_config.get("extra") == "forbid", model.__name__


def test_closed_enums_reject_unknown_values() -> None:
    with pytest.raises(pydantic.ValidationError):
        TaskSpec.model_validate(
            {"id": "task_1", "type": "deploy", "title": "t", "description": "d"}
        )
    assert {s.value for s in TaskStatus} == {
        "pending",
        "running",
        "completed",
        "failed",
        "blocked",
        "cancelled",
        "interrupted",
    }
    assert {a.value for a in AgentType} == {
        "executor",
        "reviewer",
        "debugger",
        "compactor",
        "experience_miner",
    }
    assert "main" not in {a.value for a in AgentType}


def test_make_air_error_defaults() -> None:
    err = make_air_error(kind="tool_error", message="unknown tool fs.frobnicate")
    assert err.severity == ErrorSeverity.ERROR
    assert err.retryability == Retryability.UNKNOWN
    assert err.semantic_signature.startswith("tool_error:")
    assert len(err.error_id) == 36


def test_semantic_signature_ignores_volatile_parts() -> None:
    a = semantic_signature_for(
        "task_failed", "task task_01JB8Y3ZQ5V6N7M8P9R0S1T2U3 exited 137 at 0x7f"
    )
    b = semantic_signature_for(
        "task_failed", "Task task_01JB8Y3ZQ5V6N7M8P9R0S1T2U4 exited 1  at 0x80"
    )
    other = semantic_signature_for("task_failed", "task could not find its workspace")
    assert a == b
    assert a != other
    assert semantic_signature_for("system_error", "x") != semantic_signature_for("tool_error", "x")


def test_semantic_signature_ignores_ids_that_differ_in_letters() -> None:
    # ULIDs are upper-case Crockford; the message is lower-cased before the id is replaced
    a = semantic_signature_for("tool_error", "agent agt_01M8S6Q9ZJA8ZGFVKV90W2VFMH lost")
    b = semantic_signature_for("tool_error", "agent agt_01M8S6QAAZ7XGFVKV90W2VFMKA lost")
    assert a == b
    assert normalize_message("agent agt_01M8S6Q9ZJA8ZGFVKV90W2VFMH lost") == "agent <id> lost"


def test_semantic_signature_is_stable_across_processes() -> None:
    code = (
        "from air.contracts.error import semantic_signature_for as s;"
        "print(s('provider_error', 'HTTP 529 overloaded after 3 attempts'))"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout.strip()
        for _ in range(2)
    }
    assert len(outputs) == 1
    assert outputs == {
        semantic_signature_for("provider_error", "HTTP 529 overloaded after 9 attempts")
    }


def test_air_exception_carries_the_record() -> None:
    exc = AirException.of(
        kind="validation_error", message="bad batch", user_action="Fix line 3 of batch.yaml."
    )
    assert exc.kind == ErrorKind.VALIDATION_ERROR
    assert exc.user_action == "Fix line 3 of batch.yaml."
    assert "validation_error: bad batch" in str(exc)


def test_ulids_sort_by_time_and_are_unique() -> None:
    ids = [new_ulid() for _ in range(200)]
    assert len(set(ids)) == 200
    assert all(len(i) == 26 for i in ids)
    assert new_id("art").startswith("art_")


def test_every_exported_model_builds_its_schema() -> None:
    built = 0
    for model in _exported_models():
        schema = model.model_json_schema()
        assert schema.get("type") == "object" or "$defs" in schema or "properties" in schema
        built += 1
    assert built > 60


def _exported_models() -> list[type[pydantic.BaseModel]]:
    """The models in the ``__all__`` of every contract module."""
    models: list[type[pydantic.BaseModel]] = []
    for info in pkgutil.iter_modules(air.contracts.__path__):
        module = importlib.import_module(f"air.contracts.{info.name}")
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if isinstance(obj, type) and issubclass(obj, pydantic.BaseModel):
                models.append(obj)
    return models
