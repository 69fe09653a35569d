"""What the Main Agent tells the person about running work: progress, blockers, the summary.

Owns ``WorkTracker``: it follows the session's ``task.*`` events (``observe``; subscribe it to
the bus with ``type_prefix="task."``), keeps each task's title and last status, shows a
blocked task's report (``present_blocker``) and one progress line per finished task while a
run of this cycle is going (``present_progress``), and writes the closing summary of a
``SchedulerRunResult`` (``summary_text``). The text is written here, not by the model
(IMPL-AGENT-3).
"""

from __future__ import annotations

from air.agents.turns import TurnRunner
from air.contracts.error import AirError
from air.contracts.event import RuntimeEvent
from air.contracts.task_results import SchedulerRunResult
from air.contracts.worker_result import BlockerReport

__all__ = ["WorkTracker"]

_ENDS = ("completed", "failed", "blocked", "cancelled", "interrupted")


class WorkTracker:
    """Task titles, statuses and blockers of a session, and the messages about them."""

    def __init__(self, turns: TurnRunner) -> None:
        self.turns = turns
        self.titles: dict[str, str] = {}
        self.task_status: dict[str, str] = {}
        self.blockers: dict[str, BlockerReport | str] = {}
        self.reporting = False
        """True while a run of the current cycle goes (progress lines are shown then)."""

    def planned(self, task_id: str, title: str) -> None:
        self.titles[task_id] = title
        self.task_status.setdefault(task_id, "pending")

    def unfinished(self) -> list[str]:
        return [t for t, s in self.task_status.items() if s in ("pending", "running")]

    async def observe(self, event: RuntimeEvent) -> None:
        """Follow one task event."""
        task_id = event.payload.get("task_id")
        if event.type == "task.created":
            spec = event.payload.get("task_spec") or {}
            if isinstance(spec, dict) and "id" in spec:
                self.titles.setdefault(str(spec["id"]), str(spec.get("title", "")))
                self.task_status.setdefault(str(spec["id"]), "pending")
            return
        if not isinstance(task_id, str):
            return
        status = event.type.removeprefix("task.")
        if status == "started":
            self.task_status[task_id] = "running"
            return
        if status not in _ENDS:
            return
        self.task_status[task_id] = status
        if status == "blocked":
            raw = event.payload.get("blocker")
            blocker = (
                BlockerReport.model_validate(raw)
                if isinstance(raw, dict)
                else str(event.payload.get("reason", "blocked"))
            )
            await self.present_blocker(blocker, task_id=task_id)
        elif self.reporting:
            await self.present_progress()

    async def present_progress(self) -> None:
        """Tell the person how far the work is (one line)."""
        counts: dict[str, int] = {}
        for status in self.task_status.values():
            counts[status] = counts.get(status, 0) + 1
        done = sum(n for s, n in counts.items() if s not in ("pending", "running"))
        parts = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
        await self.turns.say(f"Progress: {done}/{len(self.task_status)} tasks finished ({parts}).")

    async def present_blocker(self, blocker: BlockerReport | str, *, task_id: str) -> None:
        """Show a blocked task's report and what it needs."""
        self.blockers[task_id] = blocker
        title = self.titles.get(task_id, task_id)
        if isinstance(blocker, BlockerReport):
            text = f"Task {task_id} ({title}) is blocked: {blocker.reason} (needs {blocker.needs})"
            if blocker.options:
                text += "\nOptions: " + "; ".join(blocker.options)
        else:
            text = f"Task {task_id} ({title}) is blocked: {blocker}"
        await self.turns.say(text, task_id=task_id)

    def summary_text(self, result: SchedulerRunResult | None, error: AirError | None) -> str:
        """The closing summary of a run (statuses, blockers, the error that stopped it)."""
        if result is None:
            return "No run finished yet."
        lines = [f"Run {result.status}."]
        groups = (
            ("completed", result.completed_task_ids),
            ("failed", result.failed_task_ids),
            ("blocked", result.blocked_task_ids),
            ("cancelled", result.cancelled_task_ids),
        )
        for group, ids in groups:
            for task_id in ids:
                # the run result groups interrupted tasks with cancelled ones: say each's end
                ended = self.task_status.get(task_id)
                word = "interrupted" if group == "cancelled" and ended == "interrupted" else group
                line = f"- {task_id} {word}: {self.titles.get(task_id, '')}".rstrip(": ")
                blocker = self.blockers.get(task_id)
                if word == "blocked" and blocker is not None:
                    why = blocker.reason if isinstance(blocker, BlockerReport) else blocker
                    line += f" — {why}"
                lines.append(line)
        if error is not None:
            lines.append(f"The run stopped with an error: {error.message}")
        return "\n".join(lines)
