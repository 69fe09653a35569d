"""The console projection's mutable records of one session (SDD §13.1).

Owns ``ViewState`` (what ``ProjectionStore`` keeps between events: messages, live heartbeats,
tool and command runs with their output tails, artifacts, diffs, evidence, prompts, blockers,
the one fold of task, agent, session, tool and command state, the ``TaskView`` and the usage
ledger) and its
records ``MessageRecord`` and ``CommandRecord``. Plain mutable dataclasses, so an ephemeral event
costs a dict lookup and a string append; ``air.projection.snapshot`` turns them into the frozen
``ProjectionSnapshot``. Each growing list keeps only its newest entries (``WINDOW``,
``DIFF_WINDOW``: ``keep_newest``, IMPL-READ-2), so what the console holds, stores and renders does
not grow with the session; the older ones are read from the session database by ``air history``
and ``air report``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from air.contracts.ui import (
    ArtifactProjection,
    BlockerProjection,
    DiffProjection,
    EvidenceProjection,
    PermissionPromptProjection,
    SessionProjection,
)
from air.events.fold import FoldCursor
from air.events.usage_ledger import UsageLedger
from air.projection.tasks import TaskView

__all__ = ["DIFF_WINDOW", "WINDOW", "CommandRecord", "MessageRecord", "ViewState", "keep_newest"]

WINDOW = 500
"""Newest messages, tool runs, command runs, artifacts and evidence kept (each)."""
DIFF_WINDOW = 32
"""Newest diffs kept (each holds up to ``DIFF_TEXT_LIMIT`` of text)."""


def keep_newest(records: dict[str, Any], limit: int) -> None:
    """Drop the oldest entries of ``records`` (insertion order) beyond ``limit``."""
    while len(records) > limit:
        del records[next(iter(records))]


@dataclass
class MessageRecord:
    """One message of the conversation (a ``MessageProjection`` once snapshotted)."""

    message_id: str
    role: str
    text: str = ""
    status: str = "complete"
    task_id: str | None = None
    agent_id: str | None = None
    error: str | None = None
    timestamp: str | None = None


@dataclass
class CommandRecord:
    """One command run's live view: its command line and the newest ``tail`` of its output."""

    command_run_id: str
    command: str
    tail: str = ""
    tail_truncated: bool = False
    task_id: str | None = None
    tool_run_id: str | None = None
    cwd: str | None = None
    duration_ms: int | None = None


@dataclass
class ViewState:
    """Everything the console's projection holds about one session."""

    session: SessionProjection | None = None
    main_state: str = "IDLE"
    direct_mode: bool = False
    messages: dict[str, MessageRecord] = field(default_factory=dict)
    agent_live: dict[str, tuple[int, int, str]] = field(default_factory=dict)
    """Per agent: turn, tokens and state of its last heartbeat."""
    tool_runs: dict[str, dict[str, Any]] = field(default_factory=dict)
    commands: dict[str, CommandRecord] = field(default_factory=dict)
    artifacts: dict[str, ArtifactProjection] = field(default_factory=dict)
    diffs: dict[str, DiffProjection] = field(default_factory=dict)
    evidence: dict[str, EvidenceProjection] = field(default_factory=dict)
    prompts: dict[str, PermissionPromptProjection] = field(default_factory=dict)
    blockers: dict[str, BlockerProjection] = field(default_factory=dict)
    fold: FoldCursor = field(default_factory=FoldCursor)
    """The one fold of task, agent, session, tool and command state (``air.events.fold``)."""
    tasks: TaskView = field(default_factory=TaskView)
    usage: UsageLedger = field(default_factory=UsageLedger)
    """The usage ledger: every model call of the session (IMPL-USAGE-1)."""
    last_event_at: str | None = None
