"""Issue 25 items 1 and 2 through the real ``air`` command: named agent files (``air agents
list|show``, ``agent:`` in a batch) and plan mode (``air run --plan BATCH [--json]``), which
runs a run's checks and planners, prints the plan and starts nothing (IMPL-AGENTFILE-1, -2,
IMPL-PLAN-1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.forked_air import air_cli
from tests.gitrepo import init_repo
from tests.trusted import trust_project

AIR = [sys.executable, "-m", "air.cli"]

STRICT = """---
description: A strict reviewer
role: reviewer
tools: [fs.read, fs.search]
max_turns: 5
---
You are strict. MARK-PERSONA-STRICT.
"""

BATCH = """version: 1
defaults:
  constraints: {max_turns: 9}
tasks:
  - id: a
    title: Fix a
    scope: {write_area: ["src/a.py"]}
  - id: b
    title: Fix b
    scope: {write_area: ["src/*"]}
  - id: r
    title: Review a
    agent: strict
    depends_on: [a]
  - id: r2
    title: Review again
    agent: strict
    constraints: {max_turns: 7}
"""


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "OPENAI_", "AIR_")) and k != "HOME"
    }
    return {**env, "HOME": str(home), **extra}


def _air(root: Path, home: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return air_cli(args, cwd=root, env=_env(home, **extra))


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, Path]:
    root, home = tmp_path / "proj", tmp_path / "home"
    (root / "src").mkdir(parents=True)
    (home / ".air" / "agents").mkdir(parents=True)
    (root / "src" / "a.py").write_text("a = 1\n")
    (root / ".gitignore").write_text(".air/local/\ncas/\n")
    init_repo(root, message="init")
    (root / ".air" / "agents").mkdir(parents=True)
    (root / ".air" / "agents" / "strict.md").write_text(STRICT)
    (root / "batch.yaml").write_text(BATCH)
    (root / "cas").mkdir()
    return root, home


def _plan(root: Path, home: Path, *args: str) -> dict[str, Any]:
    done = _air(root, home, "run", "--plan", "batch.yaml", "--cassette", "cas", "--json", *args)
    assert done.returncode == 0, done.stderr
    plan: dict[str, Any] = json.loads(done.stdout)
    return plan


def test_agents_list_and_show(project: tuple[Path, Path]) -> None:
    root, home = project
    (home / ".air" / "agents" / "helper.md").write_text("---\nrole: executor\n---\nHelps.\n")
    (home / "far.md").write_text("far\n")
    os.symlink(home / "far.md", home / ".air" / "agents" / "far.md")
    listed = _air(root, home, "agents", "list")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["helper", "user", "executor"]
    assert lines[1].split()[:3] == ["strict", "project", "reviewer"]
    assert "far.md: is a symbolic link (never followed); skipped" in listed.stderr
    shown = _air(root, home, "agents", "show", "strict")
    assert shown.returncode == 0, shown.stderr
    assert "tools: fs.read, fs.search" in shown.stdout
    assert "MARK-PERSONA-STRICT" in shown.stdout
    assert "not trusted" in shown.stdout  # shown, but no task may use it yet
    unknown = _air(root, home, "agents", "show", "nosuch")
    assert unknown.returncode == 2
    assert "air: not_found: no agent file 'nosuch'" in unknown.stderr
    assert "known: helper, strict" in unknown.stderr
    assert "what to do: Create .air/agents/nosuch.md" in unknown.stderr
    assert "Traceback" not in unknown.stderr
    (root / "far.md").write_text("---\nrole: executor\n---\nOutside.\n")
    outside = _air(root, home, "agents", "show", "../../far")  # a path, never a name
    assert outside.returncode == 2
    assert "Outside" not in outside.stdout
    assert "An agent's name is its file's, NAME.md" in outside.stderr
    assert ".air/agents/../" not in outside.stderr


def test_the_plan_is_resolved_and_nothing_is_created(project: tuple[Path, Path]) -> None:
    root, home = project
    trust_project(root, home)
    before = sorted(
        p.relative_to(root).as_posix() for p in root.rglob("*") if ".git/" not in str(p)
    )
    plan = _plan(root, home, "--max-workers", "4")
    after = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if ".git/" not in str(p))
    assert after == before  # no session, no .air/local, no .air/shared, no worktree
    assert plan["type"] == "air.plan"
    assert plan["git_repo"] is True
    waves = [[t["id"] for t in wave] for wave in plan["waves"]]
    assert waves == [["a", "r2"], ["b", "r"]]  # b overlaps a's write area; r depends on a
    assert plan["conflicts"] == [
        {"task": "b", "after": "a", "why": "write areas overlap: src/* / src/a.py"}
    ]
    tasks = {t["id"]: t for wave in plan["waves"] for t in wave}
    assert tasks["a"]["workspace"] == "worktree"
    assert tasks["a"]["role"] == "executor"
    assert "fs.write" in tasks["a"]["tools"]
    assert tasks["a"]["agent"] is None
    strict = tasks["r"]
    assert strict["role"] == "reviewer"  # the file's role: the task names no type
    assert strict["workspace"] == "main"
    assert strict["agent"] == {
        "name": "strict",
        "source": "project",
        "path": str(root / ".air" / "agents" / "strict.md"),
    }
    assert strict["tools"] == ["fs.read", "fs.search"]
    assert "MARK-PERSONA-STRICT" in strict["prompts"]["system"]
    assert "MARK-PERSONA-STRICT" not in tasks["a"]["prompts"]["system"]
    assert "Review a" in strict["prompts"]["message"]
    # task fields > the agent file > the batch defaults
    assert (tasks["a"]["max_turns"], strict["max_turns"], tasks["r2"]["max_turns"]) == (9, 5, 7)

    text = _air(root, home, "run", "--plan", "batch.yaml", "--cassette", "cas")
    assert text.returncode == 0, text.stderr
    assert "4 tasks in 2 waves; nothing was started" in text.stdout
    assert "r [reviewer] Review a:" in text.stdout
    assert "tools: fs.read, fs.search (narrowed by the agent file)" in text.stdout
    assert not (root / ".air" / "local").exists()


def _descendants(pid: int) -> list[str]:
    """The command lines of ``pid``'s live descendants (``/proc/PID/task/*/children``)."""
    found: list[str] = []
    todo = [pid]
    while todo:
        current = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                children = Path(f"/proc/{current}/task/{tid}/children").read_text().split()
            except OSError:
                continue
            for child in map(int, children):
                try:
                    found.append(Path(f"/proc/{child}/cmdline").read_text().replace("\0", " "))
                except OSError:
                    continue
                todo.append(child)
    return found


