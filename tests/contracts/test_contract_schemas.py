"""Every public contract builds its schema, and the names moved to a late module (IMPL-BOOT-12)
are still public, and the same objects, where they were.

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

LATE_HOMES = {
    # the module a name is public from -> the module that holds it
    "air.contracts.ipc": "air.contracts.ipc_messages",
    "air.contracts.task": "air.contracts.task_results",
    "air.contracts.platform": "air.contracts.doctor_report",
    "air.contracts.tool": "air.contracts.tool_runs",
    "air.contracts.artifact": "air.contracts.artifact_records",
    "air.contracts.evidence": "air.contracts.evidence_records",
    "air.contracts.permission": "air.contracts.permission_records",
}

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
    names = sorted(p.stem for p in CONTRACTS.glob("*.py") if p.stem not in ("__init__", "exports"))
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
    assert set(LATE_HOMES.values()) <= set(modules)
    schemas = _schemas(*modules)
    models = {
        f"{m}.{n}"
        for m in modules
        for n in _all(m)
        if isinstance(v := getattr(importlib.import_module(m), n), type)
        and issubclass(v, BaseModel)
    }
    assert len(models) > 100  # (the late modules' names twice: public home and holder)
    assert models <= schemas.keys()
    assert "air.contracts.ipc.ControlPayload" in schemas
    assert "air.contracts.provider.ProviderStreamEvent" in schemas


@pytest.mark.slow
def test_a_late_module_s_models_build_with_nothing_else_imported_first() -> None:
    # the module a run imports first when it needs one of them: the public home
    for home, holder in LATE_HOMES.items():
        built = {key.rsplit(".", 1)[1] for key in _schemas(holder)}
        assert built, holder
        assert _schemas(home).keys() >= {f"{home}.{n}" for n in built}, home


def test_a_moved_name_is_public_from_its_home_and_the_same_object() -> None:
    for home, holder in LATE_HOMES.items():
        public = importlib.import_module(home)
        moved = importlib.import_module(holder)
        assert set(moved.__all__) == set(public._LATE), home
        assert set(moved.__all__) <= set(public.__all__), home
        for name in moved.__all__:
            assert getattr(public, name) is getattr(moved, name), (home, name)
            assert getattr(air.contracts, name) is getattr(moved, name), name


def test_a_name_no_module_has_is_still_an_attribute_error() -> None:
    for home in LATE_HOMES:
        module = importlib.import_module(home)
        with pytest.raises(AttributeError, match=home):
            module.NoSuchContract  # noqa: B018


def test_the_nursery_s_task_outcome_is_public_from_the_seam() -> None:
    from air.nursery import seams, task_outcome

    assert seams.TaskOutcome is task_outcome.TaskOutcome
    assert "TaskOutcome" in seams.__all__
    assert seams.TaskOutcome.model_json_schema()["properties"]["result"]


def _is_model(module: str, name: str) -> bool:
    value = getattr(importlib.import_module(module), name)
    return isinstance(value, type) and issubclass(value, BaseModel)


def _all(module: str) -> list[str]:
    return list(importlib.import_module(module).__all__)
