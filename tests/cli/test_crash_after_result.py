"""A runtime killed after a worker returned its result never runs that task again (IMPL-RESUME-1).

Each test runs the real ``air run --headless`` over a real git project, a task whose command
appends a line to a file (a change that shows when it lands twice), and kills the runtime with
SIGKILL at one exact point between the worker's result and the task's end: a ``sitecustomize``
on the run's ``PYTHONPATH`` wraps one of air's own methods and kills its process before or
after it. Then ``air resume`` (no hook) must finish the batch with the change in the project
once, the task started once, its workspace gone and nothing of git's in the way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.gitrepo import commit_files, git
from tests.headless import session_events

pytestmark = pytest.mark.slow

HOOK = """\
import os, signal, sys
module, qualname, when, kind = os.environ["AIR_TEST_CRASH_AT"].split(":")
if "run" in sys.argv:
    import importlib.abc, importlib.machinery
    owner, method = qualname.split(".")

    class _Crash(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name != module:
                return None
            sys.meta_path.remove(self)
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            load = spec.loader.exec_module

            def exec_module(mod):
                load(mod)
                cls = getattr(mod, owner)
                inner = getattr(cls, method)

                async def crashing(self, *args, **kwargs):
                    ours = not kind or (args and args[0] == kind)
                    if ours and when == "before":
                        os.kill(os.getpid(), signal.SIGKILL)
                    done = await inner(self, *args, **kwargs)
                    if ours and when == "after":
                        os.kill(os.getpid(), signal.SIGKILL)
                    return done

                setattr(cls, method, crashing)

            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, _Crash())
