"""``air restore`` over the backup repository (issue #15 item 3): the examples/calc batch runs
for real (worktrees, merges into the user's git branch); afterwards a file a merged task
changed comes back byte-identical, the tree before the session and at a time come back, a
rescue snapshot is taken first, and the user's branch, index and uncommitted work are
untouched."""

from __future__ import annotations

import datetime
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.forked_air import air_cli
from tests.gitrepo import git

EXAMPLE = Path(__file__).parents[2] / "examples" / "calc"


def _air(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return air_cli(args, cwd=cwd, timeout=180)


@pytest.fixture
def ran(tmp_path: Path) -> tuple[Path, dict[str, bytes], str, str]:
    """calc as a git project with uncommitted work, after the batch ran: (root, the files
    before the run, a time before the run, the session id)."""
    root = tmp_path / "calc"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", ".air"))
    git(root, "init", "-q", "-b", "main")
    (root / ".gitignore").write_text(".air/local/\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "calc")
    (root / "README.md").write_text((root / "README.md").read_text() + "\nmy uncommitted edit\n")
    (root / "notes.txt").write_text("untracked notes\n")
    before = {p: (root / p).read_bytes() for p in ("calc/evaluator.py", "calc/tokenizer.py")}
    start = datetime.datetime.now(datetime.UTC).isoformat()
    proc = _air("run", "--headless", "batch.yaml", "--cassette", "cassettes", cwd=root)
    assert proc.returncode == 0, proc.stderr
    for rel, data in before.items():
        assert (root / rel).read_bytes() != data  # the tasks changed them
    [session] = [line.split()[0] for line in _air("session", "list", cwd=root).stdout.splitlines()]
    return root, before, start, session


def _user_state(root: Path) -> tuple[str, str, str, str, str]:
    return (
        git(root, "rev-parse", "refs/heads/main"),
        git(root, "symbolic-ref", "HEAD"),
        git(root, "diff", "--cached", "--stat"),
        (root / "README.md").read_text(),
        (root / "notes.txt").read_text(),
    )


@pytest.mark.slow
def test_a_file_a_merged_task_changed_comes_back_byte_identical(
    ran: tuple[Path, dict[str, bytes], str, str],
) -> None:
    root, before, _start, session = ran
    listed = [
        json.loads(x) for x in _air("restore", "--list", "--json", cwd=root).stdout.split("\n") if x
    ]
    premerge = [s for s in listed if s["reason"] == "before merge"]
    assert len(premerge) == 3  # one per merged task
    assert {s["session_id"] for s in premerge} == {session}
    user = _user_state(root)
    fixed = (root / "calc/evaluator.py").read_bytes()
    proc = _air("restore", "calc/evaluator.py", cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert (root / "calc/evaluator.py").read_bytes() == before["calc/evaluator.py"]
    assert (root / "calc/tokenizer.py").read_bytes() != before["calc/tokenizer.py"]  # only it
    assert _user_state(root) == user
    assert "rescue" in proc.stdout
    # the rescue snapshot makes the restore undoable: the fixed version comes back
    again = _air("restore", "calc/evaluator.py", cwd=root)
    assert again.returncode == 0, again.stderr
    assert (root / "calc/evaluator.py").read_bytes() == fixed


@pytest.mark.slow
def test_the_tree_before_a_session_and_at_a_time_come_back(
    ran: tuple[Path, dict[str, bytes], str, str],
) -> None:
    root, before, start, session = ran
    assert (root / "CHANGES.md").exists()
    user_branch = git(root, "rev-parse", "refs/heads/main")
    proc = _air("restore", session, cwd=root)
    assert proc.returncode == 0, proc.stderr
    for rel, data in before.items():
        assert (root / rel).read_bytes() == data
    assert not (root / "CHANGES.md").exists()  # created by the session
    assert (root / "notes.txt").read_text() == "untracked notes\n"
    assert "my uncommitted edit" in (root / "README.md").read_text()
    assert git(root, "rev-parse", "refs/heads/main") == user_branch
    assert git(root, "symbolic-ref", "HEAD") == "refs/heads/main"
    # back to the end of the run (restore the rescue by time), then to the start by time
    rescue = [
        json.loads(x) for x in _air("restore", "--list", "--json", cwd=root).stdout.split("\n") if x
    ][-1]
    assert rescue["reason"] == "rescue before restore"
    assert _air("restore", "calc/evaluator.py", cwd=root).returncode == 0
    assert (root / "calc/evaluator.py").read_bytes() != before["calc/evaluator.py"]
    by_time = _air("restore", start, cwd=root)
    assert by_time.returncode == 0, by_time.stderr
    assert (root / "calc/evaluator.py").read_bytes() == before["calc/evaluator.py"]


def test_restore_never_writes_through_a_symlink(
    ran: tuple[Path, dict[str, bytes], str, str], tmp_path: Path
) -> None:
    root, before, _start, session = ran
    outside = tmp_path / "outside"
    shutil.move(root / "calc", outside)
    (root / "calc").symlink_to(outside)
    fixed = (outside / "evaluator.py").read_bytes()
    proc = _air("restore", session, cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert (outside / "evaluator.py").read_bytes() == fixed  # nothing written outside
    assert not (root / "calc").is_symlink()
    assert (root / "calc/evaluator.py").read_bytes() == before["calc/evaluator.py"]


def test_bad_targets_exit_2_with_what_to_do(ran: tuple[Path, dict[str, bytes], str, str]) -> None:
    root, _before, _start, _session = ran
    for target, words in (
        ("ses_nosuch", "merged nothing"),
        ("2000-01-01T00:00:00+00:00", None),
        ("../../etc/passwd", "not a file of the project"),
        ("2999-01-01T00:00:00+00:00", "no snapshot after"),
        ("notes.txt", "no backup of notes.txt differs"),
    ):
        proc = _air("restore", target, cwd=root)
        if words is None:
            assert proc.returncode == 0, proc.stderr  # before everything: the first snapshot
            continue
        assert proc.returncode == 2, (target, proc.stdout, proc.stderr)
        assert words in proc.stderr
        assert "what to do:" in proc.stderr
        assert "Traceback" not in proc.stderr
