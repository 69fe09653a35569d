"""Issue 24 items 8 and 9 through the real ``air`` console in tmux, offline on the shipped
calc cassettes: ``/cancel nosuch`` says no such task was cancelled; quitting leaves the
conversation's last messages on the terminal; the exit hint names the ``--cassette`` (and the
``--project``) the session ran with, and that exact command reopens it; ``air`` with no
argument in the project lists its earlier sessions and continues the one picked."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
from pathlib import Path

import pytest

from tests.ui.tmux import Tmux

EXAMPLE = Path(__file__).parents[2] / "examples" / "calc"
ANSWER = "calc is a small calculator"


def _env(home: Path) -> dict[str, str]:
    env = {k: "" for k in os.environ if k.endswith(("_API_KEY", "_BASE_URL"))}
    return {**env, "HOME": str(home)}


def _calc(tmp_path: Path) -> tuple[Path, Path]:
    root, home = tmp_path / "calc", tmp_path / "home"
    home.mkdir()
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", ".air"))
    return root, home


def _hint(stderr: str) -> str:
    found = re.search(r"Reopen it with `([^`]+)`", stderr)
    assert found is not None, stderr
    return found.group(1)


@pytest.mark.slow
def test_labels_the_tail_the_hint_and_the_list_of_sessions(tmp_path: Path) -> None:
    root, home = _calc(tmp_path)
    cassettes = root / "cassettes"
    air = [sys.executable, "-m", "air"]

    first = Tmux(tmp_path)
    try:
        first.start([*air, "run", str(root), "--cassette", str(cassettes)], _env(home))
        first.wait_for("IDLE", timeout=60)
        first.type("/cancel nosuch")
        first.keys("Enter")
        first.wait_for("no task nosuch: nothing cancelled (this session has no tasks)")
        assert "cancelling task nosuch" not in first.screen()
        first.type("what does calc do?")
        first.keys("Enter")
        first.wait_for(ANSWER, timeout=30)
        first.wait_for("· IDLE ·")
        first.type("/quit")
        first.keys("Enter")
        assert first.wait_exit(timeout=30) == 0
        # the console's screen is gone; its last messages stay on the terminal
        tail = first.wait_for("the conversation's last messages")
    finally:
        first.close()
    assert "you: what does calc do?" in tail
    assert f"air: {ANSWER}" in tail
    hint = _hint((tmp_path / "stderr").read_text())
    sid = hint.split()[2]
    assert sid.startswith("ses_")
    # a --cassette session is reopened with its cassette; from elsewhere, with its project
    assert shlex.split(hint) == [
        "air", "--session", sid, "--cassette", str(cassettes), "--project", str(root),
    ]  # fmt: skip

    again = Tmux(tmp_path)
    try:
        again.start([*air, *shlex.split(hint)[1:]], _env(home))
        again.wait_for(ANSWER, timeout=60)  # the same conversation, reopened
        again.wait_for("· IDLE ·")
        again.type("/quit")
        again.keys("Enter")
        assert again.wait_exit(timeout=30) == 0
    finally:
        again.close()

    # `air` with no argument in the project: the earlier session is offered
    picker = Tmux(tmp_path)
    try:
        picker.start([*air, "--project", str(root), "--cassette", str(cassettes)], _env(home))
        screen = picker.wait_for("which?", timeout=30)
        assert "earlier sessions of calc (newest first):" in screen
        assert re.search(
            rf"^  1  {sid}  \S+ \S+  0/0 tasks done  “what does calc do\?”$", screen, re.M
        )
        assert "Enter: a new session · 1: continue the last one · q: quit" in screen
        picker.type("7")
        picker.keys("Enter")
        picker.wait_for("no session '7' here: Enter, 1 or q")
        picker.type("1")
        picker.keys("Enter")
        picker.wait_for(ANSWER, timeout=60)  # continued, not a new session
        picker.wait_for("· IDLE ·")
        picker.type("/quit")
        picker.keys("Enter")
        assert picker.wait_exit(timeout=30) == 0
    finally:
        picker.close()
    assert _hint((tmp_path / "stderr").read_text()).split()[2] == sid
    sessions = sorted(p.name for p in (root / ".air" / "local" / "sessions").iterdir())
    assert sessions == [sid]  # reopening twice made no new session

    quits = Tmux(tmp_path)
    try:
        quits.start([*air, "--project", str(root), "--cassette", str(cassettes)], _env(home))
        quits.wait_for("which?", timeout=30)
        quits.type("q")
        quits.keys("Enter")
        assert quits.wait_exit(timeout=30) == 0
    finally:
        quits.close()
    assert sorted(p.name for p in (root / ".air" / "local" / "sessions").iterdir()) == [sid]
