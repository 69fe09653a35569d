"""A model server's usage figures are token counts or the turn's protocol error (IMPL-NUM-1).

A count is what a call costs: a negative one (``"output_tokens": -500``) bought budget back and
made the session's cost negative, one of 400 digits (or ``1e999``, which Python's json reads as
inf) overflowed the price's float and ended the whole run with an OverflowError; strings,
fractions and objects were taken or dropped in silence, differently per wire. Prices are
bounded in models.yaml likewise (tests/cli/test_bad_inputs.py)."""

from __future__ import annotations

import pytest

from air.contracts.error import ErrorKind
from air.contracts.provider import MessageStopEvent, ProviderErrorEvent
from air.llm.manager import ProviderManager
from tests.llm.conftest import FAKE_KEY
from tests.llm.helpers import WIRES, Wire, collect, models_config, request, sse_for
from tests.llm.servers import LocalServer, Reply, Turn

ENV = {"AIR_TEST_KEY": FAKE_KEY}
FIELD = {"openai": ("prompt_tokens", 16), "anthropic": ("output_tokens", 7)}
"""The field each wire's reply carries (``Turn``'s own figures), replaced by the test."""


def _reply(wire: Wire, value: str) -> Reply:
    key, own = FIELD["openai" if wire == "openai" else "anthropic"]
    chunks = [
        c.replace(f'"{key}": {own}'.encode(), f'"{key}": {value}'.encode())
        for c in sse_for(wire, Turn(text=["a"]))
    ]
    assert chunks != sse_for(wire, Turn(text=["a"]))
    return Reply(chunks=chunks)


async def _last(wire: Wire, server: LocalServer, value: str) -> object:
    server.push(_reply(wire, value))
    manager = ProviderManager(models_config(wire, server.url), env=ENV)
    try:
        got = await collect(manager, request())
    finally:
        await manager.aclose()
    return got.events[-1]


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("value", ["-500", "1" + "0" * 400, "1e999", "NaN", '"12"', "12.5", "true"])
async def test_a_figure_that_is_no_token_count_is_the_turns_protocol_error(
    wire: Wire, value: str, server: LocalServer
) -> None:
    last = await _last(wire, server, value)
    assert isinstance(last, ProviderErrorEvent), last
    assert last.error.kind is ErrorKind.PROTOCOL_ERROR
    key = FIELD["openai" if wire == "openai" else "anthropic"][0]
    assert f"usage.{key} is no token count" in last.error.message


@pytest.mark.parametrize("wire", WIRES)
async def test_a_count_written_as_an_integral_float_is_that_count(
    wire: Wire, server: LocalServer
) -> None:
    last = await _last(wire, server, "12.0")
    assert isinstance(last, MessageStopEvent), last
    counted = last.usage.input_tokens if wire == "openai" else last.usage.output_tokens
    assert counted == (12 - 5 if wire == "openai" else 12)  # openai: 5 of the prompt cached
    assert last.usage.cost_usd is not None
    assert last.usage.cost_usd > 0


async def test_more_cached_than_prompted_counts_the_whole_prompt_as_cached(
    server: LocalServer,
) -> None:
    last = await _last("openai", server, "3")  # the reply says 5 of them were cached
    assert isinstance(last, MessageStopEvent), last
    assert (last.usage.input_tokens, last.usage.cache_read_input_tokens) == (0, 3)
