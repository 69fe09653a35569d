"""``--branch NAME`` (issue 26 item 5): a run's merges land on a branch of its own, made from
HEAD and checked out first; the branch the user was on is not touched. Real git, a real
headless run replaying a cassette."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.forked_air import air_cli
from tests.gitrepo import git, init_repo
from tests.headless import write_file_cassette

AIR_RUN = ("run", "--headless", "batch.yaml")


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / ".gitignore").write_text(".air/\nbatch.yaml\ncas/\n")
    (root / "a.txt").write_text("one\n")
    init_repo(root, message="init")
    (root / "cas").mkdir()
    write_file_cassette(root / "cas" / "w.jsonl", "out.txt", "hello\n", "wrote")
    (root / "batch.yaml").write_text(
        "tasks:\n  - id: w\n    title: Write\n    scope: {write_area: [out.txt]}\n"
    )
    return root


def _run(root: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return air_cli(
        [*AIR_RUN, "--cassette", "cas", "--isolation", "worktree", *extra],
        cwd=root,
        timeout=180,
    )


@pytest.mark.slow
def test_the_run_s_merges_land_on_its_branch_and_main_is_untouched(tmp_path: Path) -> None:
    root = _project(tmp_path)
    before = git(root, "rev-parse", "main")
    done = _run(root, "--branch", "air-run-1")
    assert done.returncode == 0, done.stderr
    assert "merges land on branch air-run-1" in done.stderr
    assert git(root, "branch", "--show-current") == "air-run-1"
    assert git(root, "rev-parse", "main") == before  # the user's branch did not move
    assert git(root, "show", "air-run-1:out.txt") == "hello"
    assert git(root, "rev-parse", "air-run-1^1") == before
    # a second run on the same branch continues it
    (root / "cas" / "w.jsonl").write_text((root / "cas" / "w.jsonl").read_text())
    git(root, "switch", "-q", "main")
    again = _run(root, "--branch", "air-run-1")
    assert again.returncode == 0, again.stderr
    assert git(root, "branch", "--show-current") == "air-run-1"


@pytest.mark.parametrize(
    ("name", "why"),
    [("a..b", "not a branch name"), ("-x", "not a branch name"), ("air/ws/x", "not a branch")],
)
def test_a_bad_branch_name_is_refused_before_anything_is_created(
    tmp_path: Path, name: str, why: str
) -> None:
    root = _project(tmp_path)
    done = _run(root, f"--branch={name}")
    assert done.returncode == 2, done.stderr
    assert why in done.stderr
    assert "Traceback" not in done.stderr
    assert git(root, "branch", "--show-current") == "main"
    assert not (root / ".air" / "local" / "sessions").exists()


def test_branch_outside_a_repository_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    (root / "batch.yaml").write_text("tasks:\n  - id: w\n    title: Write\n")
    done = air_cli([*AIR_RUN, "--branch", "x"], cwd=root, timeout=60)
    assert done.returncode == 2
    assert "--branch needs a git repository" in done.stderr
