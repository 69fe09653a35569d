"""``/compact`` in the REAL ``air`` console in tmux (issue #14, IMPL-COMPACT-2): after a few chat
turns with the Main Agent (the strict local server over HTTP), ``/help`` lists ``/compact``;
typed while an answer streams it is refused with a clear line; idle, ``/compact`` compacts the
session now: the compactor's call goes to the model, the outcome
(summary id, messages covered) is said in the conversation, and the session DB holds the
summary row while every original message stays."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

from air.testing.strict_servers import StrictServer
from air.testing.wire_replies import Reply
from tests.ui.test_console_e2e import KEY, _air, _project, _text
from tests.ui.tmux import Tmux, processes_with

TURNS = 4


class Model:
    """The Main Agent's turns in order; the compactor's chunk call answered apart."""

    def __init__(self) -> None:
        self.main = [
            reply
            for i in range(TURNS)
            for reply in (_text('{"intent": "chat"}'), _text(f"Answer number {i}."))
        ]
        self.main += [
            _text('{"intent": "chat"}'),
            _text("Once upon a time", " there was a story too long to wait for.", stall_after=4),
        ]
        self.compactor_calls = 0
        self._lock = threading.Lock()

    def __call__(self, wire: str, body: dict[str, Any]) -> Reply:
        with self._lock:
            if "Role: compactor" in json.dumps(body.get("system")):
                self.compactor_calls += 1
                return _text("The person greeted the agent; it answered.")
            return self.main.pop(0) if self.main else _text("Nothing more is scripted.")


def test_slash_compact_in_the_real_console(tmp_path: Path) -> None:
    root, home = tmp_path / "proj", tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "AIR_CONSOLE_KEY": KEY}
    model = Model()
    with StrictServer(api_key=KEY, model=model) as server:
        _project(root, server.url)
        tmux = Tmux(tmp_path)
        try:
            tmux.start(_air("run", str(root)), env)
            tmux.wait_for("IDLE", timeout=30)
            tmux.type("/help")
            tmux.keys("Enter")
            tmux.wait_for("compact the conversation now")
            tmux.keys("q")  # closes the help overlay
            tmux.wait_for("compact the conversation now", gone=True)
            for i in range(TURNS):
                tmux.type(f"hello {i}")
                tmux.keys("Enter")
                tmux.wait_for(f"air> Answer number {i}.", timeout=30)
                tmux.wait_for("· IDLE ·")
            # mid-turn (an answer stalls): refused with a clear line, nothing compacted
            tmux.type("tell me a long story")
            tmux.keys("Enter")
            tmux.wait_for("Once upon a time", timeout=30)
            tmux.type("/compact")
            tmux.keys("Enter")
            tmux.wait_for("refused: /compact waits for the Main Agent's current turn to end")
            tmux.keys("Escape")
            tmux.wait_for("interrupting the Main Agent's current turn")
            tmux.wait_for("· IDLE ·")
            assert model.compactor_calls == 0
            # idle: compacted now, the outcome said in the conversation
            tmux.type("/compact")
            tmux.keys("Enter")
            screen = tmux.wait_for("Compacted: summary sum_", timeout=30)
            flat = " ".join(screen.split())
            assert "covers 3 messages" in flat, screen  # 9 messages, the newest 6 kept
            tmux.keys("C-d")
            assert tmux.wait_exit(timeout=30) == 0
            assert processes_with(str(tmp_path)) == []
        finally:
            tmux.close()
    assert model.compactor_calls == 1
    assert server.rejected == [], [r.problem for r in server.rejected]
    [session] = os.listdir(root / ".air" / "local" / "sessions")
    db = next((root / ".air" / "local" / "sessions" / session).glob("*.db"))
    conn = sqlite3.connect(db)
    try:
        [(summary_id,)] = conn.execute("SELECT summary_id FROM summaries").fetchall()
        roles = [r for (r,) in conn.execute("SELECT role FROM messages ORDER BY rowid")]
    finally:
        conn.close()
    assert summary_id[:12] in flat  # the id said on screen is the row's
    assert roles.count("user") == TURNS + 1  # every original message stays
