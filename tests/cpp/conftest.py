"""Shared by the tests of the cpp.* tools: the example project and a tools ``Env`` holding a
copy of it with the cpp.* tools registered (``cpp_env``)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from air.tools.cpp import register_cpp_tools
from tests.tools.conftest import Env

EXAMPLE = Path(__file__).parents[2] / "examples" / "cpp-stats"


@pytest.fixture
def cpp_env(tmp_path: Path) -> Iterator[Env]:
    made = Env(tmp_path)
    shutil.copytree(EXAMPLE, made.root, dirs_exist_ok=True, ignore=shutil.ignore_patterns("build"))
    register_cpp_tools(made.registry, made.runner)
    yield made
    made.close()
