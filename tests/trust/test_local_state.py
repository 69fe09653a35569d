"""A project that brings its own ``.air/local`` (IMPL-TRUST-3): a cloned repository whose
``.air/local`` is a link, or whose commit holds files under it, is refused by every command that
would write or read air's state there, as root and as an unprivileged user, and nothing is
written through the link; the user's way out works (and a run after it keeps air's state: a
merge no longer checks the commit's ``.air/local`` out over it)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.gitrepo import git, git_stops
from tests.tools.sandbox_probe import NOBODY, chown_tree, unprivileged_dir
from tests.trust.calc_runs import EXAMPLE, RUN, air_as, session_events

PROJECT_JSON = '{"project_id": "6f1d0c1e-0000-4000-8000-000000000001", "name": "calc"}\n'


def _refused(done: subprocess.CompletedProcess[str], said: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "untrusted_config" in done.stderr, done.stderr
    assert said in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def _calc(where: Path) -> Path:
    shutil.copytree(EXAMPLE, where, ignore=shutil.ignore_patterns("__pycache__", ".air"))
    return where


@pytest.mark.parametrize("unprivileged", [False, True], ids=["root", "nobody"])
def test_a_link_where_air_keeps_its_state_is_refused_and_never_written_through(
    tmp_path: Path, unprivileged: bool
) -> None:
    base = unprivileged_dir() if unprivileged else tmp_path
    try:
        # the repository ships an air project whose .air/local links to a directory of the
        # attacker's choosing
        src = _calc(base / "src")
        victim = base / "victim"
        victim.mkdir()
        (src / ".air" / "shared").mkdir(parents=True)
        (src / ".air" / "shared" / "project.json").write_text(PROJECT_JSON)
        (src / ".air" / "local").symlink_to(victim)
        git(src, "init", "-q")
        git(src, "add", "-A")
        git(src, "commit", "-qm", "calc")
        clone = base / "clone"
        git(base, "clone", "-q", str(src), str(clone))
        assert (clone / ".air" / "local").is_symlink()
        home = base / "home"
        home.mkdir()
        # a tarball's project (no git) with a link one level down: the same refusal
        tarball = _calc(base / "tarball")
        (tarball / ".air" / "shared").mkdir(parents=True)
        (tarball / ".air" / "shared" / "project.json").write_text(PROJECT_JSON)
        (tarball / ".air" / "local").mkdir(parents=True)
        (tarball / ".air" / "local" / "backups").symlink_to(victim)
        user = None
        if unprivileged:
            chown_tree(base)
            user = NOBODY

        for args in (RUN, ("init",), ("memory", "list"), ("history",), ("resume",)):
            _refused(air_as(clone, home, *args, user=user), ".air/local is a link to")
        _refused(air_as(tarball, home, *RUN, user=user), ".air/local/backups is a link to")
        (tarball / ".air" / "local" / "backups").unlink()
        (tarball / ".air" / "local" / "quarantine").symlink_to(victim)  # made when needed
        _refused(air_as(tarball, home, "doctor", user=user), ".air/local/quarantine is a link")
        assert list(victim.iterdir()) == []  # nothing was made, written or read there

        # the way out the message gives: remove the link (the repository holds it: from the
        # index too); air makes its own directory
        refused = air_as(clone, home, *RUN, user=user)
        assert f"git -C {clone} rm -q --cached .air/local` and commit" in refused.stderr
        mine = ("-c", "safe.directory=*")  # the test's git, as root, in nobody's clone
        git(clone, *mine, "rm", "-q", "--cached", ".air/local")
        git(clone, *mine, "commit", "-qm", "air's state is not ours to ship")
        (clone / ".air" / "local").unlink()
        if unprivileged:
            chown_tree(base)  # what root's git just wrote is nobody's again
        done = air_as(clone, home, *RUN, user=user)
        assert done.returncode == 0, done.stderr
        assert (clone / ".air" / "local" / "sessions").is_dir()
        assert not (clone / ".air" / "local").is_symlink()
        assert list(victim.iterdir()) == []
    finally:
        if unprivileged:
            shutil.rmtree(base, ignore_errors=True)


def test_an_air_local_that_git_tracks_is_refused_before_a_session_or_knowledge_is_read(
    tmp_path: Path,
) -> None:
    # someone ran the batch and committed air's state: its session and knowledge databases
    src = _calc(tmp_path / "src")
    git(src, "init", "-q")
    git(src, "add", "-A")
    git(src, "commit", "-qm", "calc")
    home = tmp_path / "home"
    home.mkdir()
    assert air_as(src, home, *RUN).returncode == 0
    (src / ".air" / "local" / "debug-records.db").write_bytes(b"planted")
    # git itself refuses to add air's state now (it is a repository of its own to git,
    # keep_out_of_git_clean); a repository crafted without that, or by an older air:
    git_stops(src, "add", "-f", ".air/local")
    shutil.rmtree(src / ".air" / "local" / ".git")
    git(src, "add", "-f", ".air/local")
    git(src, "commit", "-qm", "ship the sessions")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(src), str(clone))
    shipped = session_events(clone / ".air" / "local")
    assert len(shipped) == 1

    for args in (RUN, ("resume",), ("memory", "list")):
        _refused(air_as(clone, home, *args), "the repository holds .air/local/")
    checked = air_as(clone, home, "doctor")  # doctor says so too, with the same way out
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "FAIL" in checked.stdout
    assert "tracked_state" in checked.stdout
    assert "the repository holds .air/local/" in checked.stdout
    assert f"git -C {clone} rm -r -q --cached .air/local" in checked.stdout
    assert session_events(clone / ".air" / "local") == shipped  # no session opened, none added
    assert (clone / ".air" / "local" / "debug-records.db").read_bytes() == b"planted"

    # the way out the message gives: untrack it and put it aside
    git(clone, "rm", "-r", "-q", "--cached", ".air/local")
    git(clone, "commit", "-qm", "air's state is not ours to ship")
    (clone / ".air" / "local").rename(clone / ".air" / "local.from-git")
    done = air_as(clone, home, *RUN)
    assert done.returncode == 0, done.stderr
    ours = session_events(clone / ".air" / "local")
    assert len(ours) == 1
    assert ours.keys() != shipped.keys()
