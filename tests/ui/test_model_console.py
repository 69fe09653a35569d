"""Issue 24 item 4 under tmux: the model is always visible and recorded. ``air run PROJECT
--provider openai`` on a project whose default is Anthropic: the Main Agent's requests go to the
OpenAI wire too, the session row records ``openai`` / ``gpt-test``, the HUD shows it with the
context use and the cost, ``/model`` names it; reopened with ``air --session`` (no
``--provider``) the session keeps the recorded model, not today's default; ``/model
anthropic/...`` switches the Main Agent for what comes next and the session row follows."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from air.testing.strict_servers import StrictServer
from air.testing.wire_replies import Reply, blocks_sse
from tests.gitrepo import git
from tests.trusted import trust_project
from tests.ui.tmux import Tmux

KEY = "zq81-model-key-7c2d8c6a1e0f9b7d5c3a7d0c1b5a9e3f"
MODELS = (
    "default: anthropic/claude-sonnet-4-5\n"
    "providers:\n"
    "  anthropic:\n"
    "    kind: anthropic\n"
    "    base_url: {url}\n"
    "    auth_ref: AIR_MODEL_KEY\n"
    "    models:\n"
    "      claude-sonnet-4-5: {{context_window: 16000, max_output_tokens: 2048}}\n"
    "  openai:\n"
    "    kind: openai_compatible\n"
    "    base_url: {url}/v1\n"
    "    auth_ref: AIR_MODEL_KEY\n"
    "    models:\n"
    "      gpt-test: {{context_window: 8000, max_output_tokens: 1024}}\n"
)


class _Chat:
    """Classify as chat, then answer (the server counts the usage: its ``PromptCache``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._n = 0

    def __call__(self, wire: str, body: dict[str, Any]) -> Reply:
        with self._lock:
            self._n += 1
            text = '{"intent": "chat"}' if self._n % 2 else f"Answer {self._n // 2} on {wire}."
        return Reply(chunks=blocks_sse(wire, [("text", [text])], "end_turn"))


def _project(root: Path, url: str) -> None:
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    for args in (
        ["init", "-q"],
        ["config", "user.email", "t@example.com"],
        ["config", "user.name", "T"],
        ["add", "-A"],
        ["commit", "-qm", "start"],
    ):
        git(root, *args)
    (root / ".air" / "shared").mkdir(parents=True)
    (root / ".air" / "shared" / "models.yaml").write_text(MODELS.format(url=url))
    trust_project(root, root.parent / "home")


def _air(*args: str) -> list[str]:
    return [sys.executable, "-m", "air", *args]


def _session_row(root: Path) -> tuple[str, tuple[str, str]]:
    (session,) = os.listdir(root / ".air" / "local" / "sessions")
    db = sqlite3.connect(root / ".air" / "local" / "sessions" / session / "session.db")
    row = db.execute("SELECT model_provider_id, model_id FROM sessions").fetchone()
    db.close()
    return session, (row[0], row[1])


def _wait_ctx(tmux: Tmux) -> int:
    """The HUD's context use once the answer's turn has set it (``ctx N%``)."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        found = re.search(r"ctx (\d+)%", tmux.screen())
        if found:
            return int(found.group(1))
        time.sleep(0.05)
    raise AssertionError(f"no context use on the HUD:\n{tmux.screen()}")


def _answer_usages(root: Path) -> list[dict[str, int]]:
    """The usage the provider reported for each of the Main Agent's answers, in order."""
    (session,) = os.listdir(root / ".air" / "local" / "sessions")
    db = sqlite3.connect(root / ".air" / "local" / "sessions" / session / "session.db")
    rows = db.execute(
        "SELECT usage_json FROM messages WHERE role = 'assistant' ORDER BY event_seq"
    ).fetchall()
    db.close()
    return [json.loads(r[0]) for r in rows if r[0]]


def _percent(usage: dict[str, int], window: int) -> int:
    used = sum(
        int(usage.get(k) or 0)
        for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    )
    assert used > 0
    return min(100, round(100 * used / window))


@pytest.mark.slow
def test_provider_openai_moves_the_main_agent_is_recorded_shown_and_resumed(
    tmp_path: Path,
) -> None:
    root, home = tmp_path / "proj", tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "AIR_MODEL_KEY": KEY}
    with StrictServer(api_key=KEY, model=_Chat()) as server:
        _project(root, server.url)
        tmux = Tmux(tmp_path, cols=200)
        try:
            tmux.start(_air("run", str(root), "--provider", "openai"), env)
            screen = tmux.wait_for("IDLE", timeout=30)
            assert "openai/gpt-test" in screen
            assert "ctx -" in screen
            tmux.type("hello")
            tmux.keys("Enter")
            screen = tmux.wait_for("Answer 1 on openai.", timeout=30)
            first_ctx = _wait_ctx(tmux)
            tmux.wait_for("openai/gpt-test · IDLE", timeout=30)
            # the cost: gpt-test has no price in the catalogue, so it is unknown, never $0.00
            # (the usage ledger counts the Main Agent's calls, IMPL-USAGE-1)
            assert "tok unknown" in screen
            tmux.type("/model")
            tmux.keys("Enter")
            tmux.wait_for("openai / gpt-test")
            tmux.keys("C-d")
            assert tmux.wait_exit(timeout=30) == 0
        finally:
            tmux.close()
        assert {r.path for r in server.requests} == {"/v1/chat/completions"}
        session, recorded = _session_row(root)
        assert recorded == ("openai", "gpt-test")

        again = Tmux(tmp_path, cols=200)
        try:
            again.start(_air("--session", session, "--project", str(root)), env)
            screen = again.wait_for("IDLE", timeout=30)
            assert "openai/gpt-test" in screen
            assert "claude" not in screen
            again.type("hello again")
            again.keys("Enter")
            again.wait_for("Answer 2 on openai.", timeout=30)

            # /model switches for what comes next; a model not configured is refused
            again.type("/model nope/x")
            again.keys("Enter")
            again.wait_for("refused: model 'nope/x' is not a configured provider_id/model_id")
            again.type("/model anthropic/claude-sonnet-4-5")
            again.keys("Enter")
            again.wait_for("Model: anthropic/claude-sonnet-4-5 from now on")
            screen = again.wait_for("anthropic/claude-sonnet-4-5 · IDLE")
            assert "ctx -" in screen  # the new model's use is known after its first turn
            again.type("hello once more")
            again.keys("Enter")
            again.wait_for("Answer 3 on anthropic.", timeout=30)
            last_ctx = _wait_ctx(again)
            again.keys("C-d")
            assert again.wait_exit(timeout=30) == 0
        finally:
            again.close()
    assert server.rejected == [], [r.problem for r in server.rejected]
    paths = [r.path for r in server.requests]
    assert paths == ["/v1/chat/completions"] * 4 + ["/v1/messages"] * 2
    assert _session_row(root)[1] == ("anthropic", "claude-sonnet-4-5")
    first, *_, last = _answer_usages(root)
    assert first_ctx == _percent(first, 8000)
    assert last_ctx == _percent(last, 16000)
