"""A project's ``.air/local`` is its owner's alone. Found: it was made with the umask's mode
(0755, its session databases 0644), so on a shared machine (a cluster's login node, a team's
build box) any user who could enter the project read every conversation, command output and
knowledge record, and the backups: a snapshot before a task holds the project's ignored files,
so a ``.env`` the user kept at 0600 was there for all to read. Now ``.air/local`` is made 0700,
an older air's is closed when air opens the project, and another user's is left as it is.
Checked as root and as an unprivileged user (``nobody``)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from air.session.local_owner import claim_local_state, keep_private
from air.session.project import ProjectStore
from tests.forked_air import air_cli
from tests.tools.sandbox_probe import unprivileged_dir, unprivileged_python
from tests.trust.calc_runs import air_as

NOBODY = 65534


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def shared_base() -> Iterator[Path]:
    """A directory every user can enter (pytest's own is its owner's alone)."""
    base = Path(tempfile.mkdtemp(prefix="air-private-", dir="/tmp"))
    base.chmod(0o755)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o000])
def test_a_new_projects_local_state_is_its_owners_alone(tmp_path: Path, umask: int) -> None:
    old = os.umask(umask)
    try:
        root = tmp_path / "proj"
        root.mkdir()
        ProjectStore().initialize(root)
    finally:
        os.umask(old)
    assert _mode(root / ".air" / "local") == 0o700
    assert _mode(root / ".air" / "shared") == 0o777 & ~umask  # the project's, as the user has it


def test_an_older_airs_open_local_state_is_closed_when_the_project_opens(tmp_path: Path) -> None:
    ProjectStore().initialize(tmp_path)
    local = tmp_path / ".air" / "local"
    local.chmod(0o755)
    ProjectStore().open(tmp_path)
    assert _mode(local) == 0o700


def test_another_users_local_state_is_left_as_it_is(tmp_path: Path) -> None:
    local = tmp_path / "local"
    local.mkdir(mode=0o755)
    os.chown(local, NOBODY, NOBODY)
    keep_private(str(local), os.lstat(local))
    assert _mode(local) == 0o755


def _read_as_nobody(paths: list[Path]) -> list[str]:
    """What ``nobody`` could read of ``paths`` (the ones it could)."""
    code = (
        "import sys\n"
        "for p in sys.argv[1:]:\n"
        "    try:\n"
        "        open(p, 'rb').read(1)\n"
        "        print(p)\n"
        "    except OSError:\n"
        "        pass\n"
    )
    done = subprocess.run(
        [unprivileged_python(), "-I", "-c", code, *map(str, paths)],
        capture_output=True,
        text=True,
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
        timeout=60,
        check=True,
    )
    return done.stdout.split()


def test_another_user_reads_nothing_a_session_recorded(shared_base: Path) -> None:
    home = shared_base / "home"
    home.mkdir()
    done = air_cli(
        ["demo", "--dir", str(shared_base / "demo")],
        cwd=shared_base,
        env={**os.environ, "HOME": str(home)},
    )
    assert done.returncode == 0, done.stderr
    (project,) = [p.parent.parent for p in (shared_base / "demo").glob("*/.air/local")]
    recorded = [p for p in (project / ".air" / "local").rglob("*") if p.is_file()]
    assert any(p.name == "session.db" for p in recorded)
    shared_files = [project / ".air" / "shared" / "project.json", project / "mathx.py"]
    assert _read_as_nobody(shared_files) == [str(p) for p in shared_files]  # it can reach it
    assert _read_as_nobody(recorded) == []


def test_an_unprivileged_users_project_is_theirs_alone() -> None:
    base = unprivileged_dir()
    try:
        home, root = base / "home", base / "proj"
        for made in (home, root):
            made.mkdir()
            os.chown(made, NOBODY, NOBODY)
        done = air_as(root, home, "init", user=NOBODY)
        assert done.returncode == 0, done.stderr
        local = root / ".air" / "local"
        assert os.lstat(local).st_uid == NOBODY
        assert _mode(local) == 0o700
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_file_system_without_unix_modes_still_opens_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vfat, an SMB share: chmod and a directory named .git refused (EPERM), the project opens
    as before, with neither."""
    ProjectStore().initialize(tmp_path)
    local = tmp_path / ".air" / "local"
    shutil.rmtree(local / ".git")
    local.chmod(0o755)

    def refused(*args: object, **kwargs: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "fchmod", refused)
    real_mkdir = os.mkdir

    def no_git_dir(path: str, *args: object, **kwargs: object) -> None:
        if str(path).endswith(".git"):
            refused()
        real_mkdir(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "mkdir", no_git_dir)
    claim_local_state(str(tmp_path))  # what the runtime, air memory and air restore do first
    assert _mode(local) == 0o755
    assert not (local / ".git").exists()
