"""What ``air init`` (and every first run, which makes the project) writes into a cloned
repository is written there, never through a link the repository ships.

Found: a repository holding ``.air/shared/permissions.yaml``, ``.air/shared/rules/
project-rules.md`` and ``.gitignore`` as links to paths outside it (dangling: a file the user
does not have yet, ``~/.bash_profile``, a cron file) had ``air init`` create each of those files
with air's stub text, and a ``.gitignore`` linked to an existing file had ``.air/local/``
appended to it. Now air's own files are made with ``O_EXCL | O_NOFOLLOW``: a link there is kept
as it is (the trust scan refuses one leading out, naming it), and a linked ``.gitignore`` is
left alone, as git itself leaves it. As root and as ``nobody``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.gitrepo import git, init_repo
from tests.headless import REVIEW_BATCH
from tests.tools.sandbox_probe import NOBODY, chown_tree, unprivileged_dir
from tests.trust.calc_runs import air_as


def _clone(tmp: Path, outside: Path) -> Path:
    """A cloned repository whose air files and ``.gitignore`` are links to ``outside``."""
    origin = tmp / "origin"
    shared = origin / ".air" / "shared"
    (shared / "rules").mkdir(parents=True)
    (shared / "permissions.yaml").symlink_to(outside / "made-permissions")
    (shared / "rules" / "project-rules.md").symlink_to(outside / "made-rules")
    (origin / ".gitignore").symlink_to(outside / "profile")
    (origin / "notes.txt").write_text("ship it\n")
    (origin / "batch.yaml").write_text(REVIEW_BATCH)
    init_repo(origin, message="start")
    clone = tmp / "clone"
    git(tmp, "clone", "-q", str(origin), str(clone))
    return clone


@pytest.mark.parametrize("user", [None, NOBODY], ids=["root", "nobody"])
def test_init_writes_through_no_link_a_repository_ships(tmp_path: Path, user: int | None) -> None:
    top = tmp_path if user is None else unprivileged_dir()
    outside, home = top / "outside", top / "home"
    outside.mkdir()
    home.mkdir()
    profile = outside / "profile"
    profile.write_text("export PATH=$HOME/bin:$PATH\n")  # an existing file the link names
    clone = _clone(top, outside)
    if user is not None:
        chown_tree(top)
    done = air_as(clone, home, "init", ".", user=user)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in outside.iterdir()) == ["profile"]  # nothing made there
    assert profile.read_text() == "export PATH=$HOME/bin:$PATH\n"  # nothing appended
    assert (clone / ".air" / "shared" / "project.json").is_file()  # the project itself is made
    assert os.readlink(clone / ".air" / "shared" / "permissions.yaml") == str(
        outside / "made-permissions"
    )
    # the next run names the link rather than reading through it
    done = air_as(clone, home, "run", "--headless", "batch.yaml", user=user)
    assert done.returncode == 2, done.stderr
    assert "permissions.yaml: is a symbolic link" in done.stderr
    assert sorted(p.name for p in outside.iterdir()) == ["profile"]