"""


def _cassette(command: str) -> str:
    usage = {"input_tokens": 10, "output_tokens": 5}
    result = {"status": "completed", "summary": "appended", "result": {"changes_made": True}}
    call = {"type": "tool_use", "id": "toolu_a", "name": "shell.run", "input": {"command": command}}
    done = f"ok\n```json:result\n{json.dumps(result)}\n```\n"
    turns = [
        {"content": [call], "stop_reason": "tool_use", "usage": usage},
        {"content": [{"type": "text", "text": done}], "stop_reason": "end_turn", "usage": usage},
    ]
    return "".join(json.dumps(t) + "\n" for t in turns)


def _project(tmp: Path, command: str = "echo appended >> f0.txt") -> Path:
    root = commit_files(
        tmp / "proj",
        {"f0.txt": "zero\n", "f1.txt": "one\n", ".gitignore": "cas/\nbatch.yaml\n.air/local/\n"},
    )
    (root / "cas").mkdir()
    (root / "cas" / "t0.jsonl").write_text(_cassette(command))
    (root / "cas" / "t1.jsonl").write_text(_cassette("echo appended >> f1.txt"))
    (root / "batch.yaml").write_text(
        "version: 1\ntasks:\n"
        "  - {id: t0, title: append to f0, scope: {write_area: [f0.txt]}}\n"
        "  - {id: t1, title: append to f1, scope: {write_area: [f1.txt]}, depends_on: [t0]}\n"
    )
    return root


def _air(root: Path, *args: str, crash_at: str | None = None, **kw: Any) -> Any:
    env = {**os.environ, "HOME": str(root.parent / "home")}
    (root.parent / "home").mkdir(exist_ok=True)
    if crash_at is not None:
        hook = root.parent / "hook"
        hook.mkdir(exist_ok=True)
        (hook / "sitecustomize.py").write_text(HOOK)
        env["PYTHONPATH"] = str(hook)
        env["AIR_TEST_CRASH_AT"] = crash_at
    argv = [sys.executable, "-m", "air.cli", *args, "--cassette", "cas", "--max-workers", "1"]
    return subprocess.run(
        argv, cwd=root, env=env, capture_output=True, text=True, timeout=120, **kw
    )


def _crash_then_resume(root: Path, crash_at: str, *options: str) -> list[dict[str, Any]]:
    """Run the batch (with ``options``) until the hook kills it at ``crash_at``, then ``air
    resume`` it to its end (the run's options kept); the events of the session."""
    crashed = _air(root, "run", "--headless", "batch.yaml", *options, crash_at=crash_at)
    assert crashed.returncode == -9, crashed.stderr  # the hook's SIGKILL, not an end
    before = session_events(root)
    assert not any(e["type"] == "task.completed" and e["task_id"] == "t0" for e in before)
    resumed = _air(root, "resume")
    assert resumed.returncode == 0, resumed.stderr
    return session_events(root)


def _landed_once(root: Path, events: list[dict[str, Any]]) -> None:
    """t0's change is in the project once, t0 ran once and ended completed, as did t1; no
    workspace branch or git operation is left behind."""
    assert (root / "f0.txt").read_text().count("appended") == 1
    assert (root / "f1.txt").read_text() == "one\nappended\n"
    starts = [e["task_id"] for e in events if e["type"] == "task.started"]
    assert starts.count("t0") == 1, starts
    ends = {
        e["task_id"]: e["type"] for e in events if e["type"].startswith("task.") and "task_id" in e
    }
    assert ends == {"t0": "task.completed", "t1": "task.completed"}
    assert not any(e["type"] == "task.interrupted" for e in events)
    assert git(root, "branch", "--list", "air/*") == ""
    assert not (root / ".git" / "MERGE_HEAD").exists()
    assert git(root, "status", "--porcelain", "--untracked-files=no") == ""
    subjects = git(root, "log", "--format=%s").splitlines()
    assert sum(s.startswith("Merge task t0") for s in subjects) == 1


def test_killed_after_the_merge_is_recorded_the_task_is_recorded_not_run_again(
    tmp_path: Path,
) -> None:
    root = _project(tmp_path)
    crash_at = "air.nursery.ledger:SessionLedger.record:after:workspace.merge.completed"
    events = _crash_then_resume(root, crash_at)
    _landed_once(root, events)
    merged = [e for e in events if e["type"] == "workspace.merge.completed"]
    assert len(merged) == 2  # t0's and t1's, each once


def test_killed_after_git_merged_before_it_was_recorded_the_merge_is_recorded_once(
    tmp_path: Path,
) -> None:
    root = _project(tmp_path)
    events = _crash_then_resume(root, "air.workspace.worktrees:ProjectGit.merge:after:")
    _landed_once(root, events)
    starts = [e for e in events if e["type"] == "workspace.merge.started"]
    merged = [e for e in events if e["type"] == "workspace.merge.completed"]
    assert len(starts) == len(merged) == 2  # t0's merge was settled, not merged again


def test_killed_between_the_result_and_the_merge_the_result_is_merged(tmp_path: Path) -> None:
    root = _project(tmp_path)
    events = _crash_then_resume(
        root, "air.workspace.manager:WorkspaceManager.merge_workspace:before:"
    )
    _landed_once(root, events)


def test_killed_in_place_before_the_end_the_task_is_not_run_again(tmp_path: Path) -> None:
    root = _project(tmp_path)
    crash_at = "air.nursery.ledger:SessionLedger.record:before:task.completed"
    crashed = _air(
        root, "run", "--headless", "batch.yaml", "--isolation", "main", crash_at=crash_at
    )
    assert crashed.returncode == -9, crashed.stderr
    assert (root / "f0.txt").read_text() == "zero\nappended\n"  # made in place, before the end
    resumed = _air(root, "resume", "--isolation", "main")
    assert resumed.returncode == 0, resumed.stderr
    events = session_events(root)
    assert (root / "f0.txt").read_text() == "zero\nappended\n"
    assert [e["task_id"] for e in events if e["type"] == "task.started"] == ["t0", "t1"]
    assert [e["task_id"] for e in events if e["type"] == "task.completed"] == ["t0", "t1"]


def test_killed_in_a_conflicted_merge_air_ends_its_own_merge_and_retries(tmp_path: Path) -> None:
    root = _project(tmp_path, "sleep 1 && echo appended >> f0.txt")
    # the user commits a change to the same line while t0 runs: its merge conflicts, and the
    # runtime dies before it ends its own merge (git's MERGE_HEAD and markers in f0.txt)
    env = {**os.environ, "HOME": str(tmp_path / "home")}
    hook = tmp_path / "hook"
    (tmp_path / "home").mkdir()
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(HOOK)
    crash_at = "air.workspace.worktrees:ProjectGit._end_own_merge:before:"
    env |= {"PYTHONPATH": str(hook), "AIR_TEST_CRASH_AT": crash_at}
    argv = [sys.executable, "-m", "air.cli", "run", "--headless", "batch.yaml", "--json"]
    argv += ["--cassette", "cas", "--max-workers", "1"]
    proc = subprocess.Popen(argv, cwd=root, env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if json.loads(line).get("type") == "tool.started":
            (root / "f0.txt").write_text("zero\nthe user's line\n")
            git(root, "commit", "-qam", "the user's change")
            break
    proc.stdout.read()
    assert proc.wait(timeout=120) == -9
    assert (root / ".git" / "MERGE_HEAD").exists()  # the crash left air's merge stopped
    resumed = _air(root, "resume")
    assert resumed.returncode == 0, resumed.stderr
    events = session_events(root)
    assert not (root / ".git" / "MERGE_HEAD").exists()
    assert (root / "f0.txt").read_text() == "zero\nthe user's line\nappended\n"
    assert [e["task_id"] for e in events if e["type"] == "task.started"] == ["t0", "t0", "t1"]
    conflicted = [e for e in events if e["type"] == "workspace.merge.conflicted"]
    assert len(conflicted) == 1  # merged again after recovery ended it: the conflict is seen
    assert git(root, "log", "-1", "--format=%s").startswith("Merge task t1")


def test_killed_after_a_copy_back_before_its_record_the_copy_lands_once(
    tmp_path: Path,
) -> None:
    """Isolated copies (a project without git), copied back file by file: killed after the
    copy back, before its record, the resume copies back again (what is there already is no
    conflict) and does not run the task again."""
    root = tmp_path / "proj"
    (root / "cas").mkdir(parents=True)
    (root / "f0.txt").write_text("zero\n")
    (root / "f1.txt").write_text("one\n")
    (root / "cas" / "t0.jsonl").write_text(_cassette("echo appended >> f0.txt"))
    (root / "cas" / "t1.jsonl").write_text(_cassette("echo appended >> f1.txt"))
    (root / "batch.yaml").write_text(
        "version: 1\ntasks:\n"
        "  - {id: t0, title: append to f0, scope: {write_area: [f0.txt]}}\n"
        "  - {id: t1, title: append to f1, scope: {write_area: [f1.txt]}, depends_on: [t0]}\n"
    )
    crash_at = "air.workspace.manager:WorkspaceManager._merge_copy:after:"
    events = _crash_then_resume(root, crash_at, "--isolation", "isolated_copy")
    assert (root / "f0.txt").read_text() == "zero\nappended\n"
    assert (root / "f1.txt").read_text() == "one\nappended\n"
    assert [e["task_id"] for e in events if e["type"] == "task.started"] == ["t0", "t1"]
    strategies = {e["strategy"] for e in events if e["type"] == "workspace.created"}
    assert strategies == {"isolated_copy"}
