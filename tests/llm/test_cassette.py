"""Record a conversation against the local servers, replay it offline to the identical event
stream; the scripted provider's errors when the cassette is exhausted or no longer matches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from air.contracts.error import AirException, ErrorKind
from air.contracts.provider import (
    CanonicalMessage,
    MessageStopEvent,
    ModelConfig,
    ModelRequirement,
    ModelsConfig,
    ProviderConfig,
    ProviderKind,
    ProviderStreamEvent,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from air.llm.cassette import ScriptedProvider, cassette_json_schema, load_cassette
from air.llm.manager import ProviderManager
from tests.llm.conftest import FAKE_KEY
from tests.llm.helpers import PRICE, WIRES, Wire, collect, models_config, request, sse_for
from tests.llm.servers import LocalServer, Reply, Turn

ENV = {"AIR_TEST_KEY": FAKE_KEY}
EXAMPLE = Path(__file__).resolve().parents[2] / "air/testing/cassettes/read_then_answer.jsonl"
SCHEMA = Path(__file__).resolve().parents[2] / "air" / "llm" / "schemas" / "cassette.schema.json"


def _replay_config(cassette: Path) -> ModelsConfig:
    return ModelsConfig(
        default="p/m1",
        providers={
            "p": ProviderConfig(
                kind=ProviderKind.SCRIPTED,
                cassette=str(cassette),
                models={"m1": ModelConfig(price=PRICE)},
            )
        },
    )


def _second_request(first_stop: MessageStopEvent) -> list[CanonicalMessage]:
    tool = first_stop.content[-1]
    assert isinstance(tool, ToolUseBlock)
    return [
        CanonicalMessage(role="user", content=[TextBlock(text="hi")]),
        CanonicalMessage(role="assistant", content=list(first_stop.content)),
        CanonicalMessage(
            role="user", content=[ToolResultBlock(tool_use_id=tool.id, content="file body")]
        ),
    ]


async def _conversation(manager: ProviderManager) -> list[list[ProviderStreamEvent]]:
    first = await collect(manager, request())
    stop = first.events[-1]
    assert isinstance(stop, MessageStopEvent)
    second = await collect(manager, request(messages=_second_request(stop)))
    return [first.events, second.events]


@pytest.mark.parametrize("wire", WIRES)
async def test_recorded_cassette_replays_to_identical_event_stream(
    wire: Wire, server: LocalServer, tmp_path: Path
) -> None:
    cassette = tmp_path / "rec" / "task.jsonl"
    cassette.parent.mkdir()
    victim = tmp_path / "victim.txt"  # a link where the turns go: replaced, not written through
    victim.write_text("the user's own file\n")
    cassette.symlink_to(victim)
    server.push(
        Reply(
            chunks=sse_for(
                wire,
                Turn(
                    text=["Let me ", "look."],
                    tool=("toolu_7", "read_file", ['{"path"', ': "a.py"}']),
                    stop="tool_use",
                ),
            )
        ),
        Reply(chunks=sse_for(wire, Turn(text=["It is ", "empty."]))),
    )
    recorder = ProviderManager(models_config(wire, server.url, record_to=str(cassette)), env=ENV)
    try:
        recorded = await _conversation(recorder)
    finally:
        await recorder.aclose()
    assert len(load_cassette(str(cassette))) == 2
    assert victim.read_text() == "the user's own file\n"
    assert not cassette.is_symlink()

    replayer = ProviderManager(_replay_config(cassette))
    try:
        replayed = await _conversation(replayer)
    finally:
        await replayer.aclose()
    assert replayed == recorded
    assert replayer.usage.total == recorder.usage.total
    assert len(server.requests) == 2  # replay never touched the network


async def test_replay_detects_missing_tool_result_and_exhaustion(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    lines = [
        {
            "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "run", "input": {"cmd": "ls"}}
            ],
            "stop_reason": "tool_use",
        },
        {"content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn"},
    ]
    cassette.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    provider = ScriptedProvider.from_cassette(str(cassette), model_id="m1")
    manager = ProviderManager(_replay_config(cassette))
    try:
        await collect(manager, request())
        diverged = request(
            messages=[
                CanonicalMessage(role="user", content=[TextBlock(text="hi")]),
                CanonicalMessage(
                    role="assistant",
                    content=[ToolUseBlock(id="toolu_1", name="run", input={"cmd": "ls"})],
                ),
                CanonicalMessage(role="user", content=[TextBlock(text="I ignored the tool")]),
            ]
        )
        with pytest.raises(AirException) as info:
            await collect(manager, diverged)
        assert "no longer matches" in str(info.value)
        assert "toolu_1" in str(info.value)
        assert info.value.user_action
    finally:
        await manager.aclose()

    # the direct constructor: same cassette, correct conversation, then exhaustion
    from contextlib import aclosing

    good = _second_request(
        MessageStopEvent.model_validate(
            {"stop_reason": "tool_use", "usage": {}, "content": lines[0]["content"]}
        )
    )
    for messages in ([CanonicalMessage(role="user", content=[TextBlock(text="hi")])], good):
        async with aclosing(provider.complete(request(model_id="m1", messages=messages))) as stream:
            events = [e async for e in stream]
        assert events[-1].type == "message_stop"
    with pytest.raises(AirException) as exhausted:
        async with aclosing(provider.complete(request(model_id="m1"))) as stream:
            _ = [e async for e in stream]
    assert "exhausted" in str(exhausted.value)
    assert exhausted.value.kind is ErrorKind.PROVIDER_ERROR


def test_bad_cassette_names_file_and_line(tmp_path: Path) -> None:
    cassette = tmp_path / "bad.jsonl"
    cassette.write_text(
        '{"content": [], "stop_reason": "end_turn"}\n{"content": [], "stop_reason": "nap"}\n'
    )
    with pytest.raises(AirException) as info:
        load_cassette(str(cassette))
    assert f"{cassette}:2" in str(info.value)
    assert "stop_reason" in str(info.value)
    chunks = tmp_path / "chunks.jsonl"
    chunks.write_text(
        json.dumps(
            {
                "content": [{"type": "text", "text": "ab"}],
                "stop_reason": "end_turn",
                "chunks": [["a", "c"]],
            }
        )
    )
    with pytest.raises(AirException, match="do not join"):
        load_cassette(str(chunks))
    with pytest.raises(AirException) as missing:
        ScriptedProvider.from_cassette(str(tmp_path / "nope.jsonl"))
    assert missing.value.kind is ErrorKind.NOT_FOUND


def test_schema_file_documents_the_cassette_line() -> None:
    assert json.loads(SCHEMA.read_text()) == cassette_json_schema()


async def test_scripted_provider_selected_through_project_models_yaml(tmp_path: Path) -> None:
    example = EXAMPLE
    shared = tmp_path / "proj" / ".air" / "shared"
    (shared / "cassettes").mkdir(parents=True)
    (shared / "cassettes" / "task.jsonl").write_bytes(example.read_bytes())
    (shared / "models.yaml").write_text(
        "default: replay/scripted\n"
        "providers:\n"
        "  replay:\n"
        "    kind: scripted\n"
        "    cassette: cassettes/task.jsonl\n"
        "    models: {scripted: {}}\n"
    )
    config = ProviderManager.load_config(
        str(tmp_path / "proj"), home=str(tmp_path / "home"), project_trusted=True
    )
    manager = ProviderManager(config)
    assignment = manager.select_model(ModelRequirement())
    try:
        first = await collect(
            manager, request(provider_id=assignment.provider_id, model_id=assignment.model_id)
        )
        stop = first.events[-1]
        assert isinstance(stop, MessageStopEvent)
        assert first.types.count("text_delta") == 2
        second = await collect(
            manager,
            request(provider_id="replay", model_id="scripted", messages=_second_request(stop)),
        )
    finally:
        await manager.aclose()
    assert second.events[-1] == MessageStopEvent.model_validate(
        {
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 180, "output_tokens": 7, "cost_usd": 0.0},
            "content": [{"type": "text", "text": "The README describes air."}],
        }
    )


async def test_manager_for_cassette_replays_the_shipped_example() -> None:
    manager = ProviderManager.for_cassette(str(EXAMPLE))
    assignment = manager.select_model(ModelRequirement())
    assert (assignment.provider_id, assignment.model_id) == ("scripted", "scripted")
    try:
        got = await collect(manager, request(provider_id="scripted", model_id="scripted"))
    finally:
        await manager.aclose()
    assert got.types == [
        "message_start",
        "text_delta",
        "text_delta",
        "tool_use_start",
        "tool_use_input_delta",
        "tool_use_input_delta",
        "tool_use_stop",
        "message_stop",
    ]
    assert manager.usage.total.input_tokens == 120
