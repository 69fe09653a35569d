"""Issue 24 item 5 in the REAL ``air`` console under tmux: every model call is counted.

The issue's words: "After 8 chat turns and 2 compactions the HUD still showed ``0tok $0.00``".
Here the person has 8 chat turns with the Main Agent (each a classification and an answer) and
compacts twice with ``/compact``, against the strict local server, which reports each call's
usage. The session's log holds one ``model.usage.recorded`` per request the server answered
(IMPL-USAGE-1): 16 of the Main Agent, 2 of compaction, with exactly the prompt tokens the server
reported; the HUD shows their sum and a cost (the catalogue's price), ``/cost`` lists both
parts, and ``air report --html`` of the session reads the same ledger.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from air.testing.strict_servers import StrictServer
from air.testing.wire_replies import Reply
from tests.ui.test_console_e2e import KEY, _air, _project, _text
from tests.ui.tmux import Tmux

TURNS = 8


class Model:
    """Each chat turn: classified as chat, then answered; a compactor's call answered apart."""

    def __init__(self) -> None:
        self.main = [
            reply
            for i in range(TURNS)
            for reply in (_text('{"intent": "chat"}'), _text(f"Answer number {i}."))
        ]
        self.compactor_calls = 0
        self._lock = threading.Lock()

    def __call__(self, wire: str, body: dict[str, Any]) -> Reply:
        with self._lock:
            if "Role: compactor" in json.dumps(body.get("system")):
                self.compactor_calls += 1
                return _text("The person greeted the agent; it answered.")
            return self.main.pop(0) if self.main else _text("Nothing more is scripted.")


def _ledger(root: Path) -> tuple[str, list[dict[str, Any]]]:
    [session] = os.listdir(root / ".air" / "local" / "sessions")
    db = sqlite3.connect(root / ".air" / "local" / "sessions" / session / "session.db")
    try:
        rows = db.execute(
            "SELECT payload_json FROM events WHERE type = 'model.usage.recorded' ORDER BY seq"
        ).fetchall()
    finally:
        db.close()
    return session, [json.loads(r[0]) for r in rows]


def _chat(tmux: Tmux, first: int) -> None:
    for i in range(first, first + TURNS // 2):
        tmux.type(f"hello {i}")
        tmux.keys("Enter")
        tmux.wait_for(f"air> Answer number {i}.", timeout=30)
        tmux.wait_for("· IDLE ·")


def _compact(tmux: Tmux, model: Model, n: int) -> None:
    """``/compact``, then wait for the n-th compaction to end and the Main Agent to be IDLE."""
    tmux.type("/compact")
    tmux.keys("Enter")
    deadline = time.monotonic() + 30
    while model.compactor_calls < n and time.monotonic() < deadline:
        time.sleep(0.05)
    assert model.compactor_calls == n, tmux.screen()
    # the n-th compaction (a task of its own) has ended: its call is in the ledger by then
    tmux.wait_for(f"tasks {n}/{n} done", timeout=30)
    tmux.wait_for("· IDLE ·")


@pytest.mark.slow
def test_eight_chat_turns_and_two_compactions_are_counted_everywhere(tmp_path: Path) -> None:
    root, home = tmp_path / "proj", tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "AIR_CONSOLE_KEY": KEY}
    model = Model()
    with StrictServer(api_key=KEY, model=model) as server:
        _project(root, server.url)
        tmux = Tmux(tmp_path, cols=220, rows=50)
        try:
            tmux.start(_air("run", str(root)), env)
            tmux.wait_for("IDLE", timeout=30)
            _chat(tmux, 0)
            _compact(tmux, model, 1)
            _chat(tmux, TURNS // 2)
            _compact(tmux, model, 2)
            screen = tmux.wait_for("· IDLE ·")
            hud = next(line for line in screen.splitlines() if "tok " in line and "air ·" in line)
            found = re.search(r"(\d+(?:\.\d)?k?)tok (\$\d+\.\d\d|unknown)", hud)
            assert found is not None, hud
            tmux.type("/cost")
            tmux.keys("Enter")
            cost = " ".join(tmux.wait_for("compaction: 2 calls", timeout=15).split())
            tmux.keys("C-d")
            assert tmux.wait_exit(timeout=30) == 0
        finally:
            tmux.close()
    assert server.rejected == [], [r.problem for r in server.rejected]
    assert model.compactor_calls == 2
    session, ledger = _ledger(root)
    # one ledger entry per call the server answered, in the order it answered them
    assert len(ledger) == len(server.requests) == len(server.usages) == 2 * TURNS + 2
    assert [e["purpose"] for e in ledger].count("main_agent") == 2 * TURNS
    assert [e["purpose"] for e in ledger].count("compaction") == 2
    assert [e["input_tokens"] for e in ledger] == [u["input_tokens"] for u in server.usages]
    assert all(e["output_tokens"] > 0 and e["cost_usd"] for e in ledger)
    tokens = sum(e["input_tokens"] + e["output_tokens"] for e in ledger)
    usd = sum(e["cost_usd"] for e in ledger)
    # the HUD: the ledger's sum and a cost, never "0tok $0.00"
    shown = f"{tokens / 1000:.1f}k" if tokens >= 1000 else str(tokens)
    assert found.groups() == (shown, f"${usd:.2f}"), hud
    assert f"total: {2 * TURNS + 2} model calls, {tokens} tokens" in cost
    assert f"Main Agent: {2 * TURNS} calls" in cost
    # the HTML report reads the same ledger
    out = tmp_path / "report.html"
    done = subprocess.run(
        _air("report", "--project", str(root), "--session", session, "--html", str(out)),
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    page = out.read_text()
    assert f"{tokens} tokens" in page
    assert f'<tr data-purpose="main_agent"><td>Main Agent</td><td>{2 * TURNS}</td>' in page
    assert '<tr data-purpose="compaction"><td>compaction</td><td>2</td>' in page
    # summed per turn: each of the 8 turns made its classification and its answer
    assert page.count('<tr data-turn="') == TURNS
    assert (
        len(re.findall(r'<tr data-turn="msg_\w+"><td>turn \d \(msg_\w+\)</td><td>2</td>', page))
        == TURNS
    )
