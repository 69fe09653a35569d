"""The SSE decoder against a reference of the WHATWG event-stream parsing rules (HTML Living
Standard, "Server-sent events", §9.2.6 "Interpreting an event stream"), written here line by
line from the standard, and against the one case fuzzing found: one event whose data lines mix
``data:x`` and ``data: y``."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from air.llm.sse import SSEDecoder

# -- the reference ---------------------------------------------------------------------------


def reference_events(stream: bytes) -> list[tuple[str, str]]:
    """The events a conforming user agent dispatches for ``stream`` (name, data).

    UTF-8 decode (a leading BOM dropped, bad bytes become U+FFFD); lines end at CRLF, LF or CR;
    a blank line dispatches; a line starting with ``:`` is a comment; otherwise the field is
    what comes before the first ``:`` (the whole line when there is none) and the value what
    comes after, less ONE leading space when there is one; ``data`` appends the value and a LF
    to the data buffer, ``event`` sets the event type; dispatch drops the last LF, skips an
    empty data buffer, and names the event ``message`` when the type is empty. At the end of the
    stream an event not ended by a blank line is discarded.
    """
    text = stream.decode("utf-8", errors="replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\r":
            lines.append("".join(current))
            current = []
            if i + 1 < len(text) and text[i + 1] == "\n":
                i += 1
        elif char == "\n":
            lines.append("".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    # `current` is an unterminated last line: never processed
    events: list[tuple[str, str]] = []
    data = ""
    event_type = ""
    for line in lines:
        if line == "":
            if data == "":
                event_type = ""
                continue
            if data.endswith("\n"):
                data = data[:-1]
            events.append((event_type or "message", data))
            data = ""
            event_type = ""
            continue
        if line.startswith(":"):
            continue
        if ":" in line:
            colon = line.index(":")
            field, value = line[:colon], line[colon + 1 :]
            if value.startswith(" "):
                value = value[1:]
        else:
            field, value = line, ""
        if field == "event":
            event_type = value
        elif field == "data":
            data += value + "\n"
        # id, retry and unknown fields do not change (name, data)
    return events


# -- the property ----------------------------------------------------------------------------

_FIELDS = st.sampled_from(
    [
        "data:x",
        "data: y",
        "data:  two spaces",
        "data",
        "data:",
        "data: ",
        'data: {"type":"ping"}',
        "data: é€😀",
        "event: e",
        "event:f",
        "event",
        "event:",
        "id: 7",
        "retry: 10",
        ": comment",
        ":",
        "datax: not data",
        "data : not data either",
    ]
)
_TERMINATORS = st.sampled_from(["\n", "\r\n", "\r"])


@st.composite
def _streams(draw: st.DrawFn) -> tuple[bytes, list[int]]:
    """Events (a few field lines, then a blank line), then the lines of an event the stream
    does not end and maybe an unended line; each line ended by LF, CRLF or CR; the bytes cut
    into reads at random offsets (inside characters too)."""
    blocks = draw(st.lists(st.tuples(st.booleans(), st.lists(_FIELDS, max_size=4)), max_size=6))
    lines = [line for named, block in blocks for line in [*(["event: e"] * named), *block, ""]]
    lines += draw(st.lists(_FIELDS, max_size=3))
    text = "".join(line + draw(_TERMINATORS) for line in lines)
    text += draw(st.sampled_from(["", "data: cut", "event: cut"]))
    if draw(st.booleans()):
        text = "\ufeff" + text
    stream = text.encode("utf-8")
    cuts = sorted(draw(st.lists(st.integers(0, len(stream)), max_size=8)))
    return stream, cuts


def _pieces(stream: bytes, cuts: list[int]) -> list[bytes]:
    bounds = [0, *cuts, len(stream)]
    return [stream[a:b] for a, b in itertools.pairwise(bounds)]


@settings(max_examples=250, deadline=None)
@given(_streams())
def test_the_decoder_dispatches_what_the_whatwg_rules_dispatch(
    case: tuple[bytes, list[int]],
) -> None:
    stream, cuts = case
    expected = reference_events(stream)
    events: list[tuple[str, str]] = []
    datas: list[str] = []
    by_name, by_data = SSEDecoder(), SSEDecoder()
    for piece in _pieces(stream, cuts):
        events.extend(by_name.feed(piece))
        datas.extend(by_data.feed_data(piece))
    # a CR at the very end may still be half of a CRLF: the reference has seen the whole
    # stream, the decoder dispatches that event at the next read (or at close)
    if stream.endswith(b"\r") and len(expected) == len(events) + 1:
        events.extend(by_name.close())
        datas.extend(data for _name, data in by_data.close())
    assert events == expected
    assert datas == [data for _name, data in expected]


def test_one_event_mixing_data_colon_and_data_colon_space_keeps_every_line() -> None:
    for stream in (
        b"data:x\ndata: y\n\n",
        b"event: e\ndata:x\ndata: y\n\n",
        b"event: e\ndata\ndata: y\n\n",
    ):
        expected = reference_events(stream)
        assert [data for _name, data in expected] == ["\ny" if b"data\n" in stream else "x\ny"]
        assert SSEDecoder().feed(stream) == expected
        assert SSEDecoder().feed_data(stream) == [data for _name, data in expected]


def test_a_leading_bom_is_dropped_once() -> None:
    decoder = SSEDecoder()
    events = decoder.feed(b"\xef\xbb")
    # a BOM later in the stream is part of its line: "\ufeffdata" is an unknown field
    events += decoder.feed(b"\xbfdata: a\n\n\xef\xbb\xbfdata: b\n\n")
    assert events == [("message", "a")]
