"""Tool input schemas another party chose (an MCP server's, a capability manifest's) are read
before any call is checked against them: ``schema_problems`` names every keyword
``validate_schema`` reads that holds a value of another kind, so the registry refuses the tool
when it is registered (the end-to-end case, with a real stdio MCP server, is in
tests/mcp/test_servers.py)."""

from __future__ import annotations

from typing import Any

import pytest

from air.tools.schema import SCHEMA_DEPTH, schema_problems, validate_schema


@pytest.mark.parametrize(
    ("schema", "said"),
    [
        ({"properties": {"n": {"maxLength": "ten"}}}, "input_schema.properties.n.maxLength"),
        ({"properties": {"n": {"minLength": -1}}}, "input_schema.properties.n.minLength"),
        ({"properties": {"n": {"minItems": True}}}, "input_schema.properties.n.minItems"),
        ({"properties": {"n": {"minimum": "0"}}}, "input_schema.properties.n.minimum"),
        ({"properties": [1, 2]}, "input_schema.properties is no object"),
        ({"properties": {"n": "string"}}, "input_schema.properties.n is no schema"),
        ({"required": 5}, "input_schema.required"),
        ({"required": ["a", 1]}, "input_schema.required"),
        ({"enum": "abc"}, "input_schema.enum"),
        ({"type": [["string"]]}, "input_schema.type"),
        ({"items": "x"}, "input_schema.items is no schema"),
        ({"items": [{"type": "string"}, 3]}, "input_schema.items[1] is no schema"),
        (7, "input_schema is no schema"),
    ],
)
def test_every_keyword_read_is_of_its_kind(schema: Any, said: str) -> None:
    problems = schema_problems(schema)
    assert len(problems) == 1, problems
    assert problems[0].startswith(said), problems


def test_legal_forms_pass_and_are_checked() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "any": True,
            "none": False,
            "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
            "n": {"type": ["integer", "null"], "minimum": 0, "maximum": 9.5},
        },
        "required": ["n"],
        "additionalProperties": {"type": "string"},
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "anyOf": [{"required": ["n"]}],
    }
    assert schema_problems(schema) == []
    assert validate_schema(schema, {"any": {"x": 1}, "pair": ["a", 1], "n": 3}) == []
    assert validate_schema(schema, {"none": 1, "n": -1}) == [
        "input.none is not allowed",
        "input.n must be >= 0",
    ]


def test_a_schema_nested_past_its_depth_is_refused() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(SCHEMA_DEPTH + 1):
        schema = {"type": "object", "properties": {"x": schema}}
    (problem,) = schema_problems(schema)
    assert f"nests deeper than {SCHEMA_DEPTH}" in problem


def test_a_schema_too_long_or_deep_to_send_is_refused() -> None:
    """Every request carries every tool's schema: an MCP server's (or a capability's) of 10
    MB made each request of a session 10 MB (past 32 MB, the Messages API's 413); one nesting
    100,000 deep under a keyword the reader skips could not be written as JSON at all."""
    listed = {"type": "object", "properties": {"x": {"enum": ["v" * 10] * 6_000}}}
    (said,) = schema_problems(listed)
    assert said.startswith("input_schema is ")
    assert "air sends at most 65536" in said
    assert schema_problems({"type": "object", "properties": {"x": {"enum": ["v"] * 100}}}) == []
    deep: dict[str, Any] = {}
    for _ in range(100_000):
        deep = {"anyOf": [deep]}
    assert schema_problems({"type": "object", "properties": {"x": deep}}) == [
        "input_schema nests too deeply to be sent"
    ]
