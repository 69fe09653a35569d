"""Issue 24 item 6 through the real ``air`` in tmux: a Markdown answer drawn with its structure
(IMPL-UI-9), the Main Agent played by the strict local server."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from air.testing.strict_servers import StrictServer
from tests.ui.real_air import KEY, ChatModel, air_in, git_repo, key_env, start
from tests.ui.test_terminals import _SGR, _colours
from tests.ui.tmux import Tmux

ANSWER = """# Release plan

Ship **today**, run `make check`, see [the guide](https://example.org/guide).

- build the wheel
- tag it
  - sign the tag

| step | minutes |
|------|--------:|
| test | 12 |

> keep the changelog short

```json:result
{"ok": true}
```
"""


def _answered(tmp_path: Path, **env: str) -> tuple[str, str]:
    """The screen (plain, and with its SGR attributes) once ``ANSWER`` is drawn in full."""
    home, root = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    src = git_repo(root)
    with StrictServer(api_key=KEY, model=ChatModel(ANSWER)) as server:
        tmux = Tmux(tmp_path, cols=120, rows=40)
        try:
            start(tmux, src, key_env(home, server.url, **env))
            tmux.wait_for(" IDLE ", timeout=30)
            tmux.type("plan the release")
            tmux.keys("Enter")
            tmux.wait_for("json:result (Ctrl-Y copies)", timeout=30)
            idle = "- IDLE -" if env.get("LANG") == "C" else "· IDLE ·"
            screen = tmux.wait_for(idle, timeout=30)  # the answer complete
            styled = tmux.styled()
            tmux.keys("C-d")
            assert tmux.wait_exit(timeout=30) == 0
        finally:
            tmux.close()
    return screen, styled


def _sgr(styled: str) -> set[str]:
    """Every SGR parameter drawn."""
    return {p for params in _SGR.findall(styled) for p in re.split("[;:]", params) if p}


@pytest.mark.slow
def test_a_markdown_answer_is_drawn_with_its_structure(tmp_path: Path) -> None:
    screen, _styled = _answered(tmp_path)
    for drawn in (
        "│air> Release plan",
        "│     ═════",
        "│     Ship today, run make check, see the guide",  # wrapped to the pane
        "│     (https://example.org/guide).",
        "│     • build the wheel",
        "│       ◦ sign the tag",
        "│     step │ minutes",
        "│     test │      12",
        "│     ▌ keep the changelog short",
        "│     ┌─ json:result (Ctrl-Y copies)",
        '│       {"ok": true}',
        "│     └─",
    ):
        assert drawn in screen, (drawn, screen)
    for raw in ("# Release", "**", "`make", "](", "```"):
        assert raw not in screen, raw


@pytest.mark.slow
def test_no_color_and_a_c_locale_keep_the_structure(tmp_path: Path) -> None:
    screen, styled = _answered(tmp_path, NO_COLOR="1", LANG="C", LC_ALL="", LC_CTYPE="")
    for drawn in (
        "|air> Release plan",
        "|     -----",
        "|     * build the wheel",
        "|       o sign the tag",
        "|     step | minutes",
        "|     -----+--------",
        "|     | keep the changelog short",
        "|     +- json:result (Ctrl-Y copies)",
    ):
        assert drawn in screen, (drawn, screen)
    assert sorted({c for c in screen if ord(c) > 127}) == []
    assert _colours(styled) == []
    assert {"1", "3", "4"} <= _sgr(styled)  # the structure in bold, italics, underline


@pytest.mark.slow
def test_the_plain_console_prints_the_answer_as_plain_markdown(tmp_path: Path) -> None:
    home, root = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    src = git_repo(root)
    with StrictServer(api_key=KEY, model=ChatModel(ANSWER)) as server:
        tmux = Tmux(tmp_path, cols=120, rows=40)
        try:
            tmux.start(air_in(src, pipe="plan the release\n"), key_env(home, server.url))
            assert tmux.wait_exit(timeout=60) == 0
            screen = tmux.screen()
        finally:
            tmux.close()
    lines = screen.split("\n")
    start_at = lines.index("air> Release plan")
    assert lines[start_at : start_at + 16] == [
        "air> Release plan",
        "",
        "Ship today, run `make check`, see the guide (https://example.org/guide).",
        "",
        "- build the wheel",
        "- tag it",
        "  - sign the tag",
        "",
        "step | minutes",
        "-----+--------",
        "test |      12",
        "",
        "> keep the changelog short",
        "",
        "```json:result",
        '{"ok": true}',
    ], screen
