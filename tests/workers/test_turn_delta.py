"""Through a real worker subprocess: the worker sends each model turn as a delta and the parent
keeps the conversation, so every request the model gets is the whole conversation so far, its
earlier messages the very objects validated turns ago (issue 28 item 3)."""

from __future__ import annotations

import json

from air.contracts.task import TaskType
from air.contracts.worker_result import WorkerStatus
from air.llm.manager import ProviderManager
from air.supervision.worker_manager import SupervisionConfig, WorkerManager
from air.testing.recording import RecordingProvider
from tests.workers.conftest import Env, result_text, text_turn, tool_turn

TURNS = 6


async def test_a_worker_sends_deltas_and_the_parent_keeps_the_conversation(env: Env) -> None:
    turns = [tool_turn("fs.read", {"path": "src/app.py"}) for _ in range(TURNS)]
    turns.append(text_turn(result_text("completed", "read it", {"verdict": "approved"})))
    cassette = env.tmp / "turns.jsonl"
    cassette.write_text("".join(json.dumps(t) + "\n" for t in turns))
    provider = RecordingProvider(ProviderManager.for_cassette(str(cassette)))
    specs = [
        {"name": d.name, "description": d.description, "input_schema": d.input_schema}
        for d in env.registry.list()
    ]
    manager = WorkerManager(
        tools=env.registry.call,
        tool_streams=env.registry.call_streaming,
        provider=provider,
        events=env.events,
        artifacts=env.artifacts,
        tool_specs=specs,
        config=SupervisionConfig(),
        state_dir=env.state_dir,
    )
    outcome = await manager.supervise(env.request(type=TaskType.REVIEW))
    assert outcome.kind == "result", outcome
    assert outcome.result is not None
    assert outcome.result.status == WorkerStatus.COMPLETED, outcome.result

    requests = provider.requests
    assert len(requests) == TURNS + 1
    for number, request in enumerate(requests):
        # the first user message, then an assistant tool_use and a user tool_result per turn
        assert len(request.messages) == 1 + 2 * number
        assert [m.role for m in request.messages] == ["user", "assistant"] * number + ["user"]
        assert request.tools == requests[0].tools
        assert request.tools
        assert request.system == requests[0].system
        if number:
            before = requests[number - 1].messages
            # kept, not decoded and validated again: the same objects as the turn before
            assert all(a is b for a, b in zip(before, request.messages, strict=False))
            used = request.messages[-2].content[0]
            answer = request.messages[-1].content[0]
            assert used.type == "tool_use"
            assert answer.type == "tool_result"
            assert answer.tool_use_id == used.id
            assert "VALUE = 1" in str(answer.content)
