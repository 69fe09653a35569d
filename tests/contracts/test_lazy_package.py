"""``air.contracts`` re-exports every contract module's public names, importing a module only
when one of its names is first asked for (IMPL-BOOT-2). Fresh interpreters."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

import air.contracts

MODULES = [
    "artifact",
    "capability",
    "error",
    "event",
    "evidence",
    "ids",
    "ipc",
    "permission",
    "platform",
    "project",
    "provider",
    "runtime",
    "task",
    "tool",
    "ui",
    "worker_result",
]


def test_every_public_name_of_every_contract_module_is_re_exported() -> None:
    assert sorted(air.contracts._MODULES) == MODULES
    for short in MODULES:
        module = importlib.import_module(f"air.contracts.{short}")
        for name in module.__all__:
            assert getattr(air.contracts, name) is getattr(module, name), (short, name)
    assert set(dir(air.contracts)) >= {n for s in MODULES for n in _all(s)}


def test_each_name_comes_from_the_first_module_that_lists_it() -> None:
    expected: dict[str, str] = {}
    for short in air.contracts._MODULES:
        for name in _all(short):
            expected.setdefault(name, short)
    assert air.contracts._HOMES == expected


def test_naming_a_contract_imports_its_own_module_only() -> None:
    probe = (
        "import json, sys\n"
        "from air.contracts import ProviderCompletionInput\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('air.contracts.'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-P", "-c", probe], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    # provider imports ids and error itself; nothing before it in _MODULES order is built
    assert json.loads(done.stdout) == [
        "air.contracts.error",
        "air.contracts.exports",
        "air.contracts.ids",
        "air.contracts.provider",
    ]


def _all(short: str) -> list[str]:
    return list(importlib.import_module(f"air.contracts.{short}").__all__)


def test_a_module_is_an_attribute_too() -> None:
    probe = "import air.contracts as c; print(c.ui.__name__, c.ids.__name__)"
    done = subprocess.run(
        [sys.executable, "-P", "-c", probe], capture_output=True, text=True, timeout=120
    )
    assert done.stdout.split() == ["air.contracts.ui", "air.contracts.ids"], done.stderr


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="NoSuchContract"):
        _ = air.contracts.NoSuchContract
    with pytest.raises(ImportError):
        exec("from air.contracts import NoSuchContract", {})


def test_a_run_that_names_no_console_contract_never_builds_them() -> None:
    probe = (
        "import json, sys\n"
        "from air.contracts import AirException, TaskSpec, ProviderCompletionInput\n"
        "import air.events.payloads\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('air.contracts.'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-P", "-c", probe], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout)
    assert "air.contracts.task" in loaded
    assert "air.contracts.provider" in loaded
    assert "air.contracts.ui" not in loaded
    # the console asks for them and gets them
    done = subprocess.run(
        [sys.executable, "-P", "-c", "from air.contracts import ProjectionSnapshot"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
