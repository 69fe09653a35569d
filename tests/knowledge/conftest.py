"""The knowledge tests write learned rule files, and air's own write of one re-records the
project's trust (IMPL-TRUST-1) in ``$HOME/.air/trust.json``: every test here gets its own HOME
(the forkserver children of the crash test inherit it)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
