"""How the console shows the usage ledger (IMPL-USAGE-1): the HUD and ``/cost`` say "unknown"
for a cost whose model has no known price, never ``$0.00``."""

from __future__ import annotations

from air.contracts.ui import ProjectionSnapshot, TaskProjection, TotalsProjection, UsagePart
from air.ui_urwid.cost import cost_lines
from air.ui_urwid.views import hud_text


def test_the_hud_and_cost_say_unknown_never_zero_dollars() -> None:
    snapshot = ProjectionSnapshot(
        totals=TotalsProjection(
            tasks=1,
            tokens=1200,
            cost_usd=None,
            calls=3,
            parts=[UsagePart(purpose="main_agent", calls=3, tokens=1200, cost_usd=None)],
        ),
        tasks=[TaskProjection(task_id="t", title="T", type="execute", status="completed",
                              tokens=1200, cost_usd=None)],
    )  # fmt: skip
    hud = hud_text(snapshot, "full")
    assert "1.2ktok unknown" in hud
    assert "$0.00" not in hud
    assert "unknown" in hud_text(snapshot, "essential")
    assert cost_lines(snapshot) == [
        "total: 3 model calls, 1200 tokens (cache read 0, cache write 0), cost unknown",
        "  Main Agent: 3 calls, 1200 tokens, unknown",
        "  task #1 T: completed, 1200 tokens, unknown",
    ]
