"""The contracts are frozen, reject unknown fields, and AirError signatures are stable."""

from __future__ import annotations

import subprocess
import sys

import pydantic
import pytest

import air.contracts as c


def test_contracts_are_frozen_and_forbid_extra_fields() -> None:
    spec = c.TaskSpec(id="task_1", type=c.TaskType.EXECUTE, title="t", description="d")
    with pytest.raises(pydantic.ValidationError):
        spec.title = "changed"  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError):
        c.TaskSpec.model_validate(
            {"id": "task_1", "type": "execute", "title": "t", "description": "d", "bogus": 1}
        )


def test_every_exported_model_is_frozen_with_extra_forbid() -> None:
    models = [
        getattr(c, name)
        for name in dir(c)
        if isinstance(getattr(c, name), type)
        and issubclass(getattr(c, name), pydantic.BaseModel)
        and getattr(c, name) is not pydantic.BaseModel
    ]
    assert len(models) > 40
    for model in models:
        assert model.model_config.get("frozen") is True, model.__name__
        assert model.model_config.get("extra") == "forbid", model.__name__


def test_closed_enums_reject_unknown_values() -> None:
    with pytest.raises(pydantic.ValidationError):
        c.TaskSpec.model_validate(
            {"id": "task_1", "type": "deploy", "title": "t", "description": "d"}
        )
    assert {s.value for s in c.TaskStatus} == {
        "pending",
        "running",
        "completed",
        "failed",
        "blocked",
        "cancelled",
        "interrupted",
    }
    assert {a.value for a in c.AgentType} == {
        "executor",
        "reviewer",
        "debugger",
        "compactor",
        "experience_miner",
    }
    assert "main" not in {a.value for a in c.AgentType}


def test_make_air_error_defaults() -> None:
    err = c.make_air_error(kind="tool_error", message="unknown tool fs.frobnicate")
    assert err.severity == c.ErrorSeverity.ERROR
    assert err.retryability == c.Retryability.UNKNOWN
    assert err.semantic_signature.startswith("tool_error:")
    assert len(err.error_id) == 36


def test_semantic_signature_ignores_volatile_parts() -> None:
    a = c.semantic_signature_for(
        "task_failed", "task task_01JB8Y3ZQ5V6N7M8P9R0S1T2U3 exited 137 at 0x7f"
    )
    b = c.semantic_signature_for(
        "task_failed", "Task task_01JB8Y3ZQ5V6N7M8P9R0S1T2U4 exited 1  at 0x80"
    )
    other = c.semantic_signature_for("task_failed", "task could not find its workspace")
    assert a == b
    assert a != other
    assert c.semantic_signature_for("system_error", "x") != c.semantic_signature_for(
        "tool_error", "x"
    )


def test_semantic_signature_ignores_ids_that_differ_in_letters() -> None:
    # ULIDs are upper-case Crockford; the message is lower-cased before the id is replaced
    a = c.semantic_signature_for("tool_error", "agent agt_01M8S6Q9ZJA8ZGFVKV90W2VFMH lost")
    b = c.semantic_signature_for("tool_error", "agent agt_01M8S6QAAZ7XGFVKV90W2VFMKA lost")
    assert a == b
    assert c.normalize_message("agent agt_01M8S6Q9ZJA8ZGFVKV90W2VFMH lost") == "agent <id> lost"


def test_semantic_signature_is_stable_across_processes() -> None:
    code = (
        "from air.contracts import semantic_signature_for as s;"
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
        c.semantic_signature_for("provider_error", "HTTP 529 overloaded after 9 attempts")
    }


def test_air_exception_carries_the_record() -> None:
    exc = c.AirException.of(
        kind="validation_error", message="bad batch", user_action="Fix line 3 of batch.yaml."
    )
    assert exc.kind == c.ErrorKind.VALIDATION_ERROR
    assert exc.user_action == "Fix line 3 of batch.yaml."
    assert "validation_error: bad batch" in str(exc)


def test_ulids_sort_by_time_and_are_unique() -> None:
    ids = [c.new_ulid() for _ in range(200)]
    assert len(set(ids)) == 200
    assert all(len(i) == 26 for i in ids)
    assert c.new_id("art").startswith("art_")


def test_every_exported_model_builds_its_schema() -> None:
    built = 0
    for name in dir(c):
        obj = getattr(c, name)
        if isinstance(obj, type) and issubclass(obj, pydantic.BaseModel):
            if obj is pydantic.BaseModel:
                continue
            schema = obj.model_json_schema()
            assert schema.get("type") == "object" or "$defs" in schema or "properties" in schema
            built += 1
    assert built > 60
