"""examples/calc end to end on a thinking model (IMPL-THINK-1): real workers, the real
ProviderManager and both Anthropic transports (plain HTTP, the SDK) against the strict server
playing ``claude-opus-5-5``. Every reply starts with a signed thinking block (a redacted one in
each task's first reply, one more between text and a tool call); the server refuses a replayed
block that was altered or whose prefix changed, as the API does. Exit 0, 0 rejected requests,
every block back unchanged and in place, and no thinking text on the console or in
``air history``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from air.testing.cassette_model import THOUGHT, CassetteModel
from air.testing.strict_servers import StrictServer
from tests.forked_air import air_cli
from tests.headless import json_events
from tests.trusted import trust_project

EXAMPLE = Path(__file__).parents[2] / "examples" / "calc"
KEY = "zq81-e2e-key-7d0c1b5a9e3f4b2d8c6a1e0f9b7d5c3a"
MODEL = "claude-opus-5-5"
MODELS = (
    f"default: anthropic/{MODEL}\n"
    "providers:\n"
    "  anthropic:\n"
    "    kind: anthropic\n"
    "    base_url: {url}\n"
    "    auth_ref: AIR_E2E_KEY\n"
    "    transport: {transport}\n"
    "    models:\n"
    f"      {MODEL}:\n"
    "        context_window: 1000000\n"
    "        max_output_tokens: 128000\n"
    "        price: {{input: 4, output: 20}}\n"
)


def _air(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``air ARGS`` to its end, forked from the warm air (tests/forked_air.py); the workers
    it starts are real processes."""
    return air_cli(args, env=env, timeout=300)


def _thinking(body: dict[str, Any]) -> list[tuple[int, int, str]]:
    """Where a request carries thinking blocks: (message, block, type)."""
    return [
        (i, j, b["type"])
        for i, m in enumerate(body["messages"])
        for j, b in enumerate(m["content"] if isinstance(m["content"], list) else [])
        if b["type"] in ("thinking", "redacted_thinking")
    ]


@pytest.mark.parametrize("transport", ["http", "sdk"])
def test_calc_batch_on_a_thinking_model(transport: str, tmp_path: Path) -> None:
    root = tmp_path / "calc"
    home = tmp_path / "home"
    home.mkdir()
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", ".air"))
    scripts = tmp_path / "scripts"
    shutil.move(root / "cassettes", scripts)
    model = CassetteModel(scripts)
    with StrictServer(api_key=KEY, ceilings={MODEL: 128_000}, model=model) as server:
        (root / ".air" / "shared").mkdir(parents=True)
        (root / ".air" / "shared" / "models.yaml").write_text(
            MODELS.format(url=server.url, transport=transport)
        )
        trust_project(root, home)
        env = {**os.environ, "HOME": str(home), "AIR_E2E_KEY": KEY}
        args = ["run", "--headless", str(root / "batch.yaml"), "--project", str(root), "--json"]
        proc = _air(args, env)
        rejected = list(server.rejected)
        requests = list(server.requests)
    assert rejected == [], [r.problem for r in rejected]
    assert proc.returncode == 0, proc.stderr
    assert "completed: done 3/3" in proc.stderr
    assert len(requests) == 12
    # each task's n-th request replays the blocks of its n - 1 replies, in place
    for body in (r.body for r in requests):
        replies = sum(1 for m in body["messages"] if m["role"] == "assistant")
        found = _thinking(body)
        assert len([f for f in found if f[2] == "redacted_thinking"]) == min(replies, 1)
        assert len([f for f in found if f[1] == 0]) == replies, found
        assert all(body["messages"][i]["role"] == "assistant" for i, _, _ in found)
    completed = [e for e in json_events(proc.stdout) if e["type"] == "task.completed"]
    assert len(completed) == 3
    for event in completed:
        result = json.dumps(event["payload"]["worker_result"])
        assert "thinking about" not in result
        assert event["payload"]["worker_result"]["usage"]["cost_usd"] > 0
    history = _air(["history", "--project", str(root), "--all"], env)
    assert history.returncode == 0, history.stderr
    shown = THOUGHT.split("{")[0]
    assert shown not in proc.stderr
    assert shown not in history.stdout
    assert "redacted " not in proc.stderr + history.stdout
