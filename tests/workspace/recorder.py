"""The event recorder the workspace tests hand to WorkspaceManager in place of a session ledger."""

from __future__ import annotations

from typing import Any


class Events:
    """Keeps every ``(event type, payload)`` the manager records, in order."""

    def __init__(self) -> None:
        self.items: list[tuple[str, dict[str, Any]]] = []

    async def __call__(self, kind: str, payload: dict[str, Any]) -> None:
        self.items.append((kind, payload))

    def types(self) -> list[str]:
        return [k for k, _ in self.items]
