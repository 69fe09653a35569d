"""A tool input holding a number no JSON holds — NaN, Infinity, ``1e999`` — is a validation error
the caller hears, before a decision or a run (IMPL-NUM-1).

Python's ``json`` reads ``NaN`` and ``1e999`` (inf), so a model's tool arguments can carry them
into the parent; every comparison with NaN is false, so ``"timeout_s": NaN`` passed shell.run's
``minimum`` / ``maximum`` and ``trio.move_on_after(nan)`` raised ValueError, which no tool
catches: in direct mode (the Main Agent calling the registry in the console's process) it ended
the console. The end-to-end case is in tests/agents/test_interrupt_direct_channel.py."""

from __future__ import annotations

import math

import pytest

from air.tools.schema import value_problems
from tests.tools.conftest import Env


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
async def test_a_timeout_no_json_holds_is_refused_and_nothing_runs(env: Env, value: float) -> None:
    args = {"command": "touch ran.txt", "timeout_s": value}
    result = await env.registry.call("shell.run", args, env.ctx())
    assert result.status == "error"
    assert result.error is not None
    assert result.error.kind == "validation_error"
    assert "input.timeout_s" in result.error.message
    assert not (env.root / "ran.txt").exists()
    assert [t for t in env.types() if t.startswith(("tool.", "permission."))] == []


def test_every_non_finite_number_is_named_wherever_it_is() -> None:
    value = {
        "a": [1.0, math.nan],
        "b": {"c": -math.inf, "d": 2.5},
        "e": math.inf,
        "f": 10**400,  # an int: JSON's, however large (the schema's bounds decide)
    }
    assert value_problems(value) == [
        "input.a[1] is nan, which is no JSON number",
        "input.b.c is -inf, which is no JSON number",
        "input.e is inf, which is no JSON number",
    ]
