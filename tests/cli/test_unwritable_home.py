"""A run whose ``~/.air`` cannot be made or written is refused before it records anything.

Found: with ``HOME=/nonexistent`` (``nobody``'s, a service account's) ``air run -p`` recorded
its session and first task, then ended ``os_error: /nonexistent: Permission denied`` (the
machine-wide worker slots live in ``~/.air``), the session left to resume once HOME was
fixed. Now the run says what ``~/.air`` is for and how to give air one, exit 2, and no session
is made. As ``nobody`` (a HOME it cannot write) and as root (a HOME that is a file).
"""

from __future__ import annotations

from pathlib import Path

import pytest

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
