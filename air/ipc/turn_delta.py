"""What a worker sends with each model turn: only what the parent does not hold yet (issue 28).

Owns ``TurnDelta``, the child side of ``provider.complete``'s delta form (IMPL-TURN-1): the
parent keeps the conversation (``air.supervision.conversation``), so a turn carries ``prefix``
(how many of the messages sent before still stand, by identity), the messages after them, and
``system`` / ``tools`` only when they are other objects than last time. The first turn carries
everything. A role never changes a message in place once sent: it passes a new dict instead,
which is then sent again from there on.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TurnDelta"]

_UNSET: Any = object()


class TurnDelta:
    """The conversation as last sent to the parent (references only, nothing copied)."""

    __slots__ = ("_sent", "_system", "_tools")

    def __init__(self) -> None:
        self._sent: list[Any] = []
        self._system: Any = _UNSET
        self._tools: Any = _UNSET

    def input(
        self, system: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """The ``provider.complete`` input of a turn over ``messages``; records it as sent."""
        sent = self._sent
        kept = 0
        for old, now in zip(sent, messages, strict=False):
            if old is not now:
                break
            kept += 1
        out: dict[str, Any] = {"prefix": kept, "messages": messages[kept:]}
        if system is not self._system:
            out["system"] = self._system = system
        if tools is not self._tools:
            out["tools"] = self._tools = tools
        self._sent = list(messages)
        return out

    def forget(self) -> None:
        """The parent may not hold the conversation (the call failed): send it whole next."""
        self._sent = []
        self._system = self._tools = _UNSET
