"""The Main Agent's request window: its conversation on the compaction summary (SDD §10.3, §19.3).

Owns the ``Compactor`` port (``air.context.compactor.SessionCompactor`` fits),
``conversation_budget`` (the tokens the conversation of one Main Agent request may use, from the
model's window) and ``window_messages``: the entries a summary covers leave the request, the
summary (pinned facts verbatim, then the chunk summaries) stands first in their place, and if
the rest still passes the budget the oldest entries after the summary go too, so no request is
over budget (IMPL-COMPACT-1). The originals stay in ``messages``; nothing here writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from air.agents.conversation import ConversationEntry, to_model_messages
from air.context.tokens import estimate_message_tokens
from air.contracts.provider import CanonicalMessage, ModelAssignment, TextBlock

__all__ = [
    "SUMMARY_PREFIX",
    "CompactionOutcome",
    "CompactionView",
    "Compactor",
    "conversation_budget",
    "message_tokens",
    "window_messages",
]

SUMMARY_PREFIX = "Summary of the earlier conversation (the originals stay in the history):\n"
_MIN_BUDGET = 2_000


class CompactionView(Protocol):
    """The latest summary and the message ids it covers (``air.context.compactor``'s)."""

    @property
    def summary_id(self) -> str: ...

    @property
    def content(self) -> str: ...

    @property
    def covered(self) -> frozenset[str]: ...


class CompactionOutcome(Protocol):
    """One compaction's result (``air.context.compactor.CompactionOutcome`` fits)."""

    @property
    def summary_id(self) -> str: ...

    @property
    def covers_until_message_id(self) -> str: ...

    @property
    def replaced_message_ids(self) -> tuple[str, ...]: ...

    @property
    def pinned(self) -> tuple[str, ...]: ...


class Compactor(Protocol):
    """What the Main Agent needs of the session's compactor (the agents may not import the
    nursery's compaction module: it reaches the event store)."""

    async def compact_if_due(self, token_budget: int, reason: str) -> CompactionOutcome | None: ...

    async def compact(self, reason: str) -> CompactionOutcome | None: ...

    def view(self) -> CompactionView | None: ...


def conversation_budget(model: ModelAssignment) -> int:
    """Half of what the model's window leaves after its answer: the other half is the system
    prompt, the plan schema and the turns a request adds (a direct-mode tool loop)."""
    caps = model.capabilities
    return max(_MIN_BUDGET, (caps.context_window - caps.max_output_tokens) // 2)


def message_tokens(messages: Sequence[CanonicalMessage]) -> int:
    """The estimated tokens of request messages."""
    return sum(estimate_message_tokens(m.model_dump(mode="json")) for m in messages)


def window_messages(
    entries: Sequence[ConversationEntry], view: CompactionView | None, budget: int
) -> list[CanonicalMessage]:
    """The messages of the next request: the summary first (when there is one), then the
    entries it does not cover, the oldest of them left out while the whole passes ``budget``
    (the newest entry always stays)."""
    rest: list[ConversationEntry] = [
        e for e in entries if view is None or e.message_id not in view.covered
    ]
    head: list[ConversationEntry] = []
    if view is not None:
        head = [ConversationEntry(view.summary_id, "user", SUMMARY_PREFIX + view.content)]
    messages = _render([*head, *rest])
    while len(rest) > 1 and message_tokens(messages) > budget:
        rest.pop(0)
        messages = _render([*head, *rest])
    return messages


def _render(entries: Sequence[ConversationEntry]) -> list[CanonicalMessage]:
    messages = to_model_messages(entries)
    if not messages:
        messages = [CanonicalMessage(role="user", content=[TextBlock(text="(empty)")])]
    return messages
