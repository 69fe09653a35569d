"""End to end: a real ``air run --headless`` whose workers (cassettes through the real tools and
sandbox) write tracked files, and one of them a file the project's ``.gitignore`` names. The
tracked changes merge; the ignored file does not, and every front end of a run says so (the
progress line, ``--json``'s ``workspace.merge.completed``, ``--junit``, ``air history`` and
``air report``); a copy of it is kept in ``.air/local/left-out`` and the worktree goes. The
other task's command left an ignored log: nothing is said of it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.cassette_turns import done_turn, tool_turn
from tests.forked_air import air_cli
from tests.gitrepo import git
from tests.headless import json_events
from tests.trusted import trust_project

BATCH = """version: 1
tasks:
  - id: settings
    title: Write the settings
    scope: {write_area: ["conf/**"]}
  - id: checks
    title: Run the checks
    scope: {write_area: ["conf/**"]}
    depends_on: [settings]
"""
NOTE = "not merged, git ignores it: conf/local.cfg"


@pytest.mark.slow
def test_every_front_end_says_what_git_ignores_was_not_merged(tmp_path: Path) -> None:
    root, home = tmp_path / "proj", tmp_path / "home"
    (root / "conf").mkdir(parents=True)
    home.mkdir()
    (root / "conf" / "app.cfg").write_text("a = 1\n")
    (root / ".gitignore").write_text("cas/\n*.yaml\n.air/local/\nlocal.cfg\n*.log\nreport.*\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    (root / "batch.yaml").write_text(BATCH)
    (root / "cas").mkdir()
    turns = [tool_turn("1", "fs.write", path="conf/app.cfg", content="a = 2\n")]
    turns += [tool_turn("2", "fs.write", path="conf/local.cfg", content="key = mine\n")]
    (root / "cas" / "settings.jsonl").write_text("\n".join([*turns, done_turn()]) + "\n")
    turns = [tool_turn("3", "shell.run", command="echo checked > conf/local.cfg.log; touch conf/b")]
    (root / "cas" / "checks.jsonl").write_text("\n".join([*turns, done_turn()]) + "\n")
    trust_project(root, home)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env = {k: v for k, v in env.items() if not k.startswith("AIR_")}
    env["HOME"] = str(home)
    args = ["run", "--headless", "batch.yaml", "--cassette", "cas", "--json"]
    proc = air_cli([*args, "--junit", "report.xml"], cwd=root, env=env, timeout=180)
    assert proc.returncode == 0, proc.stderr

    # merged: the tracked change; not merged: the ignored file
    assert (root / "conf" / "app.cfg").read_text() == "a = 2\n"
    assert not (root / "conf" / "local.cfg").exists()
    assert (root / "conf" / "b").exists()
    assert not (root / "conf" / "local.cfg.log").exists()
    events = json_events(proc.stdout)
    completed = [e["payload"] for e in events if e["type"] == "workspace.merge.completed"]
    assert completed[0]["left_out"] == ["conf/local.cfg"]
    assert completed[0]["left_out_count"] == 1
    assert "left_out" not in completed[1]  # its command's log: not its tools' writing
    worktrees = [Path(e["payload"]["path"]) for e in events if e["type"] == "workspace.created"]
    assert not any(w.exists() for w in worktrees)  # landed: gone at once, as ever
    kept = Path(completed[0]["left_out_dir"])
    assert kept.parent == root / ".air" / "local" / "left-out"
    assert (kept / "conf" / "local.cfg").read_text() == "key = mine\n"  # a copy for the user
    assert "checks merged" not in proc.stderr

    assert f"settings merged; {NOTE} (a copy is in {kept} for 7 days)" in proc.stderr
    assert NOTE in (root / "report.xml").read_text()
    history = air_cli(["history", "--all"], cwd=root, env=env)
    assert history.returncode == 0, history.stderr
    assert NOTE in history.stdout
    report = air_cli(["report", "--html", "report.html"], cwd=root, env=env)
    assert report.returncode == 0, report.stderr
    assert f'<p class="left-out">{NOTE}</p>' in (root / "report.html").read_text()
