"""Issue 24 item 2: keys a person's fingers already know, through the real ``air`` in tmux.

Keys are sent with ``send-keys`` (Ctrl-J and Shift+Enter as the raw bytes a terminal sends:
``\\n`` and the kitty keyboard protocol's ``CSI 13;2u``; the wheel as an SGR mouse report)
and the screen is read with ``capture-pane``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from air.testing.strict_servers import StrictServer
from tests.ui.real_air import KEY, ChatModel, git_repo, key_env, start
from tests.ui.tmux import Tmux, processes_with

LONG = "\n".join(f"step {i} of the plan" for i in range(1, 41)) + "\nTHE END: all done."


def _input_lines(screen: str) -> list[str]:
    """The input box's lines (the last box on the screen)."""
    lines = screen.rstrip("\n").splitlines()
    top = max(i for i, line in enumerate(lines) if line.startswith("┌"))
    return [line.strip("│ ") for line in lines[top + 1 : -1]]


@pytest.mark.slow
def test_the_keys_of_a_readline_and_chat_user(tmp_path: Path) -> None:
    home, root = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    src = git_repo(root)
    with StrictServer(api_key=KEY, model=ChatModel(LONG)) as server:
        tmux = Tmux(tmp_path, cols=100, rows=22)
        try:
            start(tmux, src, key_env(home, server.url))
            tmux.wait_for(" IDLE ", timeout=30)

            # Ctrl-J and Shift+Enter add lines; Enter sends the three lines as one message
            tmux.type("first")
            tmux.raw(b"\n")
            tmux.type("second")
            tmux.raw(b"\x1b[13;2u")
            tmux.type("third")
            screen = tmux.wait_for("│third")
            assert _input_lines(screen)[:3] == ["> first", "second", "third"]
            tmux.keys("Enter")

            # the long answer: its middle folded, its end on the screen
            screen = tmux.wait_for("lines folded (Ctrl-O shows all)", timeout=30)
            assert "THE END: all done." in screen
            assert "you> first" not in screen  # scrolled off the small window

            # PageUp scrolls the conversation from the input line; the wheel scrolls it back
            tmux.keys("PageUp")
            tmux.keys("PageUp")
            screen = tmux.wait_for("you> first")
            assert "THE END" not in screen
            tmux.type("x")  # the focus never left the input
            tmux.wait_for("> x")
            for _ in range(10):
                tmux.raw(b"\x1b[<65;10;20M")  # the wheel, one notch down, over the input
            tmux.wait_for("THE END: all done.")
            tmux.type("y")
            tmux.wait_for("> xy")  # the wheel did not move the focus either

            # Ctrl-R finds the message sent; Enter takes it into the line
            tmux.keys("C-u")
            tmux.keys("C-r")
            tmux.type("seco")
            tmux.wait_for("(history search) 'seco':")
            tmux.keys("Enter")
            screen = tmux.wait_for("> first")
            assert "history search" not in screen

            # Ctrl-C at the idle prompt clears the whole input (and does not quit)
            tmux.keys("C-c")
            screen = tmux.wait_for("line cleared; Ctrl-C again (or Ctrl-D) quits")
            assert _input_lines(screen)[0] == ">"

            # Ctrl-W, Ctrl-A, Ctrl-E, Ctrl-U edit the line as readline does
            tmux.type("fix the calc")
            tmux.keys("C-w")
            tmux.keys("C-a")
            tmux.type("please ")
            screen = tmux.wait_for("> please fix the")
            assert _input_lines(screen)[0] == "> please fix the"
            tmux.keys("C-e")
            tmux.keys("C-u")
            tmux.wait_for("> please", gone=True)

            # ? on an empty line lists every key
            tmux.type("?")
            screen = tmux.wait_for("keys (Esc closes)")
            for key in ("Ctrl-D", "Ctrl-R", "PageUp / PageDown", "Shift-Enter"):
                assert key in screen
            tmux.keys("Escape")
            tmux.wait_for("keys (Esc closes)", gone=True)

            # one Ctrl-C at an idle prompt clears the line and says how to quit; a second quits
            tmux.type("half a thought")
            tmux.wait_for("> half a thought")
            tmux.keys("C-c")
            screen = tmux.wait_for("> half a thought", gone=True)
            assert "line cleared; Ctrl-C again (or Ctrl-D) quits" in screen
            tmux.keys("C-c")
            assert tmux.wait_exit(timeout=30) == 0
            assert processes_with(str(tmp_path)) == []
        finally:
            tmux.close()
    assert server.rejected == [], [r.problem for r in server.rejected]


@pytest.mark.slow
def test_ctrl_s_does_not_freeze_the_console(tmp_path: Path) -> None:
    """Ctrl-S (a save reflex) was the terminal's XOFF: the line discipline stopped every
    byte the console wrote until a Ctrl-Q the person did not know to press; the console
    looked hung. Flow control is off while it runs (the terminal's settings come back at its
    end)."""
    home, root = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    src = git_repo(root)
    with StrictServer(api_key=KEY, model=ChatModel("Hi.")) as server:
        tmux = Tmux(tmp_path, cols=100, rows=22)
        try:
            start(tmux, src, key_env(home, server.url))
            tmux.wait_for(" IDLE ", timeout=30)
            tmux.keys("C-s")
            tmux.type("still drawn")
            tmux.wait_for("> still drawn", timeout=5)
            tmux.keys("Enter")
            tmux.wait_for("air> Hi.", timeout=30)
            tmux.keys("C-d")
            assert tmux.wait_exit(timeout=30) == 0
        finally:
            tmux.close()
