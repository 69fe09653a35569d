"""End to end: a task's command makes a tree 1,500 directories deep (``mkdir d; cd d`` in a
loop: past Python's recursion limit). A real ``air run --headless`` (cassettes through the real
tools and sandbox) merges it and cleans its workspace, in a worktree and then in an isolated
copy of the project that now holds it. Before, Python 3.11's recursive ``os.walk`` (the
merge's scan of untracked trees, the credential scan of the next command), ``os.makedirs``,
``copytree`` and ``rmtree`` raised ``RecursionError``: the run ended with a traceback, exit 1."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from air.tree_walk import remove_tree
from tests.cassette_turns import done_turn, tool_turn
from tests.forked_air import air_cli
from tests.gitrepo import git
from tests.headless import json_events
from tests.trusted import trust_project

DEPTH = 1_500
"""Past the recursion limit, within PATH_MAX (~3,000 characters): git takes it."""
TOO_DEEP = 2_200
"""Past PATH_MAX (4,400 characters): no path names its bottom, git cannot take it (it stays
out of the merge) and ``git worktree remove`` cannot delete it: the cleanup does, a level at
a time (before, its failure ended the run: ``workspace_error``, exit 1)."""
BATCH = """version: 1
tasks:
  - id: deep
    title: Make a deep tree
    scope: {write_area: ["conf/**"]}
  - id: after
    title: Run after it
    scope: {write_area: ["conf/**"]}
    depends_on: [deep]
"""
MAKE = (
    "python3 -c \"import os; os.chdir('conf'); "
    "[(os.mkdir('d'), os.chdir('d')) for _ in range({depth})]; open('f', 'w').write('deep')\""
)


def _depth(root: Path) -> int:
    fd = os.open(root / "conf", os.O_RDONLY | os.O_DIRECTORY)
    depth = 0
    try:
        while True:
            try:
                down = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            except FileNotFoundError:
                return depth
            os.close(fd)
            fd, depth = down, depth + 1
    finally:
        os.close(fd)


@pytest.mark.slow
@pytest.mark.parametrize("depth", [DEPTH, TOO_DEEP])
def test_a_tree_deeper_than_the_recursion_limit_merges_and_goes(depth: int, tmp_path: Path) -> None:
    root, home = tmp_path / "proj", tmp_path / "home"
    (root / "conf").mkdir(parents=True)
    home.mkdir()
    (root / "conf" / "app.cfg").write_text("a = 1\n")
    (root / ".gitignore").write_text("cas*/\n*.yaml\n.air/local/\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    (root / "batch.yaml").write_text(BATCH)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env = {k: v for k, v in env.items() if not k.startswith("AIR_")}
    env["HOME"] = str(home)
    trust_project(root, home)
    try:
        _run_twice(root, env, depth)
        assert _depth(root) == (depth if depth == DEPTH else 0)
    finally:  # pytest's own cleanup of tmp_path recurses
        remove_tree(str(root), ignore_errors=True)


def _run_twice(root: Path, env: dict[str, str], depth: int) -> None:
    for run, isolation in enumerate(("worktree", "isolated_copy")):
        cas = root / f"cas{run}"
        cas.mkdir()
        make = MAKE.format(depth=depth)
        first = [tool_turn("1", "shell.run", command=make)] if run == 0 else []
        first.append(tool_turn("2", "shell.run", command=f"echo {run} > conf/x"))
        (cas / "deep.jsonl").write_text("\n".join([*first, done_turn()]) + "\n")
        then = [tool_turn("3", "shell.run", command=f"ls conf > conf/listing{run}")]
        (cas / "after.jsonl").write_text("\n".join([*then, done_turn()]) + "\n")
        args = ["run", "--headless", "batch.yaml", "--cassette", cas.name, "--json"]
        args += ["--isolation", isolation, "--permission-mode", "allow-ask"]
        proc = air_cli(args, cwd=root, env=env, timeout=240)
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr
        listed = (root / "conf" / f"listing{run}").read_text().split()
        assert ("d" in listed) == (depth == DEPTH)  # merged before
        events = json_events(proc.stdout)
        made = [Path(e["payload"]["path"]) for e in events if e["type"] == "workspace.created"]
        assert len(made) == 2
        assert not any(path.exists() for path in made)  # cleaned, deep tree and all
