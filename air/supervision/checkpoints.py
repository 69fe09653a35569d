"""A worker's ``worker.checkpoint``, made durable as ``agent.checkpointed`` (runner invariant 11).

Owns: ``CheckpointPacer`` (which checkpoints are written: the first of an attempt, any that
changes its state — at most ``MAX_STATE_CHANGES`` a window — and otherwise at most one per
``every_s``; IMPL-CKPT-1) and
``checkpoint_event``, which turns the worker's message into the small event: state, usage,
process identity and pointers (changed paths), never the transcript. The worker's numbers are
its own claim about itself, read defensively (a malformed field counts as zero or absent); a
checkpoint never ends the attempt. Pure code: the read loop emits the event.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from air.contracts.provider import TOKENS_MAX
from air.ipc.procs import ProcessIdentity

__all__ = [
    "CHECKPOINT_EVERY_S",
    "MAX_POINTERS",
    "MAX_STATE_CHANGES",
    "CheckpointPacer",
    "checkpoint_event",
]

CHECKPOINT_EVERY_S = 15.0
"""At most one durable checkpoint per attempt in this many seconds, state changes aside."""
MAX_POINTERS = 50
"""At most this many changed paths a checkpoint carries (each at most 512 characters)."""


MAX_STATE_CHANGES = 8
"""State changes recorded at once per ``every_s`` window; past them a change waits its period
like any checkpoint (a worker flipping its state word cannot make every message durable)."""


@dataclass(eq=False)
class CheckpointPacer:
    """Decides which of an attempt's checkpoints become events (the rest stay in memory)."""

    every_s: float = CHECKPOINT_EVERY_S
    last_at: float = -math.inf
    last_state: str | None = None
    window_at: float = -math.inf
    changes: int = 0

    def due(self, now: float, state: str) -> bool:
        """True when the checkpoint at ``now`` in ``state`` is to be recorded (and notes it)."""
        if state != self.last_state:
            if now - self.window_at >= self.every_s:
                self.window_at, self.changes = now, 0
            if self.changes < MAX_STATE_CHANGES:
                self.changes += 1
                self.last_at, self.last_state = now, state
                return True
        if now - self.last_at < self.every_s:
            return False
        self.last_at, self.last_state = now, state
        return True


def _count(value: Any) -> int:
    return value if type(value) is int and 0 <= value <= TOKENS_MAX else 0


def _usage(data: dict[str, Any], turn: int) -> dict[str, Any]:
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    cost = usage.get("cost_usd")
    # a worker's JSON may say Infinity or NaN (Python's json reads both): no cost of a call
    known = isinstance(cost, int | float) and not isinstance(cost, bool) and 0 <= cost <= TOKENS_MAX
    return {
        "turns": turn,
        "tokens": _count(usage.get("tokens")),
        "cache_read_tokens": _count(usage.get("cache_read_tokens")),
        "cache_write_tokens": _count(usage.get("cache_write_tokens")),
        "cost_usd": float(cost) if known and cost is not None else None,
    }


def _pointers(data: dict[str, Any]) -> list[str]:
    files = data.get("changed_files")
    if not isinstance(files, list):
        return []
    return [f for f in files if isinstance(f, str) and 0 < len(f) <= 512][:MAX_POINTERS]


def checkpoint_event(
    pacer: CheckpointPacer,
    now: float,
    payload: dict[str, Any],
    *,
    attempt_index: int,
    identity: ProcessIdentity | None,
) -> dict[str, Any] | None:
    """The ``agent.checkpointed`` payload of a worker's checkpoint, or None when not due.

    Args:
        pacer: the attempt's pacing state (updated when the checkpoint is due).
        now: the current (Trio) time.
        payload: the ``worker.checkpoint`` payload (``turn``, ``state``, ``reason``, ``data``),
            already checked against its IPC model.
        attempt_index: the attempt's number (from 1).
        identity: the worker's process identity, when known.

    Returns:
        The event payload without ``agent_id``/``task_id`` (the emitter adds them), or None.
    """
    turn = _count(payload.get("turn"))
    state = str(payload.get("state") or "running")[:40]
    if not pacer.due(now, state):
        return None
    data = payload.get("data")
    data = data if isinstance(data, dict) else {}
    reason = payload.get("reason")
    return {
        "attempt_index": attempt_index,
        "turn": turn,
        "state": state,
        "reason": str(reason)[:80] if reason is not None else None,
        "usage": _usage(data, turn),
        "changed_files": _pointers(data),
        "pid": identity.pid if identity is not None else None,
        "pid_start_time": identity.start_time if identity is not None else None,
    }