def test_the_plan_starts_no_worker(project: tuple[Path, Path]) -> None:
    """Every process ``air run --plan`` starts, seen by a scan every few milliseconds: the
    run's preflights (git, the bubblewrap probe), never a worker (``air.roles``), not even
    the spare a real run starts first (IMPL-PLAN-1)."""
    root, home = project
    trust_project(root, home)
    proc = subprocess.Popen(
        [*AIR, "run", "--plan", "batch.yaml", "--cassette", "cas", "--json"],
        cwd=root,
        env=_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen: set[str] = set()
    while proc.poll() is None:
        seen.update(_descendants(proc.pid))
        time.sleep(0.005)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert json.loads(out)["type"] == "air.plan"
    assert not [c for c in seen if "air.roles" in c], seen
    assert not (root / ".air" / "local").exists()


def _refusal(root: Path, home: Path, mode: str) -> tuple[int, str]:
    done = _air(root, home, "run", mode, "batch.yaml", "--cassette", "cas")
    return done.returncode, done.stderr


@pytest.mark.slow
def test_a_batch_a_run_refuses_is_refused_by_the_plan_with_the_same_error(
    project: tuple[Path, Path],
) -> None:
    root, home = project
    # an untrusted project's agent file widens nothing: refused
    run = _refusal(root, home, "--headless")
    assert run[0] == 2
    assert "air: untrusted_config: batch.yaml:13: agent: untrusted project configuration" in run[1]
    assert ".air/agents/strict.md" in run[1]
    assert _refusal(root, home, "--plan") == run
    trust_project(root, home)
    # a tool the role lacks, and a tool air does not know: refused, never ignored
    for tool, why in (
        ("fs.write", "is not a tool of the reviewer"),
        ("web.get", "is not a tool air knows"),
    ):
        (root / ".air" / "agents" / "strict.md").write_text(
            STRICT.replace("[fs.read, fs.search]", f"[fs.read, {tool}]")
        )
        trust_project(root, home)
        run = _refusal(root, home, "--headless")
        assert run[0] == 2
        assert "air: validation_error: batch.yaml:13: " in run[1]
        assert f"tools: '{tool}' {why}" in run[1]
        assert "what to do: Keep tools within the reviewer's: fs.read, fs.list" in run[1]
        assert _refusal(root, home, "--plan") == run
    # a file added mid-session (after the trust) is not used until trusted
    (root / ".air" / "agents" / "strict.md").write_text(STRICT)
    trust_project(root, home)
    (root / ".air" / "agents" / "new.md").write_text("new\n")
    run = _refusal(root, home, "--headless")
    assert "untrusted_config" in run[1]
    assert _refusal(root, home, "--plan") == run
    assert not (root / ".air" / "local").exists()


def test_slash_plan_in_the_console_plans_a_batch_and_starts_nothing(
    project: tuple[Path, Path],
) -> None:
    """``/plan BATCH`` in the (plain) console: the same checks and plan as ``air run --plan``,
    said in the conversation; a refused batch is said with its kind; no task is created."""
    root, home = project
    trust_project(root, home)
    (root / "cas" / "main.jsonl").write_text("")
    (root / "cycle.yaml").write_text(
        "tasks:\n  - {id: x, title: X, depends_on: [y]}\n  - {id: y, title: Y, depends_on: [x]}\n"
    )
    proc = subprocess.Popen(
        [*AIR, "run", str(root), "--plain", "--cassette", "cas"],
        cwd=root,
        env=_env(home),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None
    seen: list[str] = []

    def wait_line(text: str) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            seen.append(line)
            if text in line:
                return
        raise AssertionError(f"never printed {text!r}: {''.join(seen)}")

    try:
        proc.stdin.write("/plan batch.yaml\n")
        proc.stdin.flush()
        wait_line("tools: fs.read, fs.search (narrowed by the agent file)")
        proc.stdin.write("/plan cycle.yaml\n")
        proc.stdin.flush()
        wait_line("dependency cycle: x -> y -> x")
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
    out = "".join(seen)
    assert "4 tasks in 2 waves; nothing was started" in out
    assert "/plan cycle.yaml: refused: validation_error:" in out
    from tests.headless import session_events

    assert not [e for e in session_events(root) if e["type"] == "task.created"]
