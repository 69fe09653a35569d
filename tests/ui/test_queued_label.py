"""The task view while a task waits for a machine-wide worker slot (IMPL-SLOT-1): its line says
"queued for a slot" in place of its status, and its own status again once it has the slot."""

from __future__ import annotations

import urwid

from air.contracts.progress import QUEUED_FOR_SLOT
from air.contracts.ui import TaskProjection
from air.ui_urwid.views import task_line


def _text(markup: urwid.text.Markup) -> str:
    return str(urwid.Text(markup).text)


def _task(progress: str | None) -> TaskProjection:
    return TaskProjection(
        task_id="t1", title="Build it", type="execute", status="running", progress=progress
    )


def test_a_task_waiting_for_a_slot_says_so_in_its_line() -> None:
    assert "Build it  queued for a slot" in _text(task_line(_task(QUEUED_FOR_SLOT), 1, 0.0))


def test_a_task_that_got_its_slot_shows_its_status_again() -> None:
    line = _text(task_line(_task("got a worker slot after 2.0 s"), 1, 0.0))
    assert "Build it  running" in line
    assert "queued" not in line
