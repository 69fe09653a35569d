"""The detail pane reads a task's rows from an index built once per projection snapshot."""

from __future__ import annotations

from air.projection import ProjectionStore
from air.testing.sequences import realistic_sequence
from air.ui_urwid.task_items import TaskIndex, TaskItems
from air.ui_urwid.views import detail_rows

SID = "ses_01TASKITEMS00000000000000A"


def _store(length: int, seed: int) -> ProjectionStore:
    store = ProjectionStore()
    store.hydrate_events(realistic_sequence(SID, "prj_items", length, seed=seed))
    return store


def test_the_index_holds_exactly_each_tasks_rows_in_order() -> None:
    snap = _store(1500, 2).snapshot()
    index = TaskIndex()
    assert snap.tool_runs
    assert snap.command_runs
    for task in snap.tasks:
        tid = task.task_id
        assert index.items(snap, tid) == TaskItems(
            tuple(r for r in snap.tool_runs if r.task_id == tid),
            tuple(c for c in snap.command_runs if c.task_id == tid),
            tuple(d for d in snap.diffs if d.task_id == tid),
            tuple(e for e in snap.evidence if e.task_id == tid),
            tuple(b for b in snap.blockers if b.task_id == tid),
        )
    assert index.items(snap, None) == TaskItems()
    assert index.items(snap, "no_such_task") == TaskItems()


def test_one_grouping_per_snapshot() -> None:
    store = _store(800, 3)
    index = TaskIndex()
    snap = store.snapshot()
    busy = max(snap.tasks, key=lambda t: sum(r.task_id == t.task_id for r in snap.tool_runs))
    first = index.items(snap, busy.task_id)
    assert index.items(snap, busy.task_id) is first  # the same snapshot: not grouped again
    store.hydrate_events(realistic_sequence(SID, "prj_items", 900, seed=3)[800:])
    assert store.snapshot() is not snap
    assert index.items(store.snapshot(), busy.task_id) is not first


def test_detail_rows_from_the_index_are_the_rows_of_the_snapshot() -> None:
    snap = _store(1200, 4).snapshot()
    index = TaskIndex()
    for task in snap.tasks[:20]:
        given = detail_rows(snap, task.task_id, 0.0, index.items(snap, task.task_id))
        grouped = detail_rows(snap, task.task_id, 0.0)
        assert [w.render((120,)).text for w in given] == [w.render((120,)).text for w in grouped]
