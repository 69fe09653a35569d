"""What a model's server sends is decoded with each unpaired surrogate made U+FFFD: JSON's
``\\ud800`` alone is no UTF-8, and the reply could not be passed on (``air.llm.sse``)."""

from __future__ import annotations

import json

import pytest

from air.contracts.error import AirException
from air.llm.sse import decode_json_batch, model_json
from air.llm.stream_assembly import parse_tool_input


def test_an_unpaired_surrogate_becomes_u_fffd_and_a_pair_stays_what_it_is() -> None:
    text = '{"a": "x\\ud800y", "\\udfffk": ["\\ud83d\\ude00", "\\uDC00"], "n": 1}'
    assert model_json(text) == {"a": "x\ufffdy", "\ufffdk": ["\U0001f600", "\ufffd"], "n": 1}
    assert model_json(text.encode()) == model_json(text)
    plain = '{"a": "caf\\u00e9 \\\\ud800 as text"}'  # an escaped backslash: no surrogate
    assert model_json(plain) == json.loads(plain)


def test_every_sse_payload_of_a_read_is_decoded_so() -> None:
    good, problem = decode_json_batch(['{"t": "a\\ud800"}', '{"t": "b"}'])
    assert problem is None
    assert good == [{"t": "a\ufffd"}, {"t": "b"}]
    for value in good:
        json.dumps(value, ensure_ascii=False).encode("utf-8")  # what the worker is sent


def test_json_nested_deeper_than_the_stack_is_not_json_the_run_goes_on_with() -> None:
    """A model's tool arguments `{"command": [[[...]]]}` 5,000 deep raised RecursionError out of
    the parser and ended the whole run; now they are malformed arguments (a protocol error the
    turn is retried for), and an SSE payload so deep is a bad payload."""
    deep = '{"command": ' + "[" * 5000 + "]" * 5000 + "}"
    with pytest.raises(json.JSONDecodeError, match="nested too deeply"):
        model_json(deep)
    with pytest.raises(AirException) as refused:
        parse_tool_input("local", deep)
    assert refused.value.error.kind == "protocol_error"
    good, problem = decode_json_batch(['{"t": "a"}', deep])
    assert good == [{"t": "a"}]
    assert problem is not None
    assert "nested too deeply" in problem
