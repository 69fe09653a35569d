"""Session rows as the ContextAssembler reads them: the readers and the column access.

Owns ``SessionReaders`` (plain callables that read messages, tool and command runs, evidence,
attempts and summaries), ``readers_from_store`` (builds them from a SessionStore's
repositories), and ``row_value`` / ``maybe_json``: reading a column of a row that may be a
mapping, a pydantic model or a plain object, and a JSON column that may still be text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from air.contracts.ids import SessionID, TaskID

__all__ = ["SessionReaders", "maybe_json", "readers_from_store", "row_value"]


class SessionReaders(NamedTuple):
    """Callables that read session rows (mappings or objects with the columns as attributes)."""

    messages: Callable[[SessionID], Sequence[Any]] | None = None
    """All messages of a session, oldest first (``messages.list_by_session``)."""
    tool_runs: Callable[[TaskID], Sequence[Any]] | None = None
    command_runs: Callable[[TaskID], Sequence[Any]] | None = None
    evidence: Callable[[str, str], Sequence[Any]] | None = None
    """``(entity_type, entity_id)`` → evidence rows (``evidence.list_for_entity``)."""
    attempts: Callable[[TaskID], Sequence[Any]] | None = None
    """The finished and running attempts of a task (``task_attempts.list_by_task``)."""
    summaries: Callable[[SessionID], Sequence[Any]] | None = None
    """The compaction summaries of a session, oldest first (``summaries`` rows)."""
    task: Callable[[TaskID], Any] | None = None
    """A task's row (``tasks.get``), or None."""


def readers_from_store(store: Any) -> SessionReaders:
    """Build SessionReaders from a SessionStore (``store.messages``, ``store.tool_runs``, ...).

    Repositories the store lacks are left out (their layers are simply empty).
    """

    def method(repo_name: str, method_name: str) -> Any:
        repo = getattr(store, repo_name, None)
        return getattr(repo, method_name, None) if repo is not None else None

    messages = method("messages", "list_by_session")
    tool_runs = method("tool_runs", "list_by_task")
    command_runs = method("command_runs", "list_by_task")
    evidence = method("evidence", "list_for_entity")
    attempts = method("task_attempts", "list_by_task")
    summaries = method("summaries", "list_all")
    task = method("tasks", "get")
    return SessionReaders(
        messages=(lambda sid: list(messages(sid))) if messages else None,
        tool_runs=(lambda tid: list(tool_runs(tid))) if tool_runs else None,
        command_runs=(lambda tid: list(command_runs(tid))) if command_runs else None,
        evidence=(lambda et, eid: list(evidence(et, eid))) if evidence else None,
        attempts=(lambda tid: list(attempts(tid))) if attempts else None,
        summaries=(
            (lambda sid: [r for r in summaries() if row_value(r, "session_id") == sid])
            if summaries
            else None
        ),
        task=task,
    )


def row_value(row: Any, *names: str) -> Any:
    """A column of a row that may be a mapping, a pydantic model or a plain object."""
    for name in names:
        if isinstance(row, Mapping):
            if name in row and row[name] is not None:
                return row[name]
        else:
            value = getattr(row, name, None)
            if value is not None:
                return value
    return None


def maybe_json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value
