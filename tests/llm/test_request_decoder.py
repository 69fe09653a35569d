"""The strict servers decode a growing conversation once per message (``ConversationDecoder``,
IMPL-API-7) and the result is always what ``json.loads`` gives: for any sequence of bodies
(grown, edited anywhere, reformatted, keys reordered or repeated) and any broken body (cut off,
extra data, bad bytes), the same value or the same error."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from air.testing.request_decoder import ConversationDecoder

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=12)
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
_STYLES = [
    {},
    {"separators": (",", ":")},
    {"indent": 1},
    {"ensure_ascii": False},
]


def _body(messages: list[Any], style: int, first: bool) -> bytes:
    head: dict[str, Any] = {"model": "claude-sonnet-4-5", "max_tokens": 64}
    body = {"messages": messages, **head} if first else {**head, "messages": messages}
    return json.dumps(body, **_STYLES[style]).encode()  # type: ignore[arg-type]


def _same(decoder: ConversationDecoder, raw: bytes) -> Any:
    refusal: ValueError | None = None
    try:
        expected = json.loads(raw)
    except ValueError as exc:
        refusal = exc
    if refusal is not None:
        with pytest.raises(type(refusal)) as raised:
            decoder.decode(raw)
        assert str(raised.value) == str(refusal)
        return None
    got = decoder.decode(raw)
    assert got == expected
    assert json.dumps(got) == json.dumps(expected)  # key order and value types too
    return got


@settings(max_examples=100, deadline=None)
@given(
    steps=st.lists(
        st.tuples(
            st.lists(_VALUES, max_size=4),  # appended
            st.integers(0, 40),  # where an edit lands (past the end: no edit)
            _VALUES,  # the edit
            st.integers(0, len(_STYLES) - 1),
            st.booleans(),  # messages first
            st.integers(-1, 400),  # where the body is cut or spoiled (-1: whole)
        ),
        min_size=1,
        max_size=8,
    )
)
def test_every_body_decodes_as_json_loads_decodes_it(steps: list[Any]) -> None:
    decoder = ConversationDecoder()
    messages: list[Any] = []
    for added, where, edit, style, first, cut in steps:
        messages = messages + added
        if where < len(messages):
            messages[where] = edit
        raw = _body(messages, style, first)
        if cut >= 0:
            spoiled = [raw[:cut], raw + b" x", raw[:cut] + b"\xff" + raw[cut:]]
            for broken in spoiled:
                _same(decoder, broken)
        _same(decoder, raw)


def test_the_messages_a_body_shares_with_the_last_are_not_decoded_again() -> None:
    decoder = ConversationDecoder()
    messages = [{"role": "user", "content": [{"type": "text", "text": f"m{n}"}]} for n in range(6)]
    first = decoder.decode(_body(messages[:4], 0, False))
    second = decoder.decode(_body(messages, 0, False))
    assert all(a is b for a, b in zip(first["messages"], second["messages"][:4], strict=True))
    assert second["messages"] == messages
    edited = [*messages[:2], {"role": "user", "content": "changed"}, *messages[3:]]
    third = decoder.decode(_body(edited, 0, False))
    assert third["messages"][0] is second["messages"][0]
    assert third["messages"][1] is second["messages"][1]
    fresh = zip(third["messages"][2:], second["messages"][2:], strict=True)
    assert all(a is not b for a, b in fresh)
    assert third["messages"] == edited
    assert third["messages"] is not second["messages"]  # each body its own list


def test_a_repeated_messages_key_is_the_last_one_as_json_loads_keeps_it() -> None:
    decoder = ConversationDecoder()
    raw = b'{"messages": [1, 2, 3], "model": "m", "messages": [4, 5]}'
    for _ in range(2):
        assert decoder.decode(raw) == {"messages": [4, 5], "model": "m"}
