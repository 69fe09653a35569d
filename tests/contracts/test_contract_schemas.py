"""Every public contract builds its schema, a late module's (IMPL-BOOT-12) with nothing else
imported first.

A model whose field is another model needs that class when pydantic builds its schema, and
pydantic resolves the (string) annotation in the defining module's namespace: a model moved to
another module without its field types, or a field type kept only under ``TYPE_CHECKING``,
fails here instead of at its first use in a run. Fresh interpreters: nothing built beforehand
by another test can hide a missing name.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

import air.contracts

CONTRACTS = Path(air.contracts.__file__).parent

LATE = [
    # the models a run builds only after its first model request, each imported where used
    "air.contracts.ipc_messages",
    "air.contracts.task_results",
    "air.contracts.doctor_report",
    "air.contracts.tool_runs",
    "air.contracts.artifact_records",
    "air.contracts.evidence_records",
    "air.contracts.permission_records",
]

SCHEMAS = """
import importlib, json, sys
from pydantic import BaseModel, TypeAdapter

out = {}
for name in sys.argv[1:]:
    module = importlib.import_module(name)
    for attr in module.__all__:
        value = getattr(module, attr)
        if isinstance(value, type) and issubclass(value, BaseModel):
            out[f"{name}.{attr}"] = value.model_json_schema()
        elif getattr(value, "__origin__", None) is not None and "Annotated" in repr(value):
            out[f"{name}.{attr}"] = TypeAdapter(value).json_schema()  # a discriminated union
print(json.dumps(out))
"""


def _modules() -> list[str]:
    names = sorted(p.stem for p in CONTRACTS.glob("*.py") if p.stem != "__init__")
    return [f"air.contracts.{n}" for n in names]


def _schemas(*modules: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", SCHEMAS, *modules], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    schemas: dict[str, object] = json.loads(done.stdout)
    return schemas


def test_every_contract_model_of_every_module_builds_its_schema() -> None:
    modules = _modules()
    assert set(LATE) <= set(modules)
    schemas = _schemas(*modules)
    models = {
        f"{m}.{n}"
        for m in modules
        for n in _all(m)
        if isinstance(v := getattr(importlib.import_module(m), n), type)
        and issubclass(v, BaseModel)
    }
    assert len(models) > 100
    assert models <= schemas.keys()
    assert "air.contracts.ipc_messages.ControlPayload" in schemas
    assert "air.contracts.provider.ProviderStreamEvent" in schemas


@pytest.mark.slow
def test_a_late_module_s_models_build_with_nothing_else_imported_first() -> None:
    for module in LATE:
        assert _schemas(module), module


def test_the_task_outcome_builds_its_schema_from_its_own_module() -> None:
    from air.supervision import task_outcome

    assert "TaskOutcome" in task_outcome.__all__
    assert task_outcome.TaskOutcome.model_json_schema()["properties"]["result"]


def _all(module: str) -> list[str]:
    return list(importlib.import_module(module).__all__)
