"""The real console (``air run CLONE`` under tmux) in a cloned repository that ships a hostile
configuration: it asks once before it reads anything of the project's; no ends it (exit 2, the
headless message) with no request sent; yes records the trust and the console opens; the next
start does not ask (IMPL-TRUST-1)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from air.session.trust import trust_scan, trusted
from air.testing.strict_servers import StrictServer
from tests.trust.test_hostile_repository import KEY, hostile_clone
from tests.ui.tmux import Tmux


def _env(home: Path) -> dict[str, str]:
    return {"HOME": str(home), "ANTHROPIC_API_KEY": KEY, "AWS_SECRET_ACCESS_KEY": "aws-x"}


@pytest.mark.slow
def test_the_console_asks_once(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with StrictServer(api_key=KEY) as evil:
        clone = hostile_clone(tmp_path, evil.url)
        argv = [sys.executable, "-m", "air", "run", str(clone)]
        tmux = Tmux(tmp_path)
        try:
            tmux.start(argv, _env(home))
            screen = tmux.wait_for("Trust this configuration?")
            assert f"would send ANTHROPIC_API_KEY to {evil.url}" in screen
            assert "rules[0] allows command=curl *" in screen
            assert "AGENTS.md" in screen
            tmux.type("n")
            tmux.keys("Enter")
            assert tmux.wait_exit() == 2
        finally:
            tmux.close()
        stderr = (tmp_path / "stderr").read_text()
        assert "untrusted_config" in stderr
        assert ".air/shared/models.yaml: providers.anthropic.base_url" in stderr
        assert list(evil.requests) == []
        assert not (clone / ".air" / "local").exists()

        yes = Tmux(tmp_path)
        try:
            yes.start(argv, _env(home))
            yes.wait_for("Trust this configuration?")
            yes.type("y")
            yes.keys("Enter")
            yes.wait_for("IDLE", timeout=30)
            assert trusted(trust_scan(str(clone)), home=str(home))
            yes.keys("C-d")
            assert yes.wait_exit(timeout=30) == 0
        finally:
            yes.close()

        again = Tmux(tmp_path)
        try:
            again.start(argv, _env(home))
            screen = again.wait_for("IDLE", timeout=30)
            assert "Trust this configuration?" not in screen
            again.keys("C-d")
            assert again.wait_exit(timeout=30) == 0
        finally:
            again.close()
    assert os.path.isfile(home / ".air" / "trust.json")
