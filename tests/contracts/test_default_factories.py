"""No pydantic model of air takes a builtin as a field's ``default_factory`` (IMPL-BOOT-15).

Building a field's schema, pydantic calls ``inspect.signature`` on its factory to learn whether it
takes the validated data; for ``list`` and ``tuple`` that parses their text signature each time
(~95 us a field, 25 fields before the first request). ``air.contracts.ids.empty_list`` answers
at once. The check runs over every model of every air module."""

from __future__ import annotations

import importlib
import pkgutil

from pydantic import BaseModel

import air
from air.contracts.ids import empty_list

SLOW_FACTORIES = (list, tuple)
SCRIPTS = "air.testing.workers."


def _air_models() -> list[type[BaseModel]]:
    for info in pkgutil.walk_packages(air.__path__, "air."):
        # scripts, not modules: a worker's entry point and the fake workers
        if not info.name.endswith("__main__") and not info.name.startswith(SCRIPTS):
            importlib.import_module(info.name)
    seen: list[type[BaseModel]] = []
    stack = list(BaseModel.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls.__module__.startswith("air.") and cls not in seen:
            seen.append(cls)
    return seen


def test_no_air_model_field_has_a_builtin_default_factory() -> None:
    models = _air_models()
    assert len(models) > 150
    slow = [
        f"{cls.__module__}.{cls.__qualname__}.{name}"
        for cls in models
        for name, field in cls.model_fields.items()
        if field.default_factory in SLOW_FACTORIES
    ]
    assert slow == []


def test_empty_list_gives_a_new_list_each_time() -> None:
    first = empty_list()
    assert first == []
    assert first is not empty_list()
