"""Where a batch file is wrong: YAML node locations and readable validation messages.

Owns ``node_at`` / ``key_node`` (walk a pydantic error location through the YAML node tree),
``yaml_line`` (its 1-based line) and ``describe_error`` / ``first_error`` (one human sentence
per validation error, an unknown field first). Used by ``air.cli.batch``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml
from pydantic import ValidationError

__all__ = ["describe_error", "first_error", "key_node", "node_at", "yaml_line"]


def node_at(node: yaml.Node | None, loc: Sequence[int | str]) -> tuple[yaml.Node | None, bool]:
    """Walk ``loc`` through the YAML node tree; returns (deepest node found, exact)."""
    current = node
    for key in loc:
        if isinstance(current, yaml.MappingNode):
            found = None
            for k, v in current.value:
                if isinstance(k, yaml.ScalarNode) and k.value == str(key):
                    found = (k, v)
                    break
            if found is None:
                return current, False
            current = found[1]
        elif isinstance(current, yaml.SequenceNode) and isinstance(key, int):
            if key >= len(current.value):
                return current, False
            current = current.value[key]
        else:
            return current, False
    return current, True


def key_node(node: yaml.Node | None, loc: Sequence[int | str]) -> yaml.Node | None:
    """The node of the mapping key named by the last element of ``loc`` (unknown fields)."""
    parent, exact = node_at(node, loc[:-1])
    if exact and isinstance(parent, yaml.MappingNode):
        for k, _ in parent.value:
            if isinstance(k, yaml.ScalarNode) and k.value == str(loc[-1]):
                return k
    return parent


def yaml_line(node: yaml.Node | None) -> int | None:
    return node.start_mark.line + 1 if node is not None else None


def describe_error(error: dict[str, Any]) -> str:
    loc = ".".join(str(p) for p in error["loc"])
    if error["type"] == "extra_forbidden":
        return f"unknown field {loc!r}"
    if error["type"] == "missing":
        return f"missing required field {loc!r}"
    given = error.get("input")
    if isinstance(given, (str, int, float, bool)) and not isinstance(given, type(None)):
        shown = repr(given) if len(repr(given)) <= 60 else repr(given)[:57] + "..."
        return f"{loc}: {error['msg']} (got {shown})"
    return f"{loc}: {error['msg']}"


def first_error(exc: ValidationError) -> Any:
    errors = exc.errors()
    return next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
