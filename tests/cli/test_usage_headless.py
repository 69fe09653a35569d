"""Issue 24 item 5 headless: ``air run --headless --json`` against the strict local server.
The run's ``--json`` stream carries one ``model.usage.recorded`` per request the server answered
(IMPL-USAGE-1), with the prompt tokens the server reported; the ``air.summary`` record, the
task's end line and the last line on stderr all state the sums of those same events.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from air.testing.strict_servers import StrictServer
from air.testing.wire_replies import Reply, blocks_sse
from tests.headless import json_events, review_project, review_verdict, run_batch_json

KEY = "zq81-usage-key-0b2d8c6a1e0f9b7d5c3a7d0c1b5a9e3f"


def _reply(wire: str, body: object) -> Reply:
    return Reply(chunks=blocks_sse(wire, [("text", [review_verdict()])], "end_turn"))


@pytest.mark.slow
def test_the_headless_summary_and_lines_read_the_usage_ledger(tmp_path: Path) -> None:
    root, home = review_project(tmp_path)
    with StrictServer(api_key=KEY, model=_reply) as server:
        env = {
            **{k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")},
            "HOME": str(home),
            "ANTHROPIC_API_KEY": KEY,
            "ANTHROPIC_BASE_URL": server.url,
        }
        proc = run_batch_json(root, env)
    assert proc.returncode == 0, proc.stderr
    assert server.rejected == []
    ledger = [e["payload"] for e in json_events(proc.stdout) if e["type"] == "model.usage.recorded"]
    assert len(ledger) == len(server.requests) == len(server.usages) >= 1
    assert [e["input_tokens"] for e in ledger] == [u["input_tokens"] for u in server.usages]
    assert {e["purpose"] for e in ledger} == {"task"}
    assert {e["task_id"] for e in ledger} == {"review-notes"}
    tokens = sum(e["input_tokens"] + e["output_tokens"] for e in ledger)
    usd = sum(e["cost_usd"] for e in ledger)
    assert usd > 0  # the catalogue prices the default model
    [summary] = [json.loads(line) for line in proc.stdout.splitlines() if '"air.summary"' in line]
    usage = summary["usage"]
    assert (usage["calls"], usage["tokens"]) == (len(ledger), tokens)
    assert usage["cost_usd"] == round(usd, 6)
    assert usage["by_purpose"]["task"]["calls"] == len(ledger)
    assert usage["by_wave"]["1"]["tokens"] == tokens  # summed per wave too
    assert summary["tasks"]["review-notes"]["tokens"] == tokens
    lines = proc.stderr.splitlines()
    assert any("review-notes completed" in x and f"{tokens} tok, ${usd:.4f})" in x for x in lines)
    assert lines[-1].endswith(f"cost ${usd:.4f}"), lines[-1]
