"""The JSON-schema subset that tool inputs are checked against: ``validate_schema``, a pure
function from (schema, value) to the problems found, ``integral_input``, which makes an
integral float (``3.0``) an int where the schema says ``integer`` (models write JSON numbers,
and JSON does not tell 3 from 3.0), and ``value_problems`` (strings that are no text, numbers
that are no JSON); ``ToolRegistry`` runs them before a call is decided. ``schema_problems``
refuses a schema air cannot read, or one too long or deep to send (``SCHEMA_BYTES``), when a
tool is registered.
"""

from __future__ import annotations

import json
import math
from typing import Any

from air.contracts.ids import JsonObject
from air.contracts.utf8 import holds_surrogate

__all__ = [
    "SCHEMA_BYTES",
    "SCHEMA_DEPTH",
    "integral_input",
    "schema_problems",
    "validate_schema",
    "value_problems",
]


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}


def validate_schema(schema: JsonObject | bool, value: Any, where: str = "input") -> list[str]:
    """Check ``value`` against the JSON-schema subset tools use; return the problems found.

    Supports type (one or a list), properties, required, additionalProperties (bool), items
    (one schema; draft 4's list form is not checked), enum, minimum, maximum, minLength,
    maxLength and minItems, and the boolean schemas ``true`` / ``false``. The schema is one
    ``schema_problems`` finds nothing in (an MCP server's is checked when it is registered).
    """
    if isinstance(schema, bool):
        return [] if schema else [f"{where} is not allowed"]
    problems: list[str] = []
    expected = schema.get("type")
    if expected is not None:
        names = expected if isinstance(expected, list) else [expected]
        ok = False
        for name in names:
            types = _JSON_TYPES.get(name, ())
            if isinstance(value, bool) and name in ("integer", "number"):
                continue
            if isinstance(value, types):
                ok = True
        if not ok:
            return [f"{where} must be {' or '.join(names)}"]
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{where} must be one of {schema['enum']}")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            problems.append(f"{where} is too short")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            problems.append(f"{where} is too long")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            problems.append(f"{where} must be >= {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            problems.append(f"{where} must be <= {schema['maximum']}")
    if isinstance(value, dict):
        props: dict[str, Any] = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                problems.append(f"{where}.{name} is required")
        if schema.get("additionalProperties", True) is False:
            for name in value:
                if name not in props:
                    problems.append(f"{where}.{name} is not allowed")
        for name, sub in props.items():
            if name in value:
                problems.extend(validate_schema(sub, value[name], f"{where}.{name}"))
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            problems.append(f"{where} needs at least {schema['minItems']} items")
        items = schema.get("items")
        if isinstance(items, dict | bool):
            for i, item in enumerate(value):
                problems.extend(validate_schema(items, item, f"{where}[{i}]"))
    return problems


SCHEMA_DEPTH = 32
"""How deeply a tool's input schema may nest (properties and items)."""
SCHEMA_BYTES = 64 * 1024
"""How long a tool's input schema may be (compact JSON): every request carries it."""
_COUNTS = ("minLength", "maxLength", "minItems")
_BOUNDS = ("minimum", "maximum")


def _size_problem(schema: Any, where: str) -> list[str]:
    """``schema`` longer than ``SCHEMA_BYTES``, or nesting past what JSON can write, in keys
    ``schema_problems`` does not read."""
    try:
        size = len(json.dumps(schema, separators=(",", ":"), default=str))
    except (RecursionError, ValueError):
        return [f"{where} nests too deeply to be sent"]
    if size > SCHEMA_BYTES:
        return [f"{where} is {size} bytes of JSON (air sends at most {SCHEMA_BYTES})"]
    return []


def schema_problems(schema: Any, where: str = "input_schema", depth: int = 0) -> list[str]:
    """What in ``schema`` ``validate_schema`` could not read: a keyword it reads holding a value
    of another kind (``"maxLength": "ten"``, ``"properties": [...]``, ``"required": 5``), a
    subschema that is no object or boolean, nesting past ``SCHEMA_DEPTH``. Keywords it does not
    read are not looked at. An MCP server chooses its tools' schemas: one of these raised
    TypeError or AttributeError in the registry at the first call, which no caller took."""
    if isinstance(schema, bool):
        return []
    if not isinstance(schema, dict):
        return [f"{where} is no schema (an object or a boolean)"]
    if depth > SCHEMA_DEPTH:
        return [f"{where} nests deeper than {SCHEMA_DEPTH}"]
    problems: list[str] = []
    kind = schema.get("type")
    names = kind if isinstance(kind, list) else [kind]
    if kind is not None and not all(type(name) is str for name in names):
        problems.append(f"{where}.type is no type name or list of them")
    if "enum" in schema and type(schema["enum"]) is not list:
        problems.append(f"{where}.enum is no list")
    required = schema.get("required", [])
    if type(required) is not list or not all(type(name) is str for name in required):
        problems.append(f"{where}.required is no list of names")
    for key in _COUNTS:
        if key in schema and (type(schema[key]) is not int or schema[key] < 0):
            problems.append(f"{where}.{key} is no count")
    for key in _BOUNDS:
        if key in schema and type(schema[key]) not in (int, float):
            problems.append(f"{where}.{key} is no number")
    props = schema.get("properties", {})
    if type(props) is not dict:
        problems.append(f"{where}.properties is no object")
    else:
        for name, sub in props.items():
            problems += schema_problems(sub, f"{where}.properties.{name}", depth + 1)
    items = schema.get("items", True)
    for i, sub in enumerate(items) if type(items) is list else [(None, items)]:
        at = f"{where}.items" if i is None else f"{where}.items[{i}]"
        problems += schema_problems(sub, at, depth + 1)
    if depth == 0 and not problems:
        problems += _size_problem(schema, where)
    return problems


def integral_input(schema: JsonObject | bool, value: Any) -> Any:
    """``value`` with every integral float where ``schema`` says ``integer`` made an int.

    The value itself when nothing changes (no copy on the common path); a changed object or
    array is a new one, the caller's is never modified. ``3.5`` stays a float, for
    ``validate_schema`` to refuse; ``True`` is never a number.
    """
    if isinstance(schema, bool):
        return value
    if type(value) is float:
        expected = schema.get("type")
        names = expected if isinstance(expected, list) else [expected]
        if "integer" in names and value.is_integer():
            return int(value)
        return value
    if isinstance(value, dict):
        props: dict[str, Any] = schema.get("properties", {})
        changed: dict[str, Any] | None = None
        for name, sub in props.items():
            if name in value:
                new = integral_input(sub, value[name])
                if new is not value[name]:
                    changed = changed if changed is not None else dict(value)
                    changed[name] = new
        return value if changed is None else changed
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        items = [integral_input(schema["items"], item) for item in value]
        if any(new is not old for new, old in zip(items, value, strict=True)):
            return items
    return value


def value_problems(value: Any, where: str = "input") -> list[str]:
    """The values of ``value`` no file name, command line, timer or event can hold: in a string
    (keys too) a NUL (every system call and argv ends there: a model's ``"cwd": "a\\u0000"``
    ended the whole run with a ValueError) or an unpaired surrogate (JSON's ``\\ud800`` is no
    UTF-8: the run ended storing the call's event); a number that is NaN or infinite (no JSON
    number is, but Python's ``json`` reads ``NaN`` and ``1e999``, and every comparison with NaN
    is false: a model's ``"timeout_s": NaN`` passed the schema's bounds and ended the console
    with a ValueError). Walked without recursion, in the order found."""
    problems: list[str] = []
    todo: list[tuple[str, Any]] = [(where, value)]
    while todo:
        at, item = todo.pop()
        if isinstance(item, dict):
            for key, sub in reversed(item.items()):
                todo.append((f"{at}.{key}", sub))
                todo.append((f"{at} (a key)", key))
        elif isinstance(item, list):
            todo.extend((f"{at}[{i}]", sub) for i, sub in reversed(list(enumerate(item))))
        elif isinstance(item, str):
            if "\0" in item:
                problems.append(f"{at} holds a NUL character (U+0000), which is no text")
            elif holds_surrogate(item):
                problems.append(f"{at} holds an unpaired surrogate, which is no text")
        elif type(item) is float and not math.isfinite(item):
            problems.append(f"{at} is {item}, which is no JSON number")
    return problems
