"""Issue 24 item 7: terminals that are not the author's, through the real ``air`` in tmux.

A pipe on stdin (no ``--plain``): the plain console, which waits for the answer at the end of
its input. ``TERM=dumb``: the plain console. ``LANG=C``: ASCII drawing only. ``NO_COLOR`` at
80x24 with a permission prompt waiting: no colour at all ("risk: medium" is not green), the
HUD still says a prompt waits, the selected row of the task tree is in reverse video.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from air.testing.strict_servers import StrictServer
from tests.ui.real_air import KEY, ChatModel, air_in, git_repo, key_env, start
from tests.ui.test_console_e2e import PLAN, ConsoleModel, _spec, _text, _worker_scripts
from tests.ui.tmux import Tmux, processes_with

_SGR = re.compile(r"\x1b\[([0-9;:]*)m")


def _colours(styled: str) -> list[str]:
    """The SGR parameters that set a colour (30-37, 40-47, 90-97, 100-107, 38/48 ...)."""
    found = []
    for params in _SGR.findall(styled):
        for p in filter(None, re.split("[;:]", params)):
            if p and (
                p in ("38", "48") or (int(p) // 10 in (3, 4, 9, 10) and p not in ("39", "49"))
            ):
                found.append(params)
    return found


@pytest.mark.slow
def test_a_pipe_on_stdin_gets_the_plain_console_which_waits_for_the_answer(
    tmp_path: Path,
) -> None:
    home, root = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    src = git_repo(root)
    with StrictServer(api_key=KEY, model=ChatModel("Hello from the pipe.")) as server:
        tmux = Tmux(tmp_path, cols=120, rows=30)
        try:
            tmux.start(air_in(src, pipe="hello\n"), key_env(home, server.url))
            assert tmux.wait_exit(timeout=60) == 0
            screen = tmux.screen()
        finally:
            tmux.close()
    assert "input ended: waiting for the answer" in screen
    assert "air> Hello from the pipe." in screen
    stderr = (tmp_path / "stderr").read_text()
    assert "air: stdin is not a terminal: the plain console (--plain)" in stderr
    assert "Traceback" not in stderr
    assert processes_with(str(tmp_path)) == []


@pytest.mark.slow
def test_term_dumb_gets_the_plain_console(tmp_path: Path) -> None:
    home, root = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    src = git_repo(root)
    with StrictServer(api_key=KEY, model=ChatModel("Hello, dumb terminal.")) as server:
        tmux = Tmux(tmp_path, cols=100, rows=30)
        try:
            start(tmux, src, key_env(home, server.url), term="dumb")
            tmux.type("hello")
            tmux.keys("Enter")
            screen = tmux.wait_for("air> Hello, dumb terminal.", timeout=30)
            assert "air · " not in screen  # no HUD: lines, not a screen
            tmux.type("/quit")
            tmux.keys("Enter")
            assert tmux.wait_exit(timeout=30) == 0
        finally:
            tmux.close()
    stderr = (tmp_path / "stderr").read_text()
    assert "air: TERM=dumb cannot draw a screen: the plain console (--plain)" in stderr


@pytest.mark.slow
def test_a_c_locale_gets_ascii_drawing(tmp_path: Path) -> None:
    home, root = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    src = git_repo(root)
    env = key_env(home, "", LANG="C", LC_ALL="", LC_CTYPE="")
    with StrictServer(api_key=KEY, model=ChatModel("Plain ASCII here.")) as server:
        env["ANTHROPIC_BASE_URL"] = server.url
        tmux = Tmux(tmp_path, cols=100, rows=30)
        try:
            start(tmux, src, env)
            tmux.wait_for(" IDLE ", timeout=30)
            tmux.type("hello")
            tmux.keys("Enter")
            screen = tmux.wait_for("air> Plain ASCII here.", timeout=30)
            assert "- conversation -" in screen
            odd = sorted({c for c in screen if ord(c) > 127})
            assert odd == [], (odd, screen)
            tmux.keys("C-d")
            assert tmux.wait_exit(timeout=30) == 0
        finally:
            tmux.close()


def _one_asking_task(scripts: Path) -> ConsoleModel:
    _worker_scripts(scripts)
    model = ConsoleModel(scripts)
    plan = {**PLAN, "tasks": [_spec("ask", "Fetch the page", "a.txt")]}
    model.main = [_text('{"intent": "task"}'), _text(json.dumps(plan))]
    return model


@pytest.mark.slow
def test_no_color_at_80x24_with_a_prompt_waiting(tmp_path: Path) -> None:
    home, root, scripts = tmp_path / "home", tmp_path / "proj", tmp_path / "scripts"
    home.mkdir()
    src = git_repo(root)
    for name in ("a.txt", "b.txt", "c.txt"):
        (root / name).write_text(name)
    from tests.gitrepo import git

    git(root, "add", "-A")
    git(root, "commit", "-qm", "files")
    with StrictServer(api_key=KEY, model=_one_asking_task(scripts)) as server:
        tmux = Tmux(tmp_path, cols=80, rows=24)
        try:
            start(tmux, src, key_env(home, server.url, NO_COLOR="1"))
            tmux.wait_for(" IDLE ", timeout=30)
            tmux.type("change the project")
            tmux.keys("Enter")
            screen = tmux.wait_for("permission needed", timeout=60)
            assert "1 prompt waiting" in screen.splitlines()[0]
            assert "risk: medium" in screen
            styled = tmux.styled()
            risk = next(line for line in styled.splitlines() if "risk: " in line)
            assert _colours(styled) == [], (_colours(styled), risk)
            time.sleep(0.5)  # past the prompt's guard
            tmux.keys("1")
            tmux.wait_for("permission needed", gone=True)
            tmux.wait_for("completed", timeout=60)
            tmux.keys("Tab")  # the task tree: its selected row
            tmux.wait_for("Fetch the page")
            deadline = time.monotonic() + 10
            row = ""
            while time.monotonic() < deadline:
                row = next(
                    (x for x in tmux.styled().splitlines() if "#1 Fetch" in _SGR.sub("", x)), ""
                )
                if any("7" in p.split(";") for p in _SGR.findall(row)):
                    break
                time.sleep(0.1)
            assert any("7" in p.split(";") for p in _SGR.findall(row)), repr(row)
            assert _SGR.sub("", row.split("\x1b[7m", 1)[1]).startswith("✓ #1 Fetch the page")
            assert _colours(tmux.styled()) == []
            tmux.keys("C-d")
            assert tmux.wait_exit(timeout=30) == 0
        finally:
            tmux.close()
    assert server.rejected == [], [r.problem for r in server.rejected]
