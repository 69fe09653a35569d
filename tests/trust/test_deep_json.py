"""JSON someone else wrote is read at any depth (``[[[[...`` 100,000 deep): a refusal in the
reader's own words, never the decoder's ``RecursionError`` (which ``except ValueError`` let
through). Found: a cloned repository's ``.air/shared/project.json`` made ``air session list``
and ``air history`` end in a traceback; a model's plan, a model server's error body, a
repository's cassette, a remote host's identity line and a worker's result block did the same
in the parent (or killed the worker); a model's tool input 300 deep passed pydantic's limit on
its way to the worker. Real commands where there is one, real readers else."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from air.agents.plan import extract_json
from air.contracts.error import AirException, ErrorKind
from air.contracts.provider import MessageStopEvent, ProviderErrorEvent, ToolUseBlock
from air.llm.cassette import load_cassette
from air.llm.sse import MODEL_JSON_DEPTH, model_json
from air.remote.guard import IDENTITY_PREFIX, parse_identity
from air.roles.loop import extract_result_block
from tests.forked_air import air_cli
from tests.gitrepo import git
from tests.llm.conftest import FAKE_KEY
from tests.llm.helpers import Wire, collect, models_config, request, sse_for
from tests.llm.servers import LocalServer, Reply, Turn

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("command", [["session", "list"], ["history"]])
def test_a_repository_s_deep_project_file_is_a_config_error(
    command: list[str], tmp_path: Path
) -> None:
    root, home = tmp_path / "proj", tmp_path / "home"
    (root / ".air" / "shared").mkdir(parents=True)
    home.mkdir()
    (root / ".air" / "shared" / "project.json").write_text(f'{{"project_id": {DEEP}}}')
    (root / "README").write_text("x\n")
    git(root, "init", "-q")
    done = air_cli(command, cwd=root, env={**os.environ, "HOME": str(home)}, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "project.json is not a valid project file" in done.stderr


def test_a_model_s_deep_text_is_no_plan_and_no_result() -> None:
    with pytest.raises(ValueError, match="no JSON object"):
        extract_json(f'{{"tasks": {DEEP}}}')
    data, problem = extract_result_block(f'```json:result\n{{"a": {DEEP}}}\n```', "x")
    assert data is None
    assert problem is not None
    assert "deeper" in problem


async def _turn_end(wire: Wire, *replies: Reply) -> Any:
    """The event a turn against a strict local server answering ``replies`` ends with."""
    from air.llm.manager import ProviderManager

    with LocalServer(api_key=FAKE_KEY) as server:
        server.push(*replies)
        manager = ProviderManager(models_config(wire, server.url), env={"AIR_TEST_KEY": FAKE_KEY})
        try:
            got = await collect(manager, request())
        finally:
            await manager.aclose()
    return got.events[-1]


async def _last_event(wire: Wire, *replies: Reply) -> ProviderErrorEvent:
    """The error event a turn against a strict local server answering ``replies`` ends with."""
    last = await _turn_end(wire, *replies)
    assert isinstance(last, ProviderErrorEvent), last
    return last


@pytest.mark.parametrize("wire", ["anthropic_http", "openai"])
async def test_a_server_s_deep_error_body_is_its_error(wire: Wire) -> None:
    body = f'{{"error": {DEEP[:60_000]}}}'.encode()  # within the 64 KiB air reads of one
    json_body = {"content-type": "application/json"}
    last = await _last_event(wire, Reply(status=400, headers=json_body, chunks=[body]))
    assert last.error.kind is ErrorKind.PROVIDER_ERROR
    assert "HTTP 400" in last.error.message


def test_a_repository_s_deep_cassette_chunks_name_the_line(tmp_path: Path) -> None:
    line = {
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "fs.read", "input": {}}],
        "stop_reason": "tool_use",
        "chunks": [[DEEP]],
    }
    cassette = tmp_path / "task.jsonl"
    cassette.write_text(json.dumps(line) + "\n")
    with pytest.raises(AirException, match=f"{cassette}:1.*not valid JSON"):
        load_cassette(str(cassette))


def test_a_host_s_deep_identity_line_is_not_air_s() -> None:
    deep = "[" * 2_000 + "]" * 2_000  # the 4,096 bytes an identity line may have
    assert parse_identity(IDENTITY_PREFIX + f'{{"pid": {deep}}}'.encode()) is None


def test_a_model_s_json_nests_at_most_64_levels() -> None:
    """Parsed, a tool input 300 deep passed pydantic's serialisation limit (254) on its way to
    the worker: ``ValueError`` ended the whole run. Brackets inside strings are no nesting."""
    assert model_json("[" * 64 + "]" * 64, max_depth=MODEL_JSON_DEPTH) is not None
    with pytest.raises(json.JSONDecodeError, match="deeper than 64"):
        model_json("[" * 65 + "]" * 65, max_depth=MODEL_JSON_DEPTH)
    text = json.dumps({"text": "[" * 500})
    assert model_json(text, max_depth=MODEL_JSON_DEPTH) == {"text": "[" * 500}


@pytest.mark.parametrize("wire", ["anthropic_http", "openai"])
async def test_a_model_s_deep_tool_input_is_never_parsed_and_answered(wire: Wire) -> None:
    """Too deep to parse: the call keeps ``{}`` and the reason, which the model is answered
    (IMPL-API-8); nothing of the 300 levels reaches a model of air's."""
    deep = "[" * 300 + "]" * 300
    turn = Turn(tool=("call_1", "read_file", [f'{{"path": "x", "n": {deep}}}']), stop="tool_use")
    last = await _turn_end(wire, Reply(chunks=sse_for(wire, turn)))
    assert isinstance(last, MessageStopEvent), last
    [call] = [b for b in last.content if isinstance(b, ToolUseBlock)]
    assert call.input == {}
    assert call.input_error is not None
    assert "not valid JSON" in call.input_error
    assert "deeper than 64" in call.input_error


@pytest.mark.parametrize("wire", ["anthropic_http", "openai"])
async def test_a_server_s_deep_event_holding_a_lone_surrogate_ends_the_turn(wire: Wire) -> None:
    """An event 600 deep parsed, then the pass that makes a lone surrogate (JSON's ``\\ud800``)
    U+FFFD descended a level per call: ``RecursionError`` left the stream reader."""
    deep = "[" * 600 + '"\\ud800"' + "]" * 600
    event = f'data: {{"type": "ping", "x": {deep}}}\n\n'.encode()
    last = await _last_event(wire, *[Reply(chunks=[event, *sse_for(wire, Turn(text=["hi"]))])] * 3)
    assert last.error.kind is ErrorKind.PROTOCOL_ERROR
