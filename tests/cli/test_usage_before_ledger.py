"""A session recorded before the usage ledger (IMPL-USAGE-1) still reports what its workers
spent: ``summarise`` falls back to the workers' own totals only when the log holds no
``model.usage.recorded`` at all, so a session with the ledger is never counted twice."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from air.cli.session_report import summarise

SPEC = {"id": "task_a", "title": "A"}
WORKER_USAGE = {"input_tokens": 100, "output_tokens": 20, "cost_usd": 0.5, "turns": 3}


def _event(n: int, kind: str, payload: dict[str, Any]) -> SimpleNamespace:
    return SimpleNamespace(
        id=f"ev{n}",
        type=kind,
        payload=payload,
        session_id="ses_x",
        timestamp=f"2026-12-02T07:00:0{n}Z",
    )


def _session(with_ledger: bool) -> list[SimpleNamespace]:
    events = [
        _event(1, "task.created", {"task_spec": SPEC}),
        _event(2, "task.started", {"task_id": "task_a", "agent_id": "agt_1", "attempt_index": 1}),
    ]
    if with_ledger:
        call = {"task_id": "task_a", "agent_id": "agt_1", "purpose": "task", "input_tokens": 100}
        events.append(
            _event(3, "model.usage.recorded", {**call, "output_tokens": 20, "cost_usd": 0.5})
        )
    done = {"task_id": "task_a", "worker_result": {"usage": WORKER_USAGE, "summary": "ok"}}
    events.append(_event(4, "task.completed", done))
    return events


def test_a_session_before_the_ledger_reports_its_workers_totals() -> None:
    usage = summarise(_session(with_ledger=False)).usage()
    assert (usage["input_tokens"], usage["output_tokens"], usage["cost_usd"]) == (100, 20, 0.5)
    assert usage["turns"] == 3


def test_a_session_with_the_ledger_counts_each_call_once() -> None:
    usage = summarise(_session(with_ledger=True)).usage()
    assert (usage["input_tokens"], usage["output_tokens"], usage["cost_usd"]) == (100, 20, 0.5)
