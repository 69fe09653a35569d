"""`air run --headless` with a provider from models.yaml: real worker processes, the real
ProviderManager and httpx against an OpenAI-compatible server on 127.0.0.1 (no cassette). The
key named by auth_ref reaches the server and no file air wrote."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.headless import json_events, review_project, review_verdict, run_batch_json
from tests.llm.servers import LocalServer, Reply, Turn, openai_sse
from tests.trusted import trust_project

KEY = "sk-air-canary-4b1d2f9e7c3a5b6d"


def test_headless_run_talks_to_the_configured_provider(tmp_path: Path) -> None:
    root, home = review_project(tmp_path)
    with LocalServer() as server:
        (root / ".air" / "shared" / "models.yaml").write_text(
            "default: local/gpt-test\n"
            "providers:\n"
            "  local:\n"
            "    kind: openai_compatible\n"
            f"    base_url: {server.url}/v1\n"
            "    auth_ref: AIR_TEST_PROVIDER_KEY\n"
            "    models:\n"
            "      gpt-test: {context_window: 32768, max_output_tokens: 4096}\n"
        )
        trust_project(root, home)
        server.push(
            Reply(
                chunks=openai_sse(
                    Turn(tool=("call_1", "fs_read", ['{"path": "notes.txt"}']), stop="tool_use")
                )
            ),
            Reply(chunks=openai_sse(Turn(text=[review_verdict()]))),
        )
        env = {**os.environ, "HOME": str(home), "AIR_TEST_PROVIDER_KEY": KEY}
        proc = run_batch_json(root, env)
        requests = list(server.requests)
        rejected = list(server.rejected)
    assert proc.returncode == 0, proc.stderr
    assert len(requests) == 2
    first = requests[0]
    assert first.path == "/v1/chat/completions"
    assert first.headers.get("authorization") == f"Bearer {KEY}"
    assert first.body["model"] == "gpt-test"
    # fs.read goes out by its API-legal name; the model's call of it came back as fs.read
    assert any(t["function"]["name"] == "fs_read" for t in first.body["tools"])
    assert rejected == []
    # the second turn carries the tool result the parent's fs.read produced
    tool_messages = [m for m in requests[1].body["messages"] if m.get("role") == "tool"]
    assert tool_messages
    assert "ship it" in json.dumps(tool_messages)
    events = json_events(proc.stdout)
    done = [e for e in events if e["type"] == "task.completed"]
    assert done
    assert done[0]["payload"]["worker_result"]["result"]["verdict"] == "approved"
    # the key never lands in anything air wrote
    for path in list(root.rglob("*")) + list(home.rglob("*")):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
