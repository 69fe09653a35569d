"""A tool call whose input a model wrote as no JSON object (a small local model's single quotes, a
trailing comma) is answered to the model, not fatal (IMPL-API-8): the call keeps ``{}``, is never
made, and its error reaches the model, which calls again; a call cut off by ``max_tokens`` is
still asked again (IMPL-API-5). Against the strict servers on both wires, whose real APIs refuse
any field of a ``tool_use`` they do not know: air's note is sent on no wire."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from air.testing.strict_servers import StrictServer
from air.testing.wire_replies import Reply, Turn, anthropic_sse, openai_sse
from tests.headless import LOOK_BATCH, review_project, run_batch_json, session_events
from tests.trusted import trust_project

_RESULT = json.dumps(
    {"status": "completed", "summary": "read it", "result": {"changes_made": False}}
)


def _models(root: Path, wire: str, url: str) -> None:
    head = (
        f"    kind: anthropic\n    base_url: {url}\n"
        if wire == "anthropic"
        else f"    kind: openai_compatible\n    base_url: {url}/v1\n"
    )
    (root / ".air" / "shared" / "models.yaml").write_text(
        f"default: local/m\nproviders:\n  local:\n{head}    auth_ref: AIR_TEST_KEY\n"
        "    models: {m: {max_output_tokens: 4096, context_window: 200000}}\n"
    )


def _messages(body: dict[str, Any]) -> str:
    return json.dumps(body.get("messages"))


@pytest.mark.parametrize("wire", ["anthropic", "openai"])
def test_a_call_with_unparsable_input_is_answered_and_the_model_calls_again(
    tmp_path: Path, wire: str
) -> None:
    root, home = review_project(tmp_path, LOOK_BATCH)
    sse = anthropic_sse if wire == "anthropic" else openai_sse
    with StrictServer(api_key="k-test") as server:
        _models(root, wire, server.url)
        trust_project(root, home)
        server.push(
            Reply(
                chunks=sse(
                    Turn(tool=("call_1", "fs_read", ["{'path': 'notes.txt'}"]), stop="tool_use")
                )
            ),
            Reply(
                chunks=sse(
                    Turn(tool=("call_2", "fs_read", ['{"path": "notes.txt",}']), stop="tool_use")
                )
            ),
            Reply(
                chunks=sse(
                    Turn(tool=("call_3", "fs_read", ['{"path": "notes.txt"}']), stop="tool_use")
                )
            ),
            Reply(chunks=sse(Turn(text=[f"ok\n```json:result\n{_RESULT}\n```\n"]))),
        )
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))},
            "HOME": str(home),
            "AIR_TEST_KEY": "k-test",
        }
        proc = run_batch_json(root, env)
        requests, rejected = list(server.requests), list(server.rejected)
    assert rejected == []  # no input_error (nor anything else unknown) went back on the wire
    assert proc.returncode == 0, proc.stderr
    assert len(requests) == 4
    second, third = _messages(requests[1].body), _messages(requests[2].body)
    assert "The call of fs.read was not made: its input is not valid JSON" in second
    assert "input_error" not in second + third
    assert "no trailing commas" in third
    events = session_events(root)
    started = [e for e in events if e["type"] == "tool.started"]
    assert [e["input"] for e in started] == [{"path": "notes.txt"}]  # only the mended call ran
    assert [e["type"] for e in events if e["type"].startswith("task.")][-1] == "task.completed"
