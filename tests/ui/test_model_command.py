"""``/model`` parsing (issue 24 item 4): no argument shows the model; ``PROVIDER/MODEL`` asks for
a switch; anything else is an error naming the expected shape."""

from __future__ import annotations

import pytest

from air.ui_urwid.commands import parse_input


def test_model_alone_is_the_view() -> None:
    assert parse_input("/model").view == "model"


def test_model_with_a_reference_asks_for_a_switch() -> None:
    parsed = parse_input("/model openai/gpt-4o")
    assert parsed.command is not None
    assert parsed.command.kind == "switch_model"
    assert parsed.command.text == "openai/gpt-4o"


@pytest.mark.parametrize("ref", ["openai", "/gpt-4o", "openai/", "openai/a b"])
def test_a_reference_without_provider_and_model_is_an_error(ref: str) -> None:
    parsed = parse_input(f"/model {ref}")
    assert parsed.command is None
    assert parsed.error == "/model takes PROVIDER/MODEL, e.g. /model openai/gpt-4o"
