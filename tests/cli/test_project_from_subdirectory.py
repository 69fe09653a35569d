"""A run started in a subdirectory works on the project it is in, as git does.

Found running ``air run --headless`` from ``proj/src``: the subdirectory became a project of its
own (``src/.air``, ``src/.gitignore`` made on first use), whose writers worked on copies of
``src`` only, beside the real project's sessions; the console, started there, used the
project above. Now a command without ``--project`` works on the nearest directory at or above
it that holds an air project or a git repository (below the home directory), else where it is.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.forked_air import air_cli
from tests.gitrepo import init_repo

BATCH = "version: 1\ntasks:\n  - id: t\n    title: fix it\n"


def _plan_project(cwd: Path, home: Path, batch: Path, *extra: str) -> str:
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "ANTHROPIC_API_KEY": "k-unused"}
    done = air_cli(["run", "--plan", str(batch), "--json", *extra], cwd=cwd, env=env)
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["type"] == "air.plan"
    return str(plan["project"])


def _tree(tmp_path: Path) -> tuple[Path, Path, Path]:
    home = tmp_path / "home"
    home.mkdir()
    root = tmp_path / "proj"
    (root / "src" / "deep").mkdir(parents=True)
    (root / "a.txt").write_text("a\n")
    batch = tmp_path / "batch.yaml"
    batch.write_text(BATCH)
    return home, root, batch


def test_from_a_subdirectory_of_a_repository_the_project_is_its_top(tmp_path: Path) -> None:
    home, root, batch = _tree(tmp_path)
    init_repo(root, message="init")
    assert _plan_project(root / "src" / "deep", home, batch) == str(root)
    assert not (root / "src" / ".air").exists()
    assert not (root / "src" / "deep" / ".air").exists()


def test_the_nearest_air_project_wins_over_the_repository(tmp_path: Path) -> None:
    home, root, batch = _tree(tmp_path)
    init_repo(root, message="init")
    (root / "src" / ".air" / "shared").mkdir(parents=True)
    (root / "src" / ".air" / "shared" / "project.json").write_text('{"project_id": "p-src"}\n')
    assert _plan_project(root / "src" / "deep", home, batch) == str(root / "src")


def test_outside_any_repository_or_project_it_is_where_it_runs(tmp_path: Path) -> None:
    home, root, batch = _tree(tmp_path)
    assert _plan_project(root / "src", home, batch) == str(root / "src")


def test_project_as_given_is_kept(tmp_path: Path) -> None:
    home, root, batch = _tree(tmp_path)
    init_repo(root, message="init")
    here = root / "src"
    assert _plan_project(root, home, batch, "--project", str(here)) == str(here)


def test_the_walk_up_stops_below_the_home(tmp_path: Path) -> None:
    """A home that is a repository (dotfiles) is never the project of a folder below it."""
    home = tmp_path / "home"
    work = home / "code" / "new"
    work.mkdir(parents=True)
    (home / ".bashrc").write_text("# mine\n")
    init_repo(home, message="dotfiles")
    batch = work / "batch.yaml"
    batch.write_text(BATCH)
    assert _plan_project(work, home, batch) == str(work)
