"""Fork context: a task that starts from a branched copy of the Main Agent's conversation
(runner contract ``context: "fork"``; issue 25 item 3; IMPL-FORK-1).

Owns ``forked_conversation`` (the Main Agent's conversation as the session database holds it —
the latest compaction summary, then the messages after it — as alternating user/assistant
canonical messages, cut where the task was created (``fork_point``), so a retried attempt
starts from the same copy; the worker's turns never write back to it), ``fork_messages`` (a
forked worker's first messages: that copy, then its task) and ``fork_refusal`` (a batch or plan
with more than one forking task, or a forking task in a session without a persisted
conversation, is refused before anything is created).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from air.context.session_rows import SessionReaders, maybe_json, row_value
from air.contracts.error import AirException, ErrorKind
from air.contracts.task import TaskSpec

__all__ = ["FORK_NOTE", "fork_messages", "fork_point", "fork_refusal", "forked_conversation"]

FORK_NOTE = (
    "The messages above are a copy of the Main Agent's conversation with the person, forked "
    "for this task: what you do here is not added to it. Your task follows."
)


def _texts(content: Any) -> list[dict[str, Any]]:
    blocks = maybe_json(content)
    if isinstance(blocks, str):
        return [{"type": "text", "text": blocks}] if blocks.strip() else []
    if not isinstance(blocks, list):
        return []
    return [
        {"type": "text", "text": str(b["text"])}
        for b in blocks
        if isinstance(b, dict) and b.get("type") == "text" and str(b.get("text") or "").strip()
    ]


def _alternating(turns: Sequence[tuple[str, list[dict[str, Any]]]]) -> list[dict[str, Any]]:
    """Turns of one role merged, starting with the person's (what a provider accepts)."""
    merged: list[dict[str, Any]] = []
    for role, blocks in turns:
        if not blocks:
            continue
        if merged and merged[-1]["role"] == role:
            merged[-1]["content"].extend(blocks)
        elif merged or role == "user":
            merged.append({"role": role, "content": list(blocks)})
    return merged


def forked_conversation(
    readers: SessionReaders, session_id: str, until: str | None = None
) -> list[dict[str, Any]]:
    """A copy of the Main Agent's conversation in ``session_id`` as it was at ``until`` (the
    forking task's creation; None: now): the latest summary (when the session was compacted)
    and the text of the messages after it; ``[]`` when it has none."""

    def then(row: Any) -> bool:
        return until is None or str(row_value(row, "created_at") or "") <= until

    rows = list(readers.messages(session_id)) if readers.messages is not None else []
    rows = [r for r in rows if not row_value(r, "task_id") and then(r)]  # the Main Agent's
    summaries = list(readers.summaries(session_id)) if readers.summaries is not None else []
    summaries = [s for s in summaries if then(s)]
    turns: list[tuple[str, list[dict[str, Any]]]] = []
    if summaries:
        summary = summaries[-1]
        cut = row_value(summary, "covers_until_message_id")
        ids = [row_value(r, "id", "message_id") for r in rows]
        if cut in ids:
            rows = rows[ids.index(cut) + 1 :]
        text = "Summary of the earlier conversation:\n" + str(row_value(summary, "content"))
        turns.append(("user", [{"type": "text", "text": text}]))
    for row in rows:
        role = "assistant" if row_value(row, "role") == "assistant" else "user"
        turns.append((role, _texts(row_value(row, "content_json", "content"))))
    return _alternating(turns)


def _task_message(spec: TaskSpec) -> dict[str, Any]:
    lines = [f"# Task {spec.id}: {spec.title}", "", spec.description]
    if spec.acceptance_criteria:
        lines += ["", "Acceptance criteria:"] + [f"- {c}" for c in spec.acceptance_criteria]
    return {"role": "user", "content": [{"type": "text", "text": "\n".join(lines)}]}


def fork_point(readers: SessionReaders, task_id: str) -> str | None:
    """When ``task_id`` was created (its row's ``created_at``): where its fork branches off,
    so every attempt of the task starts from the same copy; None when it is not known."""
    row = readers.task(task_id) if readers.task is not None else None
    created = row_value(row, "created_at") if row is not None else None
    return str(created) if created else None


def fork_messages(
    forked: Sequence[dict[str, Any]], task: Sequence[dict[str, Any]], spec: TaskSpec
) -> list[dict[str, Any]]:
    """A forked worker's first messages: the conversation's copy, a note saying so, then the
    task's own messages (``task``; one made from ``spec`` when its context went to an
    artifact), consecutive user turns merged."""
    own = [dict(m) for m in task] or [_task_message(spec)]
    note = {"role": "user", "content": [{"type": "text", "text": FORK_NOTE}]}
    turns = [(str(m["role"]), list(m["content"])) for m in [*forked, note, *own]]
    return _alternating(turns)


def fork_refusal(specs: Sequence[TaskSpec], conversation: int) -> AirException | None:
    """Why ``specs`` cannot be created in a session whose Main Agent conversation has
    ``conversation`` messages; ``None`` when they can.

    One task per batch or plan may fork (a fork is a branch of one conversation, not a way to
    fan it out); a fork needs a persisted conversation to copy: a headless batch in a new
    session has none.
    """
    forks = [s.id for s in specs if s.context == "fork"]
    if len(forks) > 1:
        return AirException.of(
            kind=ErrorKind.VALIDATION_ERROR,
            message=f"{len(forks)} tasks have context: fork ({', '.join(forks)}); one may",
            user_action="Keep `context: fork` on one task; the others start fresh.",
            metadata={"tasks": forks},
        )
    if forks and conversation == 0:
        return AirException.of(
            kind=ErrorKind.VALIDATION_ERROR,
            message=(
                f"task {forks[0]} has context: fork, but this session has no persisted "
                "Main Agent conversation to fork"
            ),
            user_action=(
                "Ask for the task in the console (`air`), whose conversation is persisted, or "
                "drop `context: fork` to run it headless from its spec alone."
            ),
            metadata={"tasks": forks},
        )
    return None
