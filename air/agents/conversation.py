"""The Main Agent's conversation, rebuilt from the session database (SDD §5.4, §10.2 L7).

Owns ``ConversationEntry``, ``load_conversation`` (``messages`` rows in event order plus the
``message_drafts`` that never became a message: a turn still streaming when the process died
is shown as interrupted, IMPL-AGENT-4) and ``to_model_messages`` (the entries as the alternating
user/assistant ``CanonicalMessage`` list a provider accepts: text only, consecutive turns of one
role merged). The rows come through the narrow ``MessageRows`` protocol, so this module imports
no store code (``air.store.repositories.MessageRepository`` / ``MessageDraftRepository`` fit).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from air.contracts.provider import CanonicalMessage, TextBlock

__all__ = [
    "ConversationEntry",
    "MessageRows",
    "load_conversation",
    "text_of",
    "to_model_messages",
]


class MessageRows(Protocol):
    """Rows of one session's table, in order."""

    def list_by_session(self, session_id: str) -> Sequence[Mapping[str, Any]]: ...


@dataclass(frozen=True)
class ConversationEntry:
    message_id: str
    role: Literal["user", "assistant"]
    text: str
    status: Literal["complete", "interrupted", "failed"] = "complete"
    task_id: str | None = None
    error: str | None = None
    at: str = ""
    """When it was created (messages) or started (drafts): the order of the conversation."""


def text_of(content: Sequence[Mapping[str, Any]]) -> str:
    """The text blocks of canonical content, joined."""
    return "".join(str(b.get("text", "")) for b in content if b.get("type") == "text")


def load_conversation(
    messages: MessageRows, drafts: MessageRows, session_id: str
) -> list[ConversationEntry]:
    """The session's conversation as stored: every message, then drafts left unfinished.

    A draft still ``streaming`` belongs to a turn the process never finished (a crash or kill);
    it is listed as ``interrupted``, an ``error`` draft as ``failed`` — neither is sent to the
    model again.
    """
    entries: list[ConversationEntry] = []
    for row in messages.list_by_session(session_id):
        role: Literal["user", "assistant"] = "assistant" if row["role"] == "assistant" else "user"
        content = json.loads(row["content_json"])
        entries.append(
            ConversationEntry(
                message_id=str(row["id"]),
                role=role,
                text=text_of(content) if isinstance(content, list) else str(content),
                task_id=row.get("task_id"),
                at=str(row.get("created_at") or ""),
            )
        )
    for row in drafts.list_by_session(session_id):
        status: Literal["interrupted", "failed"] = (
            "failed" if row["status"] == "error" else "interrupted"
        )
        error = json.loads(row["error_json"]) if row.get("error_json") else None
        entries.append(
            ConversationEntry(
                message_id=str(row["message_id"]),
                role="assistant",
                text="",
                status=status,
                task_id=row.get("task_id"),
                error=str(error.get("message")) if isinstance(error, dict) else None,
                at=str(row.get("started_at") or ""),
            )
        )
    return sorted(entries, key=lambda e: e.at)  # stable: messages keep their event order


def to_model_messages(entries: Sequence[ConversationEntry]) -> list[CanonicalMessage]:
    """Complete, non-empty entries as alternating user/assistant turns starting with a user."""
    merged: list[tuple[Literal["user", "assistant"], list[str]]] = []
    for entry in entries:
        if entry.status != "complete" or not entry.text.strip():
            continue
        if merged and merged[-1][0] == entry.role:
            merged[-1][1].append(entry.text)
        else:
            merged.append((entry.role, [entry.text]))
    while merged and merged[0][0] != "user":
        merged.pop(0)
    return [
        CanonicalMessage(role=role, content=[TextBlock(text="\n\n".join(texts))])
        for role, texts in merged
    ]
