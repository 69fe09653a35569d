"""Issue 24 item 6 through the real ``air`` in tmux: a Markdown answer drawn with its structure
(IMPL-UI-9), the Main Agent played by the strict local server."""

from __future__ import annotations

from pathlib import Path

import pytest

from air.testing.strict_servers import StrictServer
from tests.ui.real_air import KEY, ChatModel, git_repo, key_env, start
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


@pytest.mark.slow
def test_a_markdown_answer_is_drawn_with_its_structure(tmp_path: Path) -> None:
    home, root = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    src = git_repo(root)
    with StrictServer(api_key=KEY, model=ChatModel(ANSWER)) as server:
        tmux = Tmux(tmp_path, cols=120, rows=40)
        try:
            start(tmux, src, key_env(home, server.url))
            tmux.wait_for(" IDLE ", timeout=30)
            tmux.type("plan the release")
            tmux.keys("Enter")
            tmux.wait_for("┌─ json:result (Ctrl-Y copies)", timeout=30)
            screen = tmux.wait_for("· IDLE ·", timeout=30)  # the answer complete
            styled = tmux.styled()
            tmux.keys("C-d")
            assert tmux.wait_exit(timeout=30) == 0
        finally:
            tmux.close()
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
    assert "\x1b[1m" in styled or ";1m" in styled or "[1;" in styled  # bold drawn somewhere
