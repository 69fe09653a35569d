"""The headless reporter (air.cli.reporter.Progress) reads the fold."""

from __future__ import annotations

import io
from typing import Any

from air.cli.reporter import Progress
from air.contracts.error import make_air_error
from air.contracts.event import EventSource, RuntimeEvent, new_event
from air.events.fold import FoldCursor
from air.events.fold_state import SessionState


def _event(type_: str, payload: dict[str, Any]) -> RuntimeEvent:
    return new_event(
        type_,
        payload,
        session_id="ses_r",
        project_id="prj_r",
        source=EventSource(kind="scheduler"),
    )


def _created(task_id: str) -> RuntimeEvent:
    spec = {"id": task_id, "type": "execute", "title": task_id, "description": task_id}
    return _event("task.created", {"task_spec": spec})


def _started(task_id: str, attempt: int = 1) -> RuntimeEvent:
    return _event(
        "task.started",
        {
            "task_id": task_id,
            "agent_id": f"agt_{task_id}{attempt}",
            "agent_type": "executor",
            "attempt_index": attempt,
        },
    )


class _Logged:
    """A ledger of ``events``: their fold, and those of some types."""

    def __init__(self, events: list[RuntimeEvent]) -> None:
        self.events = events

    def state(self) -> SessionState:
        return FoldCursor().feed_all(self.events)

    def history_of(self, *types: str) -> list[RuntimeEvent]:
        return [e for e in self.events if e.type in types]


def test_progress_lines_and_counts_come_from_the_fold() -> None:
    err = io.StringIO()
    progress = Progress(err, None)
    session = _event(
        "session.created", {"session_id": "ses_r", "project_id": "prj_r", "mode": "headless"}
    )
    progress.resume(_Logged([session, _created("a"), _created("b")]))
    assert progress.status == {"a": "pending", "b": "pending"}
    progress.on_event(_started("a"))
    progress.on_event(_event("task.completed", {"task_id": "a", "attempt_index": 1}))
    # a fact that changes no status prints nothing
    progress.on_event(_event("task.dependency.added", {"task_id": "b", "depends_on_task_id": "a"}))
    # an event seen twice (a resumed log and the live stream overlap) changes nothing
    progress.on_event(_created("a"))
    progress.on_event(_started("b"))
    error = make_air_error(kind="task_failed", message="tests fail").model_dump(mode="json")
    progress.on_event(_event("task.failed", {"task_id": "b", "attempt_index": 1, "error": error}))
    progress.on_event(_started("b", 2))
    progress.on_event(
        _event("task.interrupted", {"task_id": "b", "attempt_index": 2, "reason": "ctrl-c"})
    )
    lines = [line.split("] ", 1)[1] for line in err.getvalue().splitlines()]
    assert lines == [
        "a started",
        "a completed (done 1/2, running 0, failed 0)",
        "b started",
        "b failed: tests fail (done 1/2, running 0, failed 1)",
        "b retried (attempt 2)",
        "b interrupted: ctrl-c (done 1/2, running 0, failed 0)",
    ]
    assert progress.counts() == (1, 0, 0, 2)
    assert progress.status == {"a": "completed", "b": "pending"}  # interrupted resumes pending


def test_the_json_stream_carries_every_event_the_reporter_sees() -> None:
    out = io.StringIO()
    progress = Progress(io.StringIO(), out)
    events = [_created("a"), _event("task.progress", {"task_id": "a", "message": "half"})]
    for event in events:
        progress.on_event(event)
    assert [line for line in out.getvalue().splitlines()] == [e.model_dump_json() for e in events]


def _usage(task_id: str | None, cost: float | None, purpose: str = "task") -> RuntimeEvent:
    return _event(
        "model.usage.recorded",
        {
            "purpose": purpose,
            "provider_id": "anthropic",
            "model_id": "m",
            "task_id": task_id,
            "input_tokens": 1000,
            "output_tokens": 200,
            "cost_usd": cost,
        },
    )


def test_an_end_line_says_the_task_s_tokens_and_cost_and_the_total_is_honest() -> None:
    """Tokens and cost come from the usage ledger (IMPL-USAGE-1): the task's calls at its end,
    every call (the Main Agent's too) in the total."""
    err = io.StringIO()
    progress = Progress(err, None)
    session = _event(
        "session.created", {"session_id": "ses_r", "project_id": "prj_r", "mode": "headless"}
    )
    first = _usage(None, 0.5, "compaction")
    progress.resume(_Logged([session, _created("a"), _created("b"), first]))
    progress.on_event(first)  # the replayed log and the live stream overlap: counted once
    for task_id, cost in (("a", 0.0125), ("b", None)):
        progress.on_event(_started(task_id))
        progress.on_event(_usage(task_id, cost))
        result = {
            "task_id": task_id,
            "agent_id": f"agt_{task_id}1",
            "agent_type": "executor",
            "status": "completed",
            "summary": "done",
            "usage": {"tokens": 1200, "cost_usd": cost},
        }
        payload = {"task_id": task_id, "attempt_index": 1, "worker_result": result}
        progress.on_event(_event("task.completed", payload))
    lines = err.getvalue().splitlines()
    assert lines[1].endswith("failed 0, 1200 tok, $0.0125)")
    assert lines[3].endswith("failed 0, 1200 tok, cost unknown)")
    # a model without a price makes the total a lower bound, never a silent 0
    assert progress.cost_text() == "at least $0.5125 (a model's price is unknown)"


def test_a_rule_learned_on_its_own_is_announced_with_what_to_do() -> None:
    """A rule air promoted from repeated fixes is used only once trusted (IMPL-LEARN-1): the
    run that learned it says so, and where it is; one a person promoted prints nothing."""
    from air.session.knowledge import POLICY_PROMOTER

    err = io.StringIO()
    progress = Progress(err, None)
    session = _event(
        "session.created", {"session_id": "ses_r", "project_id": "prj_r", "mode": "headless"}
    )
    progress.resume(_Logged([session]))
    for by, target in ((POLICY_PROMOTER, "auto"), ("user:air memory promote", "person")):
        payload = {
            "candidate_id": f"cand_{target}",
            "target_ref": f".air/shared/rules/learned-mem_{target}.md",
            "promoted_by": by,
            "summary": "run make first",
        }
        progress.on_event(_event("memory.promoted", payload))
    (line,) = err.getvalue().splitlines()
    assert line.endswith(
        "learned a rule from tasks fixed the same way: .air/shared/rules/learned-mem_auto.md; "
        "the next run asks you to trust it (`air trust` shows it)"
    )
