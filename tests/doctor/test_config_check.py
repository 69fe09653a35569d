"""``air doctor``'s ``config`` check loads every configuration file as the run loads it.

Found: a ``~/.air/permissions.yaml`` that was no YAML made every ``air run`` exit 2 while
``air doctor`` said "no problems found"; so did ``mcp.yaml``, ``hosts.yaml``, ``sandbox.yaml``
and ``config.yaml`` (the worker slots), and a trusted project's own files.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.forked_air import air_cli
from tests.gitrepo import init_repo

BROKEN = "a: [\n"  # a flow sequence never closed


def _project(top: Path) -> tuple[Path, Path, dict[str, str]]:
    root, home = top / "proj", top / "home"
    root.mkdir()
    (home / ".air").mkdir(parents=True)
    (root / "notes.txt").write_text("ship it\n")
    env = {**os.environ, "HOME": str(home)}
    env.pop("AIR_WORKER_SLOTS", None)  # set for the suite: config.yaml is read without it
    assert air_cli(["init", "."], cwd=root, env=env).returncode == 0
    init_repo(root, message="start")
    return root, home, env


@pytest.mark.parametrize(
    "name", ["permissions.yaml", "mcp.yaml", "hosts.yaml", "sandbox.yaml", "config.yaml"]
)
def test_a_broken_file_in_air_home_is_a_blocking_problem(tmp_path: Path, name: str) -> None:
    root, home, env = _project(tmp_path)
    healthy = air_cli(["doctor"], cwd=root, env=env, timeout=60)
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    assert "  ok    config" in healthy.stdout
    (home / ".air" / name).write_text(BROKEN)
    doctor = air_cli(["doctor"], cwd=root, env=env, timeout=60)
    assert doctor.returncode == 1, doctor.stdout + doctor.stderr
    assert f"FAIL  config: {home}/.air/{name}" in doctor.stdout + doctor.stderr


def test_a_trusted_projects_broken_permissions_are_a_blocking_problem(tmp_path: Path) -> None:
    root, _home, env = _project(tmp_path)
    (root / ".air" / "shared" / "permissions.yaml").write_text(BROKEN)
    doctor = air_cli(["doctor"], cwd=root, env=env, timeout=60)
    assert doctor.returncode == 1, doctor.stdout + doctor.stderr
    assert f"FAIL  config: {root}/.air/shared/permissions.yaml" in doctor.stdout + doctor.stderr
    run = air_cli(["run", "-p", "hi", "--headless"], cwd=root, env=env, timeout=60)
    assert run.returncode == 2  # what the doctor said is what the run refuses
    assert f"{root}/.air/shared/permissions.yaml" in run.stderr


@pytest.mark.parametrize(
    "text",
    ["{", '{"project_id": ' + "[" * 100_000 + "]" * 100_000 + "}"],
    ids=["not-json", "100000-deep"],  # a test's id reaches its children's environment
)
def test_a_project_file_no_command_reads_is_a_finding_not_a_refusal(
    tmp_path: Path, text: str
) -> None:
    """Every command refuses a project whose ``.air/shared/project.json`` does not read (exit
    2, ``config_error``); ``air doctor``, which a user runs when something is broken, did the
    same instead of checking the rest and saying what is wrong with it."""
    root, _home, env = _project(tmp_path)
    (root / ".air" / "shared" / "project.json").write_text(text)
    assert air_cli(["history"], cwd=root, env=env, timeout=60).returncode == 2
    done = air_cli(["doctor"], cwd=root, env=env, timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "FAIL  project: " in done.stdout
    assert "project.json is not a valid project file" in done.stdout
    assert "  ok    config" in done.stdout  # the other checks still ran
