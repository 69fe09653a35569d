"""What a provider adds to its stream after air was written. Anthropic's versioning policy keeps
an API version's fields but "may add new variants to enum-like output values (for example,
streaming event types)"; OpenAI adds Responses events; OpenAI-compatible servers have finish
reasons of their own. An event type or delta kind air does not know is passed over (the reply
completes, its text whole), an unknown stop or finish reason reads as ``end_turn``, Mistral's
``model_length`` as a context-window cut, and a finish reason that names a server failure
(DeepSeek's ``insufficient_system_resource``, vLLM's ``abort``) retries the turn; content given
as typed chunks (Mistral's thinking models) gives its text, its thinking never shown. Before,
each failed the turn as a protocol error. Mistral's API refuses ``stream_options``: its host is
not sent them (``stream_usage`` in models.yaml decides for any provider)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from air.contracts.provider import (
    ModelConfig,
    ModelsConfig,
    ProviderConfig,
    ProviderKind,
    StopReason,
    TextBlock,
)
from air.llm.catalogue import complete_model
from air.llm.manager import ProviderManager
from air.llm.openai_compat import OpenAICompatibleAdapter
from tests.llm.conftest import FAKE_KEY
from tests.llm.helpers import FAST_RETRY, Collected, collect, models_config, request
from tests.llm.servers import LocalServer, Reply, StrictServer, Turn, blocks_sse, openai_sse

ENV = {"AIR_TEST_KEY": FAKE_KEY}


def _event(name: str, body: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(body)}\n\n".encode()


async def _run(manager: ProviderManager, model_id: str | None = None) -> Collected:
    try:
        return await collect(manager, request(model_id=model_id) if model_id else request())
    finally:
        await manager.aclose()


@pytest.mark.parametrize("wire", ["anthropic", "anthropic_http"])
async def test_an_anthropic_event_delta_or_stop_reason_added_since_is_passed_over(
    wire: str, server: LocalServer
) -> None:
    chunks = blocks_sse("anthropic", [("text", ["half", " whole"])], "a_reason_from_later")
    later = [
        _event("content_block_annotation", {"type": "content_block_annotation", "index": 0}),
        _event(
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta"}},
        ),
    ]
    chunks = [*chunks[:3], *later, *chunks[3:]]
    server.push(Reply(chunks=chunks))
    manager = ProviderManager(models_config(wire, server.url), env=ENV)  # type: ignore[arg-type]
    stop = (await _run(manager)).stop
    assert stop.content == [TextBlock(text="half whole")]
    assert stop.stop_reason == StopReason.END_TURN


async def test_a_responses_event_added_since_is_passed_over(server: LocalServer) -> None:
    model = "gpt-6.1-sol"
    chunks = blocks_sse("responses", [("text", ["all", " of it"])], "end_turn", model=model)
    name = "response.something_new.delta"
    later = {"type": name, "sequence_number": 3, "delta": "x"}
    chunks = [*chunks[:2], _event(name, later), *chunks[2:]]
    server.push(Reply(chunks=chunks))
    provider = ProviderConfig(
        kind=ProviderKind.OPENAI_COMPATIBLE,
        base_url=server.url + "/v1",
        auth_ref="AIR_TEST_KEY",
        models={model: complete_model(model, ModelConfig())},
    )
    config = ModelsConfig(default=f"p/{model}", retry=FAST_RETRY, providers={"p": provider})
    stop = (await _run(ProviderManager(config, env=ENV), model)).stop
    assert stop.content == [TextBlock(text="all of it")]


def _finishing(reason: str) -> list[bytes]:
    chunks = openai_sse(Turn(text=["cut sh"]))
    stop, other = b'"finish_reason": "stop"', f'"finish_reason": "{reason}"'.encode()
    at = next(i for i, c in enumerate(chunks) if stop in c)
    chunks[at] = chunks[at].replace(stop, other)
    return chunks


@pytest.mark.parametrize(
    ("reason", "expect"),
    [
        ("model_length", StopReason.MODEL_CONTEXT_WINDOW_EXCEEDED),
        ("a_reason_from_later", StopReason.END_TURN),
    ],
)
async def test_a_compatible_server_s_finish_reason_is_read(
    server: LocalServer, reason: str, expect: StopReason
) -> None:
    server.push(Reply(chunks=_finishing(reason)))
    manager = ProviderManager(models_config("openai", server.url), env=ENV)
    stop = (await _run(manager)).stop
    assert stop.stop_reason == expect
    assert stop.content == [TextBlock(text="cut sh")]


@pytest.mark.parametrize("reason", ["insufficient_system_resource", "abort"])
async def test_a_finish_reason_naming_a_server_failure_retries_the_turn(
    server: LocalServer, reason: str
) -> None:
    server.push(Reply(chunks=_finishing(reason)), Reply(chunks=openai_sse(Turn(text=["whole"]))))
    manager = ProviderManager(models_config("openai", server.url), env=ENV)
    stop = (await _run(manager)).stop
    assert stop.content == [TextBlock(text="whole")]
    assert len(server.requests) == 2


def _delta(delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return f"data: {json.dumps({'id': 'c', 'model': 'm', 'choices': [choice]})}\n\n".encode()


async def test_content_as_typed_chunks_reads_its_text_and_passes_over_thinking(
    server: LocalServer,
) -> None:
    # Mistral's thinking models (Magistral): delta.content is a list of thinking / text chunks
    thinking = {"type": "thinking", "thinking": [{"type": "text", "text": "(weighing it)"}]}
    chunks = [
        _delta({"role": "assistant", "content": [thinking]}),
        _delta({"content": [{"type": "text", "text": "Hello"}]}),
        _delta({"content": " there"}, "stop"),
        b"data: [DONE]\n\n",
    ]
    server.push(Reply(chunks=chunks))
    got = await _run(ProviderManager(models_config("openai", server.url), env=ENV))
    assert got.stop.content == [TextBlock(text="Hello there")]
    assert "weighing" not in str(got.events)


async def test_content_of_another_shape_is_a_protocol_error(server: LocalServer) -> None:
    server.push(Reply(chunks=[_delta({"content": [{"type": "image", "url": "x"}]}, "stop")]))
    got = await _run(ProviderManager(models_config("openai", server.url), env=ENV))
    last = got.events[-1]
    assert last.type == "error"
    assert "unsupported content chunk 'image'" in str(last)


def _mistral(url: str, **fields: Any) -> ModelsConfig:
    model = "mistral-medium-latest"
    provider = ProviderConfig(
        kind=ProviderKind.OPENAI_COMPATIBLE,
        base_url=url,
        auth_ref="AIR_TEST_KEY",
        models={model: ModelConfig()},
        **fields,
    )
    return ModelsConfig(default=f"p/{model}", retry=FAST_RETRY, providers={"p": provider})


async def test_a_provider_that_refuses_stream_options_is_not_sent_them() -> None:
    # Mistral's API: 422 "Extra inputs are not permitted" for stream_options; usage comes unasked
    with StrictServer(api_key=FAKE_KEY) as server:
        server.push(Reply(chunks=openai_sse(Turn(text=["bonjour"]))))
        asking = ProviderManager(_mistral(server.url + "/v1"), env=ENV)
        refused = await _run(asking, "mistral-medium-latest")
        assert refused.events[-1].type == "error"
        assert "Extra inputs are not permitted" in str(refused.events[-1])
        quiet = _mistral(server.url + "/v1", stream_usage=False)
        got = await _run(ProviderManager(quiet, env=ENV), "mistral-medium-latest")
        assert got.stop.content == [TextBlock(text="bonjour")]
        assert got.stop.usage.output_tokens > 0  # the usage chunk, unasked
        assert "stream_options" not in server.requests[-1].body
        assert [r.problem.status for r in server.rejected] == [422]


def test_mistral_s_own_host_is_not_asked_for_stream_options() -> None:
    by_host = OpenAICompatibleAdapter("p", _mistral("https://api.mistral.ai/v1").providers["p"])
    assert by_host.stream_usage is False
    elsewhere = OpenAICompatibleAdapter("p", _mistral("http://127.0.0.1:8000/v1").providers["p"])
    assert elsewhere.stream_usage is True
    asked = _mistral("https://api.mistral.ai/v1", stream_usage=True).providers["p"]
    assert OpenAICompatibleAdapter("p", asked).stream_usage is True
