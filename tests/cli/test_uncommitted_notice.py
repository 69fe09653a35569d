"""A run whose writers work in worktrees says when the project has uncommitted changes: a
worktree starts from the last commit, so its task does not see them, and a task that changes
one of them is not merged until they are committed (tests/workspace/test_merge_user_git_state.py).
Found asking a task to test a function written but not yet committed: the task worked on the
file as committed, and nothing said why."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from air.cli.checks import say_uncommitted
from air.cli.options import HeadlessOptions
from air.contracts.task import TaskScope, TaskSpec, TaskType
from tests.forked_air import air_cli
from tests.gitrepo import commit_files, git
from tests.trusted import trust_project

WARNING = "air: warning: the project has uncommitted changes ("


def _spec(kind: TaskType = TaskType.EXECUTE, area: list[str] | None = None) -> TaskSpec:
    return TaskSpec(id="t", type=kind, title="t", description="t", scope=TaskScope(write_area=area))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    files = {name: f"# {name}\n" for name in ("a.py", "b.py", "c.py")}
    return commit_files(tmp_path / "proj", {**files, ".gitignore": "build/\n"})


def _said(project: Path, specs: list[TaskSpec], isolation: str = "auto") -> str:
    out = io.StringIO()
    options = HeadlessOptions(project=str(project), isolation=isolation, stderr=out)
    assert say_uncommitted(options, specs) is specs
    return out.getvalue()


def test_changed_renamed_and_new_files_are_named(project: Path) -> None:
    (project / "a.py").write_text("def added(): ...\n")
    git(project, "mv", "b.py", "b2.py")
    (project / "new.py").write_text("x = 1\n")
    (project / "build").mkdir()
    (project / "build" / "out.o").write_text("ignored\n")
    (project / ".air" / "shared").mkdir(parents=True)  # air's own, made on first use
    (project / ".air" / "shared" / "project.json").write_text("{}\n")
    said = _said(project, [_spec()])
    assert said == (
        f"{WARNING}3 files: a.py, b2.py, new.py); its tasks start from the last commit and do "
        "not see them, and a task that changes one of them is not merged until they are "
        "committed or stashed\n"
    )


def test_many_files_are_counted(project: Path) -> None:
    for n in range(8):
        (project / f"n{n}.py").write_text("x\n")
    said = _said(project, [_spec()])
    assert f"{WARNING}8 files: n0.py, n1.py, n2.py, n3.py, n4.py and 3 more)" in said


@pytest.mark.parametrize(
    ("specs", "isolation"),
    [
        ([_spec(TaskType.REVIEW)], "auto"),  # reviewers read the project itself
        ([_spec(area=[])], "auto"),  # no write area: runs in the project
        ([_spec()], "main"),
        ([_spec()], "isolated_copy"),  # a copy holds the changes
    ],
)
def test_no_warning_where_no_task_starts_from_the_last_commit(
    project: Path, specs: list[TaskSpec], isolation: str
) -> None:
    (project / "a.py").write_text("changed\n")
    assert _said(project, specs, isolation) == ""


def test_no_warning_for_a_clean_project_or_no_repository(project: Path, tmp_path: Path) -> None:
    assert _said(project, [_spec()]) == ""
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.py").write_text("x\n")
    assert _said(plain, [_spec()]) == ""


def test_air_run_plan_says_it(project: Path, tmp_path: Path) -> None:
    """The run's own path says it too (``air run --plan`` is the run up to its first write)."""
    (project / "a.py").write_text("changed\n")
    (project / "batch.yaml").write_text("version: 1\ntasks:\n  - id: t\n    title: fix it\n")
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "ANTHROPIC_API_KEY": "k-not-used-here"}
    done = air_cli(["run", "--plan", "batch.yaml"], cwd=project, env=env)
    assert done.returncode == 0, done
    assert f"{WARNING}2 files: a.py, batch.yaml)" in done.stderr


def test_air_run_headless_says_it_before_anything_else(project: Path, tmp_path: Path) -> None:
    (project / "a.py").write_text("changed\n")
    (project / "batch.yaml").write_text("version: 1\ntasks:\n  - id: t\n    title: fix it\n")
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home)}  # no model: the run stops after it
    done = air_cli(["run", "--headless", "batch.yaml"], cwd=project, env=env)
    assert done.returncode == 2, done
    first, second = done.stderr.splitlines()[:2]
    assert first.startswith(f"{WARNING}2 files: a.py, batch.yaml)")
    assert second.startswith("air: config_error: no model provider is configured")


def test_the_console_says_it_first(project: Path, tmp_path: Path) -> None:
    """The console's tasks are the Main Agent's to make: its first notice says it."""
    (project / "a.py").write_text("changed\n")
    home, cassettes = tmp_path / "home", tmp_path / "cas"
    home.mkdir()
    cassettes.mkdir()
    (cassettes / "main.jsonl").write_text("")  # the Main Agent is never asked
    trust_project(project, home)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "HOME"}
    done = subprocess.run(
        [sys.executable, "-m", "air.cli", "run", str(project), "--plain", "--cassette", "cas"],
        cwd=tmp_path,
        env={**env, "HOME": str(home)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done
    notice = next(line for line in done.stdout.splitlines() if "uncommitted" in line)
    assert notice.startswith("• the project has uncommitted changes (")
    assert "a.py" in notice


def test_a_repository_with_no_commit_says_its_writers_get_no_worktree(tmp_path: Path) -> None:
    """No commit, no worktree: a writer works in a copy (in the project itself when it may write
    all of it); the run says so and how to have worktrees, instead of speaking of a last commit
    there is not."""
    root = tmp_path / "fresh"
    root.mkdir()
    git(root, "init", "-q")
    (root / "a.py").write_text("x = 1\n")
    said = _said(root, [_spec()])
    assert said == (
        "air: warning: the project's git repository has no commit yet, so its tasks get no "
        "worktree: a task that writes works in a copy, or in the project itself when it may "
        "write all of it; commit once to give each task a worktree\n"
    )
    assert _said(root, [_spec(TaskType.REVIEW)]) == ""  # a review writes nothing
