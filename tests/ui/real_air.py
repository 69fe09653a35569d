"""The real ``air`` console in tmux on a fresh git repository, with only a key set.

A fresh HOME, ``ANTHROPIC_API_KEY`` and ``ANTHROPIC_BASE_URL`` pointing at the strict local
server (the real anthropic SDK over HTTP on 127.0.0.1), no models.yaml, no ``.air/``: what a
person who just installed air has. ``ChatModel`` plays the Main Agent's replies in order
(each message: its classification, then its answer).
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any

from air.testing.wire_replies import Reply, blocks_sse
from tests.gitrepo import git
from tests.ui.tmux import Tmux

KEY = "zq81-first-run-key-7c1e5a9b3d2f4e6a8b0c1d2e3f4a5b6c"


def text_reply(*pieces: str) -> Reply:
    return Reply(chunks=blocks_sse("anthropic", [("text", list(pieces))], "end_turn", model="c"))


class ChatModel:
    """The Main Agent's turns: for each message, ``{"intent": "chat"}`` then its answer."""

    def __init__(self, *answers: str) -> None:
        self.replies: list[Reply] = []
        for answer in answers:
            self.replies += [text_reply('{"intent": "chat"}'), text_reply(answer)]
        self._lock = threading.Lock()

    def __call__(self, wire: str, body: dict[str, Any]) -> Reply:
        with self._lock:
            return self.replies.pop(0) if self.replies else text_reply("Nothing more.")


def git_repo(root: Path) -> Path:
    """A git repository with one commit and a ``src/`` directory; returns ``src``."""
    (root / "src").mkdir(parents=True)
    (root / "src" / "calc.py").write_text("x = 1\n")
    for args in (
        ["init", "-q"],
        ["config", "user.email", "t@example.com"],
        ["config", "user.name", "T"],
        ["add", "-A"],
        ["commit", "-qm", "start"],
    ):
        git(root, *args)
    return root / "src"


def key_env(home: Path, url: str, **extra: str) -> dict[str, str]:
    """Only a key set: every other provider variable emptied, a fresh HOME."""
    env = {k: "" for k in os.environ if k.endswith(("_API_KEY", "_BASE_URL", "_MODEL"))}
    env.update(HOME=str(home), ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=url)
    env.pop("NO_COLOR", None)
    env.update(extra)
    return env


def air_in(cwd: Path, *args: str, pipe: str | None = None, term: str | None = None) -> list[str]:
    """``air ARGS`` run in ``cwd`` (the tmux window starts in the repository of air);
    ``pipe``: its stdin is a pipe that gives this text, then ends; ``term``: the TERM it sees
    (tmux sets its own in the window)."""
    quoted = " ".join(_q(a) for a in [sys.executable, "-m", "air", *args])
    if term is not None:
        quoted = f"env TERM={_q(term)} {quoted}"
    if pipe is not None:
        return ["sh", "-c", f"cd {_q(str(cwd))} && printf %s {_q(pipe)} | {quoted}"]
    return ["sh", "-c", f"cd {_q(str(cwd))} && exec {quoted}"]


def _q(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def start(tmux: Tmux, cwd: Path, env: dict[str, str], *args: str, term: str | None = None) -> None:
    tmux.start(air_in(cwd, *args, term=term), env)


__all__ = ["KEY", "ChatModel", "air_in", "git_repo", "key_env", "start", "text_reply"]
