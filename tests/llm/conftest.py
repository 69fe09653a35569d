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


_USED: set[Path] = set()
"""The tmp dirs the llm tests made (an xdist worker's base holds other packages' too: sparse
files of GiBs among them, which read whole made this check take 12-21 s)."""


@pytest.fixture(scope="session", autouse=True)
def _no_key_in_any_tmp_dir() -> Iterator[None]:
    """After the whole llm suite: no file in any tmp dir the tests used holds the key."""
    yield
    leaked = [path for root in sorted(_USED) for path in scan_for_key(root)]
    assert leaked == [], f"planted key written to {leaked}"


@pytest.fixture(autouse=True)
def _note_tmp_dirs(
    _no_key_in_any_tmp_dir: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """Each tmp dir made while an llm test ran is one the key scan reads."""
    base = tmp_path_factory.getbasetemp()
    before = set(base.iterdir())
    yield
    _USED.update(path for path in set(base.iterdir()) - before if not path.is_symlink())


@pytest.fixture
def server() -> Iterator[LocalServer]:
    """A strict server (both wire formats) that accepts only the planted key; a test ends
    with 0 rejected requests unless it says otherwise."""
    with LocalServer(api_key=FAKE_KEY) as srv:
        yield srv
