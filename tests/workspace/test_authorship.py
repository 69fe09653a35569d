"""Git like a colleague (issue 26 item 5, IMPL-GIT-4): air's commits in the user's project name
the user (with an ``air`` co-author trailer, or the ``air.author`` the user configures), are
signed when the user's global config says so, say the task's title and summary, and a landed
task's worktree and branch are gone. Real git, real ssh-keygen signing, a real headless run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from air.contracts.task import WorkspacePlan
from air.contracts.task import WorkspaceStrategy as WS
from air.workspace.authorship import Authorship, commit_message
from air.workspace.manager import WorkspaceManager
from tests.gitrepo import git, init_repo
from tests.headless import write_file_cassette
from tests.workspace.recorder import Events

_AIR_RUN = (sys.executable, "-m", "air.cli", "run", "--headless")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    (root / ".gitignore").write_text(".air/\n")
    return init_repo(root, message="init")


def _global(home: Path, *pairs: tuple[str, str]) -> None:
    for key, value in pairs:
        subprocess.run(
            ["git", "config", "--file", str(home / ".gitconfig"), key, value], check=True
        )


def _log(repo: Path, rev: str, fmt: str) -> str:
    return git(repo, "log", "-1", f"--format={fmt}", rev)


async def _land(repo: Path, title: str, summary: str) -> WorkspaceManager:
    mgr = WorkspaceManager(str(repo), Events())
    ref = await mgr.create_workspace(WorkspacePlan(task_id="t1", strategy=WS.WORKTREE))
    (Path(ref.path) / "a.txt").write_text("two\n")
    merged = await mgr.merge_workspace(ref.workspace_id, title=title, summary=summary)
    assert merged.status == "merged"
    await mgr.cleanup_workspace(ref.workspace_id)
    return mgr


async def test_commits_name_the_user_with_air_as_co_author_and_say_the_task(
    home: Path, repo: Path
) -> None:
    _global(home, ("user.name", "Ada Lovelace"), ("user.email", "ada@example.com"))
    await _land(repo, "Fix the parser", "The tokenizer dropped a trailing newline.")
    task = _log(repo, "HEAD^2", "%an <%ae>|%cn <%ce>")
    assert task == "Ada Lovelace <ada@example.com>|Ada Lovelace <ada@example.com>"
    body = _log(repo, "HEAD^2", "%B")
    assert body.splitlines()[0] == "Fix the parser"
    assert "The tokenizer dropped a trailing newline." in body
    assert "Air-Task: t1" in body
    assert "Co-authored-by: air <air@localhost>" in body
    assert _log(repo, "HEAD", "%s") == "Merge task t1: Fix the parser"
    assert _log(repo, "HEAD", "%an") == "Ada Lovelace"
    # the landed worktree and its branch are gone; nothing of the task is lost
    assert git(repo, "branch", "--list", "air/ws/*") == ""
    assert len(git(repo, "worktree", "list").splitlines()) == 1
    assert (repo / "a.txt").read_text() == "two\n"


async def test_the_project_identity_wins_and_air_author_names_the_author(
    home: Path, repo: Path
) -> None:
    _global(home, ("user.name", "Ada"), ("user.email", "ada@example.com"))
    _global(home, ("air.author", "air bot <bot@example.com>"))
    git(repo, "config", "user.email", "ada@work.example")  # the project's own identity
    await _land(repo, "Task", "done")
    assert _log(repo, "HEAD^2", "%an <%ae>|%ce") == "air bot <bot@example.com>|ada@work.example"
    assert "Co-authored-by" not in _log(repo, "HEAD^2", "%B")


async def test_without_any_identity_air_commits_as_itself(home: Path, repo: Path) -> None:
    await _land(repo, "Task", "done")
    assert _log(repo, "HEAD^2", "%an <%ae>") == "air <air@localhost>"
    assert "Co-authored-by" not in _log(repo, "HEAD^2", "%B")


async def test_signing_follows_the_global_config_and_never_a_program_the_repository_names(
    home: Path, repo: Path, tmp_path: Path
) -> None:
    key = home / "id_ed25519"
    await trio.run_process(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ada", "-f", str(key)]
    )
    _global(
        home,
        ("user.name", "Ada"),
        ("user.email", "ada@example.com"),
        ("commit.gpgSign", "true"),
        ("gpg.format", "ssh"),
        ("user.signingKey", str(key)),
    )
    marker = tmp_path / "evil-ran"
    evil = tmp_path / "evil.sh"
    evil.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    evil.chmod(0o755)
    git(repo, "config", "gpg.ssh.program", str(evil))  # the repository's own pick: ignored
    git(repo, "config", "gpg.program", str(evil))
    await _land(repo, "Signed task", "done")
    allowed = tmp_path / "allowed"
    allowed.write_text(f"ada@example.com {(home / 'id_ed25519.pub').read_text()}")
    check = ["-c", "gpg.ssh.program=ssh-keygen", "-c", f"gpg.ssh.allowedSignersFile={allowed}"]
    assert git(repo, *check, "log", "-1", "--format=%G?", "HEAD^2") == "G"
    assert git(repo, *check, "log", "-1", "--format=%G?", "HEAD") == "G"
    assert not marker.exists()


async def test_a_repository_asking_for_signing_does_not_make_air_sign(
    home: Path, repo: Path
) -> None:
    # only the user's global config turns signing on: a poisoned project cannot make every
    # commit fail (or run the user's gpg) by setting it
    _global(home, ("user.name", "Ada"), ("user.email", "ada@example.com"))
    git(repo, "config", "commit.gpgSign", "true")
    await _land(repo, "Task", "done")
    assert "gpgsig" not in git(repo, "cat-file", "commit", "HEAD^2")


def test_a_model_written_title_and_summary_cannot_reach_the_terminal() -> None:
    who = Authorship(name="Ada", email="ada@example.com")
    text = commit_message(
        "\x1b]0;pwned\x07Fix \u202eevil\x1b[31m " + "x" * 100,
        "line one\r\nline two\x1b[2J",
        {"Air-Task": "t1\x1b[0m"},
        who,
    )
    for hidden in ("\x1b", "\u202e", "\x07", "\r"):
        assert hidden not in text
    subject = text.splitlines()[0]
    assert subject.startswith("]0;pwnedFix evil[31m")
    assert len(subject) <= 72
    assert "line one\nline two[2J" in text
    assert text.rstrip().endswith("Air-Task: t1[0m\nCo-authored-by: air <air@localhost>")


def test_a_headless_run_commits_as_the_user_and_leaves_no_task_branch(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    _global(home, ("user.name", "Ada Lovelace"), ("user.email", "ada@example.com"))
    root = tmp_path / "proj"
    root.mkdir()
    (root / ".gitignore").write_text(".air/\nbatch.yaml\ncas/\n")
    (root / "a.txt").write_text("one\n")
    init_repo(root, message="init")
    (root / "cas").mkdir()
    write_file_cassette(root / "cas" / "w.jsonl", "out.txt", "hello\n", "Wrote the greeting.")
    (root / "batch.yaml").write_text(
        "tasks:\n  - id: w\n    title: Write the greeting\n    scope: {write_area: [out.txt]}\n"
    )
    env = {**os.environ, "HOME": str(home)}
    env.pop("GIT_CONFIG_GLOBAL", None)
    done = subprocess.run(
        [*_AIR_RUN, "batch.yaml", "--cassette", "cas", "--isolation", "worktree"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert (root / "out.txt").read_text() == "hello\n"
    assert _log(root, "HEAD^2", "%an|%s") == "Ada Lovelace|Write the greeting"
    assert "Wrote the greeting." in _log(root, "HEAD^2", "%b")
    assert "Co-authored-by: air <air@localhost>" in _log(root, "HEAD^2", "%b")
    assert git(root, "branch", "--list", "air/ws/*") == ""
    assert len(git(root, "worktree", "list").splitlines()) == 1
