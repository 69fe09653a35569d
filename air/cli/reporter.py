"""The headless reporter: human progress on stderr and the ``--json`` event stream on stdout.

Owns: ``Progress`` (one line per task start, retry and end with the elapsed time and, at an
end, the task's tokens and cost; the run's total cost; the summary counts; the JSONL stream
that stops quietly when its reader goes away, IMPL-CLI-4) and ``_silence_stdout``. Tokens and
costs are the usage ledger's (``air.events.usage_ledger``, IMPL-USAGE-1): every model call of
the run, the designer's and compaction's included. Statuses
and counts are the fold's (``air.events.fold``): every event the reporter sees is folded once,
and the counts it prints are the fold's per-status counters, O(1) per line (IMPL-CORE-5). A
reason or an error in a line is shown as exact text (``air.contracts.display.shown``,
IMPL-UI-7); a JSON line holds such characters as JSON escapes (``json_shown``). A rule air
learned on its own is announced with what to do (it is used once trusted).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from typing import IO, Any

from air.cli.outlet import LIMIT
from air.contracts.display import json_shown, left_out_text, shown
from air.contracts.error import AirException
from air.contracts.task import TaskStatus
from air.events.fold import FoldCursor
from air.events.transitions import TASK_ENDS
from air.events.usage_ledger import USAGE_EVENT, UsageLedger

__all__ = ["Progress"]

_ENDS = TASK_ENDS


class Progress:
    """Human progress on stderr: one line per task end, and a summary."""

    def __init__(self, stream: IO[str], json_out: IO[str] | None) -> None:
        self.stream = stream
        self.json_out = json_out
        self.started = time.monotonic()
        self._fold = FoldCursor()
        self.usage = UsageLedger()
        """Every model call of the session so far (``model.usage.recorded``)."""

    @property
    def status(self) -> Mapping[str, str]:
        """Per task of the session: its status as the fold has it (interrupted: pending)."""
        return {
            t.task_id: (
                TaskStatus.PENDING.value if t.status == TaskStatus.INTERRUPTED else t.status.value
            )
            for t in self._fold.state.scheduler_tasks()
        }

    def elapsed(self) -> str:
        return f"{time.monotonic() - self.started:6.1f}s"

    def counts(self) -> tuple[int, int, int, int]:
        """(done, running, failed or blocked, total) over the session's tasks."""
        state = self._fold.state
        done = state.count(TaskStatus.COMPLETED)
        running = state.count(TaskStatus.RUNNING)
        failed = state.count(TaskStatus.FAILED) + state.count(TaskStatus.BLOCKED)
        return done, running, failed, sum(state.counts.values())

    def cost_text(self) -> str:
        """The session's total cost so far (every model call), as the last line says it; a
        model without a price makes it a lower bound, never a silent 0."""
        total = self.usage.total
        if total.cost_usd is None:
            return f"at least ${total.known_cost_usd:.4f} (a model's price is unknown)"
        return f"${total.cost_usd:.4f}"

    def _spent(self, task_id: str) -> str:
        """What the task's model calls used so far: ``, 1200 tok, $0.0012``; nothing when it
        made none."""
        spent = self.usage.task(task_id)
        if not spent.calls:
            return ""
        if spent.cost_usd is None:
            return f", {spent.tokens} tok, cost unknown"
        return f", {spent.tokens} tok, ${spent.cost_usd:.4f}"

    def stream_line(self, line: str) -> None:
        """Write one JSON line; when the reader has gone (``air run --json | head -1``) or fell
        too far behind (``air.cli.outlet``) stop the stream for good, point stdout at
        /dev/null (so no later flush fails) and say so once on stderr. The run goes on."""
        assert self.json_out is not None
        try:
            self.json_out.write(line)
            self.json_out.flush()
        except (BrokenPipeError, ValueError, OSError) as exc:
            self.json_out = None
            why = "stdout closed"
            if getattr(exc, "lagged", False):  # an OutletStopped (air.cli.outlet)
                why = f"stdout's reader fell {LIMIT >> 20} MiB behind"  # it gets whole lines
            else:
                _silence_stdout()
            print(
                f"air: {why}: the --json stream stops, the run goes on "
                "(`air history` shows every event)",
                file=self.stream,
                flush=True,
            )

    def _fold_in(self, event: Any) -> bool:
        """Fold one event; False when the fold refuses it (seen twice: a resumed session's
        replayed log and the live stream may overlap), which leaves the state as it was."""
        try:
            self._fold.feed(event)
        except AirException:
            return False
        return True

    def resume(self, ledger: Any) -> None:
        """Take the statuses of a resumed session from its ledger's fold (``state()``, kept
        from its snapshot) and its usage from its ``model.usage.recorded`` events (read by
        type), printing nothing: never a read of every event the session recorded."""
        self._fold = FoldCursor(ledger.state())
        for event in ledger.history_of(USAGE_EVENT):
            self.usage.feed(event)

    def on_event(self, event: Any) -> None:
        if self.json_out is not None:
            self.stream_line(json_shown(event.model_dump_json()) + "\n")
        kind: str = event.type
        payload = event.payload
        if self.usage.feed(event):
            return
        if kind == "assistant.message.failed":
            meta = (payload.get("error") or {}).get("metadata") or {}
            if meta.get("will_retry"):
                print(
                    f"air [{self.elapsed()}] {meta.get('task_id', '?')} model turn retried "
                    f"(attempt {meta.get('attempt')} failed, next in {meta.get('wait_s')}s): "
                    f"{shown(str(meta.get('reason')))}",
                    file=self.stream,
                    flush=True,
                )
            return
        if not self._fold_in(event):
            return
        if kind == "workspace.merge.completed" and payload.get("left_out_count"):
            self._left_out(payload)
            return
        if kind == "memory.promoted" and _learned_on_its_own(payload):
            print(
                f"air [{self.elapsed()}] learned a rule from tasks fixed the same way: "
                f"{shown(str(payload.get('target_ref')))}; the next run asks you to trust it "
                "(`air trust` shows it)",
                file=self.stream,
                flush=True,
            )
            return
        if kind == "task.started":
            attempt = int(payload.get("attempt_index") or 1)
            what = "started" if attempt <= 1 else f"retried (attempt {attempt})"
            line = f"air [{self.elapsed()}] {payload['task_id']} {what}"
            print(line, file=self.stream, flush=True)
            return
        if kind not in _ENDS:
            return
        task_id = payload["task_id"]
        new = _ENDS[kind]
        done, running, failed, total = self.counts()
        detail = ""
        task = self._fold.state.tasks[task_id]
        if new == "failed" and task.last_error is not None:
            detail = f": {task.last_error.message}"
        elif payload.get("reason") and new != "completed":
            detail = f": {payload['reason']}"
        spent = self._spent(task_id)
        print(
            f"air [{self.elapsed()}] {task_id} {new}{shown(detail)} "
            f"(done {done}/{total}, running {running}, failed {failed}{spent})",
            file=self.stream,
            flush=True,
        )

    def _left_out(self, payload: Mapping[str, Any]) -> None:
        """A merge that left out what git ignores: say what, and where a copy is."""
        from air.workspace.manager import MERGED_RETENTION  # loaded by the runtime already

        workspace = self._fold.state.workspaces.get(str(payload["workspace_id"]))
        if workspace is None:
            return
        text = left_out_text(payload.get("left_out") or [], int(payload["left_out_count"]))
        kept = payload.get("left_out_dir")
        if kept:
            text += f" (a copy is in {shown(kept)} for {MERGED_RETENTION.days} days)"
        line = f"air [{self.elapsed()}] {workspace.task_id} merged; {text}"
        print(line, file=self.stream, flush=True)


def _learned_on_its_own(payload: Mapping[str, Any]) -> bool:
    """A rule air promoted from repeated fixes, which no person read (IMPL-LEARN-1)."""
    from air.session.knowledge import POLICY_PROMOTER  # a promotion's: late, rare

    return payload.get("promoted_by") == POLICY_PROMOTER


def _silence_stdout() -> None:
    """Point file descriptor 1 at /dev/null (its reader is gone)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
