"""A task's scope holds in its worktree as in the project itself (IMPL-SCOPE-1).

A task's ``denied_paths``, ``allowed_paths`` and ``write_area`` name paths of the project; a
task in a worktree has those paths at the same place below its workspace. Each test runs the
real ``air run --headless`` over a real git project whose ``secrets/key`` the task's scope
denies, with a cassette standing in for the model: the task reads the file, searches for its
text, or has ``make`` write it through a recipe (a program writing files itself, which no
command analysis sees); the merge is the check that holds for what the sandbox let a command
write in the worktree.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.gitrepo import commit_files
from tests.headless import run_batch_json, session_events, tool_calls_cassette

SECRET = "TOPSECRET-b2c4e6"
CASSETTE = ("--cassette", "cas")


def _project(
    tmp: Path, scope: str, calls: list[tuple[str, dict[str, Any]]], *, git: bool = True
) -> Path:
    files = {
        "secrets/key": f"{SECRET}\n",
        "src/a.txt": "a\n",
        ".gitignore": "cas/\nbatch.yaml\n.air/local/\n",
    }
    root = commit_files(tmp / "proj", files) if git else tmp / "proj"
    for name, text in files.items() if not git else ():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / "cas").mkdir()
    tool_calls_cassette(root / "cas" / "t0.jsonl", calls)
    (root / "batch.yaml").write_text(
        f"version: 1\ntasks:\n  - {{id: t0, title: the task, scope: {scope}}}\n"
    )
    return root


def _run(root: Path, *options: str) -> subprocess.CompletedProcess[str]:
    home = root.parent / "home"
    home.mkdir(exist_ok=True)
    return run_batch_json(root, {**os.environ, "HOME": str(home)}, *CASSETTE, *options)


def _recorded(root: Path) -> bytes:
    """Every byte air recorded of the session: its database and its artifacts."""
    local = root / ".air" / "local" / "sessions"
    return b"".join(p.read_bytes() for p in sorted(local.rglob("*")) if p.is_file())


def _decisions(root: Path, tool: str) -> list[tuple[str, str]]:
    """(action, reason) of each permission decision on a call of ``tool``."""
    return [
        (e["decision"]["action"], e["decision"]["reason"])
        for e in session_events(root)
        if e["type"] == "permission.decision.recorded" and e["tool_name"] == tool
    ]


@pytest.mark.parametrize("isolation", ["worktree", "main"])
def test_a_denied_file_is_never_read_by_a_task_wherever_it_works(
    tmp_path: Path, isolation: str
) -> None:
    """fs.read of a denied file is refused in a worktree as in the project (in a worktree the
    relative entry was taken below the project, not below the workspace: the read went
    through, and the secret reached the model and the session's record)."""
    root = _project(tmp_path, "{denied_paths: [secrets]}", [("fs.read", {"path": "secrets/key"})])
    run = _run(root, "--isolation", isolation)
    assert run.returncode == 0, run.stderr
    assert _decisions(root, "fs.read") == [("deny", "secrets/key is in the task's denied paths")]
    assert SECRET.encode() not in _recorded(root)


@pytest.mark.parametrize("denied", ["secrets", "secrets/key"])
def test_a_search_never_shows_a_denied_file(tmp_path: Path, denied: str) -> None:
    """fs.search over the whole worktree passes over a denied directory or file (it showed the
    secret's line, though fs.read of the file is refused)."""
    root = _project(
        tmp_path, f"{{denied_paths: [{denied}]}}", [("fs.search", {"pattern": "TOPSECRET|^a$"})]
    )
    run = _run(root)
    assert run.returncode == 0, run.stderr
    [end] = [e for e in session_events(root) if e["type"] == "tool.completed"]
    found = json.loads(end["output_summary"])["matches"]
    assert [m["path"] for m in found] == ["src/a.txt"]  # the search did run
    assert SECRET.encode() not in _recorded(root)


def test_an_absolute_denied_path_holds_in_a_worktree(tmp_path: Path) -> None:
    """``denied_paths`` may name the project's file by its absolute path; in a worktree that is
    the worktree's copy too (the write went through, and merged into the project)."""
    root = tmp_path / "proj"
    project = _project(
        tmp_path,
        f"{{denied_paths: ['{root}/secrets']}}",
        [
            ("fs.write", {"path": "secrets/key", "content": "changed\n"}),
            ("shell.run", {"command": "echo changed > secrets/key"}),
        ],
    )
    run = _run(project)
    assert run.returncode == 0, run.stderr
    decisions = _decisions(project, "fs.write") + _decisions(project, "shell.run")
    assert [action for action, _ in decisions] == ["deny", "deny"]
    assert all("secrets/key is in the task's denied paths" in why for _, why in decisions)
    assert (project / "secrets" / "key").read_text() == f"{SECRET}\n"


def test_an_absolute_write_area_is_the_worktrees_place_too(tmp_path: Path) -> None:
    """A write area naming the project's directory by its absolute path lets the task write
    there in its worktree (every write was refused: 'outside the write area'), and the change
    lands."""
    root = tmp_path / "proj"
    project = _project(
        tmp_path,
        f"{{write_area: ['{root}/src']}}",
        [("fs.write", {"path": "src/a.txt", "content": "b\n"})],
    )
    run = _run(project)
    assert run.returncode == 0, run.stderr
    assert [a for a, _ in _decisions(project, "fs.write")] == ["allow"]
    assert (project / "src" / "a.txt").read_text() == "b\n"


@pytest.mark.parametrize("git", [True, False], ids=["git", "no-git"])
@pytest.mark.parametrize(
    "scope",
    ["{denied_paths: [secrets]}", "{allowed_paths: [src, Makefile]}"],
    ids=["denied", "allowed"],
)
def test_what_a_build_wrote_outside_the_scope_never_merges(
    tmp_path: Path, scope: str, git: bool
) -> None:
    """A Makefile the task wrote changes ``secrets/key`` when ``make`` runs it (no analysis of
    the command sees that). The merge refuses the change: a denied path, or one outside the
    ``allowed_paths`` that stand for the write area when it is not given (both were merged).
    Outside git the lone task works in a copy, not in place (in place, it wrote the project).
    In git its worktree holds the denied directory, hidden from its commands (IMPL-SBX-3): the
    build's write fails where it is made, and only the Makefile lands."""
    recipe = "all:\n\tmkdir -p secrets\n\techo changed > secrets/key\n\techo b > src/a.txt\n"
    root = _project(
        tmp_path,
        scope,
        [("fs.write", {"path": "Makefile", "content": recipe}), ("shell.run", {"command": "make"})],
        git=git,
    )
    run = _run(root)
    assert (root / "secrets" / "key").read_text() == f"{SECRET}\n"
    assert (root / "src" / "a.txt").read_text() == "a\n"  # nothing of it merged
    events = session_events(root)
    if git and "denied" in scope:
        made = [e for e in events if e["type"] == "tool.completed" and "exit_code" in str(e)]
        assert "cannot create secrets/key: Read-only file system" in str(made)
        assert [e["type"] for e in events if e["type"].startswith("task.")][-1] == "task.completed"
        assert (root / "Makefile").read_text() == recipe
        assert run.returncode == 0, run.stderr
        return
    [failed] = [e for e in events if e["type"] == "task.failed"]
    assert failed["error"]["kind"] == "write_area_violation", failed
    assert "secrets/key" in failed["error"]["message"] + str(failed["error"]["detail"])
    assert run.returncode != 0


def test_a_copy_holds_no_denied_path(tmp_path: Path) -> None:
    """Outside git the task works in a copy, which leaves its denied paths out: a recursive
    read (``grep -r``, which names no path the analysis could refuse) finds nothing there (it
    printed the secret's line). The project's own file is untouched."""
    root = _project(
        tmp_path,
        "{denied_paths: [secrets]}",
        [("shell.run", {"command": "grep -r TOPSECRET . ; ls"})],
        git=False,
    )
    run = _run(root)
    assert run.returncode == 0, run.stderr
    [end] = [e for e in session_events(root) if e["type"] == "tool.completed"]
    shown = json.loads(end["output_summary"])
    assert "src" in shown["stdout"]  # the command ran, in the copy
    assert "secrets" not in shown["stdout"]
    assert SECRET.encode() not in _recorded(root)
    assert (root / "secrets" / "key").read_text() == f"{SECRET}\n"
