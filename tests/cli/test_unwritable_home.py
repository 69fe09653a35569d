"""A run whose ``~/.air`` cannot be made or written is refused before it records anything.

Found: with ``HOME=/nonexistent`` (``nobody``'s, a service account's) ``air run -p`` recorded
its session and first task, then ended ``os_error: /nonexistent: Permission denied`` (the
machine-wide worker slots live in ``~/.air``), the session left to resume once HOME was
fixed. Now the run says what ``~/.air`` is for and how to give air one, exit 2, and no session
is made. As ``nobody`` (a HOME it cannot write) and as root (a HOME that is a file).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.forked_air import air_cli
from tests.gitrepo import init_repo
from tests.headless import REVIEW_BATCH
from tests.tools.sandbox_probe import NOBODY, chown_tree, unprivileged_dir
from tests.trust.calc_runs import air_as


@pytest.mark.parametrize("user", [None, NOBODY], ids=["root-home-a-file", "nobody-no-home"])
def test_a_run_without_a_usable_air_home_is_refused_before_its_session(
    tmp_path: Path, user: int | None
) -> None:
    top = tmp_path if user is None else unprivileged_dir()
    root = top / "proj"
    root.mkdir()
    (root / "batch.yaml").write_text(REVIEW_BATCH)
    (root / "notes.txt").write_text("ship it\n")
    init_repo(root, message="start")
    if user is None:
        home = top / "home-file"
        home.write_text("not a directory\n")
    else:
        home = Path("/nonexistent")  # nobody's own, in /etc/passwd
        chown_tree(top)
    for args in (("run", "--headless", "batch.yaml"), ("run", "-p", "say hi")):
        done = air_as(root, home, *args, user=user)
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr
        assert "air: environment_error: air keeps what all projects share" in done.stderr
        assert f"in {home}/.air (HOME={home}), and cannot use it" in done.stderr
        assert "what to do: Set HOME to a directory you can write" in done.stderr
    assert not list(root.glob(".air/local/sessions/*/session.db"))  # nothing recorded


@pytest.mark.parametrize("home", ["", "rel/home"], ids=["empty", "relative"])
def test_an_empty_or_relative_home_is_refused_and_nothing_lands_here(
    tmp_path: Path, home: str
) -> None:
    """``HOME=`` is ``/`` to Python (air made ``/.air``); a relative HOME put ``.air/logs``
    where air was started (the project)."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "notes.txt").write_text("ship it\n")
    init_repo(root, message="start")
    done = air_cli(["run", "-p", "say hi"], cwd=root, env={**os.environ, "HOME": home})
    assert done.returncode == 2, done.stderr
    assert f"(HOME={home!r}), and cannot use it: HOME is not an absolute path" in done.stderr
    assert not (root / "rel").exists()
    assert not list(root.glob(".air/local/sessions/*/session.db"))
