"""``air resume`` goes on with the run's own options (IMPL-RESUME-2).

A real ``air run --headless`` with ``--branch``, ``--review``, ``--permission-mode allow-ask``
(or ``--isolation``) is killed after its first task; ``air resume`` with no option must land
the rest where the run promised, review them and ask as the run did; an option given to the
resume wins. Before, the resume fell back to the defaults: the rest of a ``--branch feature``
run merged into the branch checked out meanwhile (``main``), unreviewed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.gitrepo import commit_files, git
from tests.headless import review_verdict, session_events

pytestmark = pytest.mark.slow

USAGE = {"input_tokens": 10, "output_tokens": 5}


def _turns(*turns: tuple[list[dict[str, Any]], str]) -> str:
    return "".join(
        json.dumps({"content": c, "stop_reason": s, "usage": USAGE}) + "\n" for c, s in turns
    )


def _task(command: str) -> str:
    call = {"type": "tool_use", "id": "toolu_c", "name": "shell.run", "input": {"command": command}}
    result = {"status": "completed", "summary": "done", "result": {"changes_made": True}}
    text = f"ok\n```json:result\n{json.dumps(result)}\n```\n"
    return _turns(([call], "tool_use"), ([{"type": "text", "text": text}], "end_turn"))


def _project(tmp: Path) -> Path:
    files = {f"f{i}.txt": f"{i}\n" for i in range(3)}
    files |= {"scratch.txt": "x\n", ".gitignore": "cas/\nbatch.yaml\n.air/local/\n"}
    root = commit_files(tmp / "proj", files)
    (root / "cas").mkdir()
    for i in range(3):
        # t1 also deletes a file: a question, which only allow-ask answers (announced, run)
        extra = "rm -f scratch.txt && " if i == 1 else ""
        (root / "cas" / f"t{i}.jsonl").write_text(_task(f"{extra}echo more >> f{i}.txt"))
        review = [{"type": "text", "text": review_verdict()}]
        (root / "cas" / f"t{i}.review.jsonl").write_text(_turns((review, "end_turn")))
    area = {0: "[f0.txt]", 1: "[f1.txt, scratch.txt]", 2: "[f2.txt]"}
    tasks = [
        f"  - {{id: t{i}, title: t{i}, scope: {{write_area: {area[i]}}}"
        + (f", depends_on: [t{i - 1}]" if i else "")
        + "}"
        for i in range(3)
    ]
    (root / "batch.yaml").write_text("version: 1\ntasks:\n" + "\n".join(tasks) + "\n")
    return root


def _air(root: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "air.cli", *args, "--cassette", "cas", "--max-workers", "1"]


def _killed_after_the_first_task(root: Path, *options: str) -> None:
    env = {**os.environ, "HOME": str(root.parent / "home")}
    (root.parent / "home").mkdir(exist_ok=True)
    argv = _air(root, "run", "--headless", "batch.yaml", "--json", *options)
    proc = subprocess.Popen(argv, cwd=root, env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if json.loads(line).get("type") == "task.completed":
            proc.send_signal(signal.SIGKILL)
            break
    proc.stdout.read()
    assert proc.wait(timeout=60) == -signal.SIGKILL


def _resume(root: Path, *options: str, says: str) -> list[dict[str, Any]]:
    env = {**os.environ, "HOME": str(root.parent / "home")}
    done = subprocess.run(
        _air(root, "resume", *options),
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    # what it took from the run is said before the first task (nothing when nothing was)
    assert says in done.stderr if says else "as the run was" not in done.stderr
    return session_events(root)


def test_a_resumed_run_lands_on_its_branch_reviewed_and_asks_as_it_did(tmp_path: Path) -> None:
    root = _project(tmp_path)
    base = git(root, "rev-parse", "main")
    run = ("--branch", "feature", "--review", "--permission-mode", "allow-ask")
    _killed_after_the_first_task(root, *run)
    git(root, "checkout", "-q", "main")  # the person went back to their own work
    kept = "air: as the run was: --permission-mode allow-ask --branch feature --review\n"
    events = _resume(root, says=kept)
    assert git(root, "rev-parse", "main") == base  # the run's promise: nothing lands on main
    assert git(root, "branch", "--show-current") == "feature"
    landed = git(root, "log", "--format=%s", "feature").splitlines()
    assert [s for s in landed if s.startswith("Merge task")] == [
        "Merge task t2: t2",
        "Merge task t1: t1",
        "Merge task t0: t0",
    ]
    ended = {e["task_id"]: e["type"] for e in events if e["type"] == "task.completed"}
    assert set(ended) == {"t0", "t1", "t2", "t0.review", "t1.review", "t2.review"}
    git(root, "checkout", "-q", "feature")
    assert not (root / "scratch.txt").exists()  # allow-ask ran the question it announced
    assert (root / "f1.txt").read_text() == "1\nmore\n"


@pytest.mark.parametrize("override", [(), ("--isolation", "worktree")])
def test_a_resumed_run_keeps_its_isolation_unless_told(
    tmp_path: Path, override: tuple[str, ...]
) -> None:
    root = _project(tmp_path)
    _killed_after_the_first_task(root, "--isolation", "isolated_copy")
    says = "" if override else "air: as the run was: --isolation isolated_copy\n"
    events = _resume(root, *override, says=says)
    strategies = [e["strategy"] for e in events if e["type"] == "workspace.created"]
    later = "worktree" if override else "isolated_copy"
    # t0's, and t1's too when it began before the kill landed (the kill races the run on a
    # loaded machine), then the resumed t1's and t2's
    assert set(strategies[:-2]) == {"isolated_copy"}
    assert strategies[-2:] == [later, later]
    # the run asked nothing of the person (default mode): t1's question failed closed, as it
    # would have in the run, and the other changes landed
    texts = [(root / f"f{i}.txt").read_text() for i in range(3)]
    assert texts == ["0\nmore\n", "1\n", "2\nmore\n"]
    assert (root / "scratch.txt").exists()
