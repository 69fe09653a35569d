"""``~/.air`` is the user's alone (IMPL-HOME-1).

Found: under ``umask 000`` air made ``~/.air`` 0777 (as the parent of ``~/.air/logs``; 0775
under 002), and read ``~/.air/models.yaml`` and ``mcp.yaml`` whoever had written them: another
local user could plant a provider that receives the user's key, or a server command air runs
as the user. Now air makes ``~/.air`` 0700 and its own files 0600 whatever the umask, and
every command but the doctor (which reports it) refuses to act on a ``~/.air`` or a
configuration file in it that another user could change, as ssh refuses a ``~/.ssh/config``.
As root and as ``nobody``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gitrepo import init_repo
from tests.tools.sandbox_probe import NOBODY, chown_tree, unprivileged_dir
from tests.trust.calc_runs import air_as

OTHER_UID = 4321  # a user who is neither the one running air nor root
SHARED_GID = 100  # Debian's "users": a group other users are in


def _air_umask(root: Path, home: Path, umask: int, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "air.cli", *args],
        cwd=root,
        env={**os.environ, "HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=120,
        umask=umask,
    )


def _project(top: Path) -> tuple[Path, Path]:
    root, home = top / "proj", top / "home"
    root.mkdir()
    home.mkdir()
    (root / "notes.txt").write_text("ship it\n")
    init_repo(root, message="start")
    return root, home


@pytest.mark.parametrize("umask", [0o000, 0o002])
def test_air_makes_its_home_and_files_private_whatever_the_umask(
    tmp_path: Path, umask: int
) -> None:
    root, home = _project(tmp_path)
    for args in (("init", "."), ("trust", "--yes"), ("capability", "disable", "cpp")):
        done = _air_umask(root, home, umask, *args)
        assert done.returncode == 0, done.stderr
    air = home / ".air"
    assert air.stat().st_mode & 0o777 == 0o700
    for made in ("capabilities.json", "logs"):
        assert (air / made).stat().st_mode & 0o077 == 0, made
    done = _air_umask(root, home, umask, "history")  # the next command is not refused
    assert "untrusted_config" not in done.stderr


@pytest.mark.parametrize("user", [None, NOBODY], ids=["root", "nobody"])
def test_configuration_another_user_could_change_is_refused(
    tmp_path: Path, user: int | None
) -> None:
    top = tmp_path if user is None else unprivileged_dir()
    root, home = _project(top)
    air = home / ".air"
    air.mkdir(mode=0o700)
    marker = top / "ran"
    (air / "mcp.yaml").write_text(f"servers:\n  planted: {{command: touch, args: [{marker}]}}\n")
    if user is not None:
        chown_tree(top)
    # another user's file: refused by every command, the doctor says why
    os.chown(air / "mcp.yaml", OTHER_UID, OTHER_UID)
    for args in (("mcp", "list"), ("mcp", "tools", "planted"), ("history",)):
        done = air_as(root, home, *args, user=user)
        assert done.returncode == 2, (args, done.stderr)
        assert f"air: untrusted_config: {air}/mcp.yaml: it is owned by uid {OTHER_UID}" in (
            done.stderr
        )
        assert "what to do: Make it yours alone" in done.stderr
    assert not marker.exists()
    done = air_as(root, home, "doctor", user=user)
    assert done.returncode == 1
    assert f"bootstrap.air_private: {air}/mcp.yaml: it is owned by uid {OTHER_UID}" in done.stdout
    assert air_as(root, home, "--version", user=user).returncode == 0
    # the user's own, writable by a group others are in: refused; by every user: refused
    os.chown(air / "mcp.yaml", user or 0, SHARED_GID)
    os.chmod(air / "mcp.yaml", 0o664)
    done = air_as(root, home, "mcp", "list", user=user)
    assert f"mcp.yaml: its group (gid {SHARED_GID}) can write it" in done.stderr
    os.chmod(air / "mcp.yaml", 0o644)
    os.chmod(air, 0o777)
    done = air_as(root, home, "mcp", "list", user=user)
    assert f"{air}: every user can write it" in done.stderr
    os.chmod(air, 0o700)
    done = air_as(root, home, "mcp", "list", user=user)
    assert done.returncode == 0, done.stderr
    assert "planted" in done.stdout
    assert not marker.exists()


def test_a_users_own_private_group_may_write_it(tmp_path: Path) -> None:
    """umask 002 on a user-private-group system: the group is the user's (root's ``root``)."""
    root, home = _project(tmp_path)
    (home / ".air").mkdir(mode=0o700)
    models = home / ".air" / "models.yaml"
    models.write_text("default: none\n")
    os.chown(models, 0, 0)
    os.chmod(models, 0o664)
    done = air_as(root, home, "history")
    assert "untrusted_config" not in done.stderr, done.stderr


def test_an_mcp_login_another_user_could_change_is_named(tmp_path: Path) -> None:
    """A login file of ``air mcp login`` is configuration air acts on (the tokens it sends)."""
    from air.air_home import open_to_others

    air = tmp_path / ".air"
    (air / "mcp-auth").mkdir(parents=True, mode=0o700)
    air.chmod(0o700)
    login = air / "mcp-auth" / "0f.json"
    login.write_text("{}")
    login.chmod(0o600)
    assert open_to_others(str(air)) is None
    os.chown(login, OTHER_UID, OTHER_UID)
    assert open_to_others(str(air)) == (str(login), f"it is owned by uid {OTHER_UID}")
