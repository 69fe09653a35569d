"""From an MCP server's tools to air's: names, definitions and results. Pure; no I/O.

Owns ``tool_names`` (each server tool's API-legal, unique name ``mcp__SERVER__TOOL`` and the
exact way back), ``definition`` (a ``ToolDefinition`` of category ``mcp`` that declares
``external``: the PermissionEngine asks before every call unless a rule allows it, and a
rule with ``category: read_only`` may trust the server's ``readOnlyHint``; IMPL-MCP-2) and
``result_text`` (a ``CallToolResult`` as the text the model reads: text blocks as they are,
other blocks named, capped at ``OUTPUT_CAP`` characters; ``isError`` becomes a tool error).
The server's names and descriptions are untrusted: a name is rebuilt from its legal characters
(plus a hash when anything was changed, so two names never meet), a description is capped, and
what a person is shown of either goes through ``air.contracts.display.shown``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from air.contracts.error import AirException, ErrorKind
from air.contracts.tool import ToolCategory, ToolDefinition, ToolPermissionSpec

__all__ = [
    "OUTPUT_CAP",
    "PREFIX",
    "definition",
    "read_only_hint",
    "result_text",
    "tool_names",
]

PREFIX = "mcp__"
"""Every MCP tool's name starts so; no built-in tool's does (theirs have dots: ``fs.read``)."""
OUTPUT_CAP = 30_000
"""Characters of one result the model gets (the rest is cut, and the cut is said)."""
DESCRIPTION_CAP = 2_000
_ILLEGAL = re.compile(r"[^A-Za-z0-9_-]")
_MAX_NAME = 64


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def tool_names(server: str, names: Iterable[str]) -> dict[str, str]:
    """``{air name: the server's name}`` for the tools of ``server`` (a valid server name).

    The air name is ``mcp__SERVER__TOOL`` when the tool's name is API-legal and fits in 64
    characters; otherwise (and for every name that would meet another) the legal characters
    of the name, cut, then ``_`` and 8 hex digits of its SHA-256. A name the server lists
    twice is kept once.
    """
    head = f"{PREFIX}{server}__"
    room = _MAX_NAME - len(head)
    plain: dict[str, list[str]] = {}
    for name in dict.fromkeys(names):
        legal = _ILLEGAL.sub("_", name)
        clean = legal == name and 0 < len(name) <= room
        plain.setdefault(head + (name if clean else "\0"), []).append(name)
    out: dict[str, str] = {}
    for wire, owners in plain.items():
        if len(owners) == 1 and "\0" not in wire:
            out[wire] = owners[0]
            continue
        for owner in owners:
            legal = _ILLEGAL.sub("_", owner)[: room - 9]
            out[head + legal + "_" + _digest(owner)] = owner
    return out


def read_only_hint(tool: Any) -> bool:
    """The server says the tool only reads (``annotations.readOnlyHint``): a hint, trusted only
    by a user's rule with ``category: read_only``."""
    annotations = getattr(tool, "annotations", None)
    return bool(getattr(annotations, "read_only_hint", False))


def _schema(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        return {"type": "object"}
    schema = dict(raw)
    schema["type"] = "object"  # both APIs require an object; the server's other keys stay
    return schema


def definition(server: str, air_name: str, tool: Any) -> ToolDefinition:
    """The ``ToolDefinition`` of one server tool (``tool``: the SDK's ``mcp.types.Tool``)."""
    text = (getattr(tool, "description", None) or "").strip()
    if len(text) > DESCRIPTION_CAP:
        text = text[:DESCRIPTION_CAP] + "…"
    description = f"[MCP server {server}] {text}" if text else f"[MCP server {server}]"
    return ToolDefinition(
        name=air_name,
        description=description,
        input_schema=_schema(getattr(tool, "input_schema", None)),
        category=ToolCategory.MCP,
        permissions=ToolPermissionSpec(
            external="read_only_hint" if read_only_hint(tool) else "unmarked"
        ),
    )


def _block(block: Any) -> str:
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        size = len(getattr(block, "data", "") or "") * 3 // 4
        return f"[{kind} {block.mime_type}, {size} bytes: not shown]"
    if kind == "resource_link":
        return f"[resource link: {block.uri}]"
    if kind == "resource":
        resource = block.resource
        text = getattr(resource, "text", None)
        if isinstance(text, str):
            return text
        return f"[resource {resource.uri}: binary, not shown]"
    return f"[{kind or 'unknown'} content: not shown]"


def _cap(text: str, cap: int) -> str:
    if len(text) <= cap:
        return text
    return text[:cap] + f"\n… ({len(text) - cap} more characters cut)"


def result_text(
    server: str, tool: str, content: Sequence[Any], structured: Any, error: bool
) -> str:
    """What the model reads of one result.

    Raises:
        AirException(tool_error): the server said ``isError`` (its text is the message).
    """
    parts = [_block(b) for b in content]
    if not parts and structured is not None:
        parts.append(json.dumps(structured, default=str, sort_keys=True))
    text = "\n".join(parts)
    if error:
        raise AirException.of(
            kind=ErrorKind.TOOL_ERROR,
            message=f"MCP server {server}: {tool} failed: {_cap(text, 2_000) or '(no text)'}",
            user_action="Read the server's message; fix the arguments or try another tool.",
        )
    return _cap(text, OUTPUT_CAP)
