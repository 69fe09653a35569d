"""The per-read fast path of the stream normalisers (``feed_many``, ``text_delta``) is the
same stream as feeding every payload one by one through ``feed``: same events, same failure,
same end — for any mix of text deltas, tool calls, pings and provider errors."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from air.contracts.error import AirError
from air.contracts.provider import ProviderErrorEvent, ProviderStreamEvent, TextDeltaEvent
from air.llm.normalize import AnthropicStreamNormalizer, OpenAIStreamNormalizer, drain
from air.llm.stream_assembly import text_delta
from air.llm.tool_names import ToolNameMap

_TEXT = st.text(min_size=1, max_size=12)


def _one_by_one(
    normalizer: AnthropicStreamNormalizer | OpenAIStreamNormalizer, values: list[dict[str, Any]]
) -> tuple[list[ProviderStreamEvent], AirError | None]:
    """The reference: ``feed`` each payload, stop at an error event or the end."""
    out: list[ProviderStreamEvent] = []
    for value in values:
        events = normalizer.feed(value)
        if events and isinstance(events[-1], ProviderErrorEvent):
            return out + events[:-1], events[-1].error
        out.extend(events)
        if normalizer.done:
            break
    return out, None


def _same_error(a: AirError | None, b: AirError | None) -> bool:
    """Equal but for the fresh ``error_id`` every AirError gets."""
    if a is None or b is None:
        return a is b
    return a.model_dump(exclude={"error_id"}) == b.model_dump(exclude={"error_id"})


@st.composite
def anthropic_stream(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A Messages stream: text and tool blocks, pings, maybe a provider error, maybe no end."""
    values: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "m", "model": "x", "usage": {}}}
    ]
    for index in range(draw(st.integers(0, 3))):
        if draw(st.booleans()):
            values.append(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": draw(st.sampled_from(["", "a"]))},
                }
            )
            for text in draw(st.lists(_TEXT, max_size=6)):
                values.append(
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "text_delta", "text": text},
                    }
                )
                if draw(st.integers(0, 5)) == 0:
                    values.append({"type": "ping"})
        else:
            values.append(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "tool_use", "id": f"t{index}", "name": "fs_read"},
                }
            )
            raw = json.dumps({"path": draw(_TEXT)})
            cut = draw(st.integers(0, len(raw)))
            for part in (raw[:cut], raw[cut:]):
                values.append(
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": part},
                    }
                )
        values.append({"type": "content_block_stop", "index": index})
    if draw(st.booleans()):
        at = draw(st.integers(1, len(values)))
        error = {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}
        values.insert(at, error)
    values.append({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {}})
    if draw(st.booleans()):
        values.append({"type": "message_stop"})
        values.extend(draw(st.lists(st.just({"type": "ping"}), max_size=2)))  # after the end
    return values


@settings(max_examples=150, deadline=None)
@given(anthropic_stream())
def test_anthropic_feed_many_is_feed_one_by_one(values: list[dict[str, Any]]) -> None:
    names = ToolNameMap(["fs.read"])
    reference = AnthropicStreamNormalizer("p", "m", names)
    expected, expected_error = _one_by_one(reference, values)
    fast = AnthropicStreamNormalizer("p", "m", names)
    out: list[ProviderStreamEvent] = []
    error = fast.feed_many(values, out)
    assert out == expected
    assert [type(e) for e in out] == [type(e) for e in expected]
    assert _same_error(error, expected_error)
    assert fast.done == reference.done


@st.composite
def openai_stream(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Chat-completions chunks: text runs, tool calls (the fast path must step aside for
    them), a usage chunk, maybe an error chunk."""
    values: list[dict[str, Any]] = []
    calls = 0
    for _ in range(draw(st.integers(1, 4))):
        if draw(st.booleans()):
            for text in draw(st.lists(_TEXT, min_size=1, max_size=6)):
                values.append({"id": "c", "choices": [{"index": 0, "delta": {"content": text}}]})
        else:
            call = {
                "index": calls,
                "id": f"call{calls}",
                "function": {"name": "fs_read", "arguments": '{"path": "a"}'},
            }
            calls += 1
            values.append({"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    if draw(st.booleans()):
        values.insert(
            draw(st.integers(0, len(values))), {"error": {"message": "boom", "code": "500"}}
        )
    values.append({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    if draw(st.booleans()):
        values.append({"id": "c", "choices": [], "usage": {"prompt_tokens": 3}})
    return values


@settings(max_examples=150, deadline=None)
@given(openai_stream())
def test_openai_feed_many_is_feed_one_by_one(values: list[dict[str, Any]]) -> None:
    names = ToolNameMap(["fs.read"])
    reference = OpenAIStreamNormalizer("p", "m", names)
    expected, expected_error = _one_by_one(reference, values)
    fast = OpenAIStreamNormalizer("p", "m", names)
    out: list[ProviderStreamEvent] = []
    error = fast.feed_many(values, out)
    assert out == expected
    assert [type(e) for e in out] == [type(e) for e in expected]
    assert _same_error(error, expected_error)
    if expected_error is None:
        assert fast.finish() == reference.finish()


def test_drain_returns_the_events_before_a_provider_error_and_the_error() -> None:
    normalizer = AnthropicStreamNormalizer("p", "m")
    payloads = [
        {"type": "message_start", "message": {"id": "m", "model": "x", "usage": {}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "a"}},
        {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "b"}},
    ]
    events, failure = drain(normalizer, [json.dumps(p) for p in payloads])
    assert [e.type for e in events] == ["message_start", "text_delta"]
    assert failure is not None
    assert failure.metadata is not None
    assert "busy" in failure.message


def test_a_text_delta_with_a_number_for_text_is_a_protocol_error_on_the_fast_path() -> None:
    normalizer = AnthropicStreamNormalizer("p", "m")
    start = {"type": "message_start", "message": {"id": "m", "model": "x", "usage": {}}}
    block = {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}}
    bad = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": 7}}
    events, failure = drain(normalizer, [json.dumps(v) for v in (start, block, bad)])
    assert [e.type for e in events] == ["message_start"]
    assert failure is not None
    assert failure.kind.value == "protocol_error"


def test_a_fast_text_delta_is_the_validated_event() -> None:
    fast = text_delta(3, "héllo")
    slow = TextDeltaEvent(index=3, text="héllo")
    assert type(fast) is TextDeltaEvent
    assert fast == slow
    assert fast.model_fields_set == slow.model_fields_set
    assert fast.model_dump_json() == slow.model_dump_json()
    assert repr(fast) == repr(slow)
    copied = fast.model_copy(update={"text": "x"})
    assert copied.text == "x"
    assert fast.text == "héllo"
    assert text_delta(0, "a").model_fields_set is not text_delta(0, "a").model_fields_set
