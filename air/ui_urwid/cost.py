"""What ``/cost`` says, in the console and in ``--plain`` alike (issue 24 item 5).

Owns ``cost_lines``: the usage ledger's sums from the projection (IMPL-USAGE-1) as lines of
text: the session's total (calls, tokens, cache reads and writes, cost), then one line per kind
of caller (Main Agent, designer, compaction, tasks), then one per task. An unknown price reads
"unknown", never ``$0.00``. Pure: a snapshot in, strings out.
"""

from __future__ import annotations

from collections.abc import Callable

from air.contracts.display import cost_text
from air.contracts.ui import ProjectionSnapshot

__all__ = ["cost_lines"]

_NAMES = {
    "main_agent": "Main Agent",
    "designer": "designer",
    "compaction": "compaction",
    "task": "tasks",
}


def cost_lines(snapshot: ProjectionSnapshot, clean: Callable[[str], str] = str) -> list[str]:
    """The ``/cost`` answer, one string per line; task titles pass through ``clean``."""
    t = snapshot.totals
    lines = [
        f"total: {t.calls} model call{'' if t.calls == 1 else 's'}, {t.tokens} tokens "
        f"(cache read {t.cache_read_tokens}, cache write {t.cache_write_tokens}), "
        f"cost {cost_text(t.cost_usd, 4)}"
    ]
    for part in t.parts:
        lines.append(
            f"  {_NAMES.get(part.purpose, part.purpose)}: {part.calls} calls, "
            f"{part.tokens} tokens, {cost_text(part.cost_usd, 4)}"
        )
    for i, task in enumerate(snapshot.tasks, 1):
        lines.append(
            f"  task #{i} {clean(task.title)}: {task.status}, {task.tokens} tokens, "
            f"{cost_text(task.cost_usd, 4)}"
        )
    return lines
