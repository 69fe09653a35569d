"""Tool inputs against their JSON schema: an integral float where the schema says ``integer``
is taken as that integer (models write JSON numbers; JSON does not tell 3 from 3.0), a
non-integral one is still refused, and the caller's input is never modified."""

from __future__ import annotations

from typing import Any

from air.tools.schema import integral_input, validate_schema
from tests.tools.conftest import Env

_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "n": {"type": "integer", "minimum": 1},
        "maybe": {"type": ["integer", "null"]},
        "ratio": {"type": "number"},
        "list": {"type": "array", "items": {"type": "integer"}},
        "inner": {"type": "object", "properties": {"k": {"type": "integer"}}},
    },
}


async def test_fs_read_takes_integral_floats_and_refuses_a_fraction(env: Env) -> None:
    (env.root / "src" / "three.txt").write_text("one\ntwo\nthree\n")
    args: dict[str, Any] = {"path": "src/three.txt", "offset": 1.0, "limit": 1.0}
    ok = await env.registry.call("fs.read", args, env.ctx())
    assert ok.status == "ok", ok.error
    assert isinstance(ok.output, dict)
    assert ok.output["content"] == "two\n"
    assert type(args["offset"]) is float  # the caller's input, untouched
    bad = await env.registry.call("fs.read", {"path": "src/three.txt", "offset": 1.5}, env.ctx())
    assert bad.status == "error"
    assert bad.error is not None
    assert bad.error.kind == "validation_error"
    assert "input.offset must be integer" in bad.error.message


def test_integral_floats_become_ints_wherever_the_schema_says_integer() -> None:
    value = {
        "n": 3.0,
        "maybe": 2.0,
        "ratio": 2.0,
        "list": [1.0, 2, 5.0],
        "inner": {"k": -4.0},
        "other": 7.0,
    }
    got = integral_input(_SCHEMA, value)
    assert got == {
        "n": 3,
        "maybe": 2,
        "ratio": 2.0,
        "list": [1, 2, 5],
        "inner": {"k": -4},
        "other": 7.0,
    }
    assert [type(got[k]) for k in ("n", "maybe", "ratio", "other")] == [int, int, float, float]
    assert all(type(item) is int for item in got["list"])
    assert type(got["inner"]["k"]) is int
    assert validate_schema(_SCHEMA, got) == []
    # the input is not modified; an input with nothing to change is returned as it is
    assert type(value["n"]) is float
    assert type(value["list"][0]) is float  # type: ignore[index]
    plain = {"n": 3, "list": [1, 2]}
    assert integral_input(_SCHEMA, plain) is plain


def test_a_fraction_a_bool_or_a_string_stays_what_it_is_and_is_refused() -> None:
    for bad in (3.5, True, "3", float("inf"), float("nan")):
        got = integral_input(_SCHEMA, {"n": bad})
        assert got["n"] is bad
        assert validate_schema(_SCHEMA, got) == ["input.n must be integer"]
    assert validate_schema(_SCHEMA, integral_input(_SCHEMA, {"n": 0.0})) == ["input.n must be >= 1"]
