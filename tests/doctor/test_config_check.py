"""``air doctor``'s ``config`` check loads every configuration file as the run loads it.

Found: a ``~/.air/permissions.yaml`` that was no YAML made every ``air run`` exit 2 while
``air doctor`` said "no problems found"; so did ``mcp.yaml``, ``hosts.yaml``, ``sandbox.yaml``
and ``config.yaml`` (the worker slots), and a trusted project's own files.
"""

from __future__ import annotations

import os
import subprocess
import sys
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


def test_hard_limits_below_the_sandbox_limits_are_a_warning(tmp_path: Path) -> None:
    """air lowers every command's limits to the hard limits it runs under (an HPC login node's
    ``ulimit -t``; IMPL-SBX-8) without a word: a build then ended at 999 s of CPU under a
    configured 3600. The doctor names each limit that is lowered, and only those."""
    root, home, env = _project(tmp_path)
    (home / ".air" / "sandbox.yaml").write_text(
        "limits:\n  cpu_seconds: 500\n  file_size_mb: 4096\n"
    )
    healthy = air_cli(["doctor"], cwd=root, env=env, timeout=60)
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    assert (
        "  ok    sandbox.limits          1024 processes and threads, 8192 MiB of memory, "
        "4096 MiB per file written, 500 s of CPU time per process\n"
    ) in healthy.stdout
    limited = ["prlimit", "--cpu=1000:1000", f"--fsize={3 << 20}:{3 << 20}", "--"]
    done = subprocess.run(
        [*limited, sys.executable, "-m", "air.cli", "doctor"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    # 500 s of CPU is below the 1000 s hard limit: only the file size is lowered
    assert (
        "WARN  sandbox.limits: air's own hard limits are below its sandbox limits "
        "(file_size_mb 3, not 4096): every command gets the lower limit"
    ) in done.stdout
    assert "ulimit -H -a" in done.stdout
    assert "  ok    config" in done.stdout


def test_a_project_raising_a_limit_fails_the_doctor_as_it_fails_every_command(
    tmp_path: Path,
) -> None:
    """Found: a project's sandbox.yaml raising a limit widens nothing the trust scan names, so
    the doctor took the project for trusted and said "ok, 9000 s of CPU", while every command
    was refused (``untrusted_config``): limits are read as a command reads them (a project only
    lowers a limit)."""
    root, _home, env = _project(tmp_path)
    (root / ".air" / "shared" / "sandbox.yaml").write_text("limits:\n  cpu_seconds: 9000\n")
    done = air_cli(["doctor"], cwd=root, env=env, timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    assert (
        f"FAIL  config: {root}/.air/shared/sandbox.yaml raises cpu_seconds above the user's limits"
    ) in done.stdout
    assert "9000 s of CPU" not in done.stdout
    assert "  ok    sandbox.limits          not read" in done.stdout
