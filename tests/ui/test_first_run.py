"""Issue 24 item 1: bare ``air`` just works in a git repository, with only a key set.

The real ``air`` in tmux, a fresh HOME, a git repository with no ``.air/``: the console opens
(the repository's top is made an air project, said in one line), answers, and quits. Outside
a git repository air says plainly what it needs (exit 2, nothing created).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from air.testing.strict_servers import StrictServer
from tests.ui.real_air import KEY, ChatModel, git_repo, key_env, start
from tests.ui.tmux import Tmux, processes_with


@pytest.mark.slow
def test_bare_air_in_a_fresh_repository_opens_the_console(tmp_path: Path) -> None:
    home, root = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    src = git_repo(root)
    with StrictServer(api_key=KEY, model=ChatModel("Hello! I am the Main Agent.")) as server:
        tmux = Tmux(tmp_path)
        try:
            start(tmux, src, key_env(home, server.url))
            screen = tmux.wait_for("· IDLE ·", timeout=30)
            assert "air: no air project here yet: making" in screen  # the status line
            tmux.type("hello")
            tmux.keys("Enter")
            tmux.wait_for("air> Hello! I am the Main Agent.", timeout=30)
            tmux.keys("C-d")  # Ctrl-D on an empty line quits
            assert tmux.wait_exit(timeout=30) == 0
            assert processes_with(str(tmp_path)) == []
        finally:
            tmux.close()
    assert server.rejected == [], [r.problem for r in server.rejected]
    stderr = (tmp_path / "stderr").read_text()
    note = f"air: no air project here yet: making {root} one (as `air run {root}` would)"
    assert stderr.splitlines()[0] == note
    assert "Traceback" not in stderr
    assert (root / ".air" / "shared" / "project.json").is_file()
    assert not (src / ".air").exists()
    # the second start finds the project: nothing is said about making one
    again = subprocess.run(
        [sys.executable, "-m", "air"],
        cwd=src, env={**os.environ, **key_env(home, server.url)}, capture_output=True,
        text=True, stdin=subprocess.DEVNULL, timeout=60,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "making" not in again.stderr
    assert len(os.listdir(root / ".air" / "local" / "sessions")) == 2


def test_bare_air_outside_a_git_repository_says_what_it_needs(tmp_path: Path) -> None:
    home, bare = tmp_path / "home", tmp_path / "bare"
    home.mkdir()
    bare.mkdir()
    out = subprocess.run(
        [sys.executable, "-m", "air"],
        cwd=bare,
        env={**os.environ, **key_env(home, "http://127.0.0.1:9")},
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert out.returncode == 2, out.stderr
    lines = out.stderr.splitlines()
    assert lines[0] == (
        f"air: not_found: {bare} is not inside a git repository, and no air project is here "
        "or above"
    )
    assert "run `git init` here" in lines[1]
    assert "Traceback" not in out.stderr
    assert not (bare / ".air").exists()


def test_bare_air_with_nothing_configured_says_no_project_was_made(tmp_path: Path) -> None:
    home, root = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    src = git_repo(root)
    no_provider = {k: "" for k in os.environ if k.endswith(("_API_KEY", "_BASE_URL", "_MODEL"))}
    out = subprocess.run(
        [sys.executable, "-m", "air"],
        cwd=src, env={**os.environ, **no_provider, "HOME": str(home)}, capture_output=True,
        text=True, stdin=subprocess.DEVNULL, timeout=60,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    lines = out.stderr.splitlines()
    assert (
        lines[0] == f"air: no air project here yet: making {root} one (as `air run {root}` would)"
    )
    assert lines[1].startswith("air: config_error: no model provider is configured")
    assert lines[-1] == f"air: {root} is left as it was: no air project was made"
    assert "Traceback" not in out.stderr
    assert not (root / ".air").exists()
