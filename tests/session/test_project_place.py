"""The user's home directory, and any directory above it, is no project's place.

Found trying air as a new user from the home directory: ``air init`` there made ``~/.air/shared``
and ``~/.air/local`` beside air's own settings (``~/.air/models.yaml``, ``trust.json``) and a
``~/.gitignore``; a headless batch there took the whole home as the project (every writer in a
folder without git copies the project into its workspace: the home's keys and tokens, its
caches); and from then on every folder below the home without a project of its own found the
home's by walking up, so a run in ``~/code/new`` worked on the whole home. Now the home and
what is above it are refused with what to do, and the walk up stops below the home.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from air.contracts.error import AirException
from air.session.project import ProjectStore
from tests.forked_air import air_cli

BATCH = "version: 1\ntasks:\n  - id: a\n    title: do it\n"


def _env(home: Path) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    return {**keep, "HOME": str(home), "ANTHROPIC_API_KEY": "k-never-used"}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "users" / "ann"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    (home / "batch.yaml").write_text(BATCH)
    return home


def _made_nothing(root: Path) -> None:
    assert not (root / ".air" / "shared").exists()
    assert not (root / ".air" / "local").exists()
    assert not (root / ".gitignore").exists()


def _home_refused(done: subprocess.CompletedProcess[str], home: Path) -> None:
    assert done.returncode == 2, done
    assert f"{home} is your home directory: air does not take it as a project" in done.stderr
    assert "Run air in a project's own folder (cd into it, or pass --project PATH)" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("args", [["init"], ["run", "--headless", "batch.yaml"]], ids=str)
def test_the_home_directory_is_refused_as_a_project(home: Path, args: list[str]) -> None:
    _home_refused(air_cli(args, cwd=home, env=_env(home)), home)
    _made_nothing(home)


def _earlier_airs_project(home: Path) -> None:
    """What ``air init ~`` made before this check: a project.json in the home."""
    (home / ".air" / "shared").mkdir(parents=True)
    (home / ".air" / "shared" / "project.json").write_text('{"project_id": "p-home"}\n')


@pytest.mark.parametrize(
    "args", [["history"], ["doctor"], ["status"], ["session", "list"]], ids=str
)
def test_an_earlier_airs_project_in_the_home_is_refused_by_every_reader(
    home: Path, args: list[str]
) -> None:
    _earlier_airs_project(home)
    _home_refused(air_cli(args, cwd=home, env=_env(home)), home)
    assert not (home / ".air" / "local").exists()


@pytest.mark.parametrize("args", [["init", "{above}"], ["run", "--headless", "{batch}"]])
def test_a_directory_above_the_home_is_refused(home: Path, args: list[str]) -> None:
    above = home.parent.parent
    argv = [a.format(above=above, batch=home / "batch.yaml") for a in args]
    done = air_cli(argv, cwd=above, env=_env(home))
    assert done.returncode == 2, done
    assert f"{above} is above your home directory ({home})" in done.stderr
    _made_nothing(above)


def test_a_home_an_earlier_air_made_a_project_is_no_folders_project(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A project.json in the home (an earlier air's ``air init ~``) is never found from a folder
    below it; a folder there becomes a project of its own."""
    _earlier_airs_project(home)
    below = home / "code" / "new"
    below.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    assert ProjectStore().locate(below) is None
    with pytest.raises(AirException) as raised:
        ProjectStore().open(home)
    assert raised.value.error.kind == "validation_error"
    listed = air_cli(["history"], cwd=below, env=_env(home))
    assert listed.returncode == 2
    assert f"no air project at or above {below}" in listed.stderr
    made = air_cli(["init"], cwd=below, env=_env(home))
    assert made.returncode == 0, made
    assert f"initialised air project 'new' in {below}" in made.stdout
    found = ProjectStore().locate(below)
    assert found is not None
    assert found.project_root == str(below)


def test_a_project_below_the_home_is_a_project(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(home))
    (home / "code" / "deep").mkdir(parents=True)
    project = ProjectStore().initialize(home / "code")
    assert project.project_root == str(home / "code")
    found = ProjectStore().locate(home / "code" / "deep")
    assert found is not None
    assert found.project_id == project.project_id
