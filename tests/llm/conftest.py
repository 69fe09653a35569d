"""Fixtures for provider tests: a local server per test and a manager configured against it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.llm.servers import LocalServer

FAKE_KEY = "sk-planted-FAKE-KEY-0123456789abcdef"
"""Planted credential: no file air writes during the tests may contain it."""


def scan_for_key(root: Path) -> list[Path]:
    """Every file under ``root`` whose bytes contain the planted key."""
    needle = FAKE_KEY.encode()
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


@pytest.fixture(scope="session", autouse=True)
def _no_key_in_any_tmp_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """After the whole llm suite: no file in any tmp dir the tests used holds the key."""
    yield
    leaked = scan_for_key(tmp_path_factory.getbasetemp())
    assert leaked == [], f"planted key written to {leaked}"


@pytest.fixture
def server() -> Iterator[LocalServer]:
    """A strict server (both wire formats) that accepts only the planted key; a test ends
    with 0 rejected requests unless it says otherwise."""
    with LocalServer(api_key=FAKE_KEY) as srv:
        yield srv
