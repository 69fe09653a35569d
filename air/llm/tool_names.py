"""ToolNameMap: internal tool names (``fs.read``, ``shell.run``) <-> API-legal wire names.

Owns the one mapping every adapter applies (IMPL-API-1). Both the Messages API and chat
completions require tool names matching ``^[a-zA-Z0-9_-]{1,64}$``; air's tools are named with
dots (SDD). The wire name of a tool is its name with every character outside that alphabet
replaced by ``_`` (``fs.read`` -> ``fs_read``), cut to 64 characters. When two tools of one
request would get the same wire name (``fs.read`` and ``fs_read``), every colliding name but
the one that is already legal gets a suffix ``_`` + 8 hex digits of its SHA-256, so the mapping
stays deterministic (the same tools always give the same names) and reversible (the table of
the request maps each wire name back). A name coming back that the table does not know is
returned unchanged: the tool router then answers the model "unknown tool", as for any
hallucinated tool name.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from air.contracts.error import AirException

__all__ = ["WIRE_NAME", "ToolNameMap", "legal_name"]

WIRE_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""What both APIs accept as a tool (function) name."""

_ILLEGAL = re.compile(r"[^a-zA-Z0-9_-]")


def legal_name(name: str) -> str:
    """The plain wire form of ``name``: illegal characters -> ``_``, at most 64 characters."""
    cleaned = _ILLEGAL.sub("_", name)[:64]
    return cleaned or "_"


def _suffixed(name: str) -> str:
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]
    return legal_name(name)[:55] + "_" + digest


class ToolNameMap:
    """The wire name of each tool of one request, and the way back."""

    def __init__(self, names: Iterable[str]) -> None:
        ordered = list(dict.fromkeys(names))
        plain: dict[str, list[str]] = {}
        for name in ordered:
            plain.setdefault(legal_name(name), []).append(name)
        self._to_wire: dict[str, str] = {}
        for wire, owners in plain.items():
            if len(owners) == 1:
                self._to_wire[owners[0]] = wire
                continue
            for owner in owners:
                self._to_wire[owner] = owner if owner == wire else _suffixed(owner)
        self._to_internal: dict[str, str] = {}
        for internal, wire in self._to_wire.items():
            if wire in self._to_internal:
                raise AirException.of(
                    kind="validation_error",
                    message=(
                        f"tools {self._to_internal[wire]!r} and {internal!r} map to the same "
                        f"API name {wire!r}"
                    ),
                    user_action="Rename one of the two tools.",
                )
            self._to_internal[wire] = internal

    def wire(self, name: str) -> str:
        """The name sent for ``name`` (a tool of this request, or any name in the history)."""
        known = self._to_wire.get(name)
        return known if known is not None else legal_name(name)

    def internal(self, wire: str) -> str:
        """The internal name of a name the model sent (unknown names come back unchanged)."""
        return self._to_internal.get(wire, wire)

    def __len__(self) -> int:
        return len(self._to_wire)
