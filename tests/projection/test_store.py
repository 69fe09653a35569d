"""ProjectionStore reducer tests: live apply, hydrate from a real session DB, unknown types,
bounded tails, the diff-path guard, agreement with the SQL projection."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from air.contracts.event import RuntimeEvent
from air.events.payloads import EPHEMERAL_TYPES
from air.events.store import EventStore
from air.projection import InProcessProjectionClient, ProjectionStore
from air.store.repositories import SessionStore, derive_command_status
from air.store.session_db import open_session_database
from air.testing.console_script import ConsoleEvents, demo_events
from air.testing.sequences import SessionSimulator


def _durable(events: list[RuntimeEvent]) -> list[RuntimeEvent]:
    return [e for e in events if e.type not in EPHEMERAL_TYPES]


def test_demo_session_projects_every_view(tmp_path: Path) -> None:
    diff = tmp_path / "artifacts" / "fix.diff"
    diff.parent.mkdir()
    diff.write_text("--- a/calc.py\n+++ b/calc.py\n-    return a + b\n+    return a - b\n")
    store = ProjectionStore(artifact_root=tmp_path / "artifacts")
    store.hydrate_events(demo_events(ConsoleEvents(), diff_path=str(diff)))
    snap = store.snapshot()
    assert snap.session is not None
    assert snap.session.model_id == "scripted-model"
    assert [m.role for m in snap.messages] == ["user", "assistant", "user"]
    assert snap.messages[1].status == "complete"
    assert "print(1 + 2)" in snap.messages[1].text
    a, b = snap.tasks
    assert (a.status, b.status) == ("completed", "blocked")
    assert (a.wave, b.wave) == (0, 1)
    assert b.depends_on == ["task_a"]
    assert [w.status for w in snap.waves] == ["done", "done"]
    assert a.tokens == 1200
    assert a.turns == 3
    assert a.cost_usd == 0.01
    assert a.summary
    assert a.started_at is not None
    assert a.ended_at is not None
    assert snap.command_runs[0].status == "ok"
    assert snap.command_runs[0].tail.endswith("3 passed\n")
    assert snap.tool_runs[0].input_summary == "pytest -q"
    assert snap.tool_runs[0].status == "ok"
    assert snap.diffs[0].text.startswith("--- a/calc.py")
    assert snap.diffs[0].task_id == "task_a"
    assert snap.evidence[0].task_id == "task_a"
    assert snap.permission_prompts == []  # answered
    assert snap.blockers[0].options == ["pytest", "unittest"]
    assert snap.blockers[0].task_id == "task_b"
    assert snap.totals.tasks == 2
    assert snap.totals.completed == 1
    assert snap.totals.tokens == 1200


def test_streaming_message_and_open_prompt() -> None:
    ev = ConsoleEvents()
    store = ProjectionStore()
    store.hydrate_events(ev.session() + ev.task("t1", "one") + ev.start("t1"))
    mid, started = ev.assistant_start()
    store.hydrate_events(started)
    store.apply(ev.assistant_delta(mid, "Hel"))
    store.apply(ev.assistant_delta(mid, "lo"))
    assert store.snapshot().messages[0].text == "Hello"
    assert store.snapshot().messages[0].status == "streaming"
    pid, events = ev.prompt("t1", "rm -rf build")
    store.hydrate_events(events)
    assert store.snapshot().permission_prompts[0].prompt_id == pid
    store.apply(ev.heartbeat("t1", 4, 900))
    assert store.snapshot().tasks[0].turns == 4
    store.apply(ev.usage("t1", 900, 0.02))  # a running task's calls count at once
    assert store.snapshot().tasks[0].tokens == 900
    assert store.snapshot().totals.cost_usd == 0.02
    store.hydrate_events(ev.assistant_failed(mid, "interrupted by Esc"))
    assert store.snapshot().messages[0].status == "failed"


def test_unknown_types_and_orphan_ephemerals_are_ignored() -> None:
    ev = ConsoleEvents()
    store = ProjectionStore()
    store.hydrate_events(ev.session())
    before = store.snapshot()
    assert not store.apply(ev.event("nobody.knows.this", {"x": 1}))
    assert not store.apply(ev.assistant_delta("msg_unknown", "text"))
    assert not store.apply(ev.output("cmd_unknown", "data"))
    assert not store.apply(ev.event("task.completed", {"task_id": "nope"}))
    assert store.snapshot() is before  # nothing changed, the snapshot was not even rebuilt


def test_command_tail_is_bounded() -> None:
    ev = ConsoleEvents()
    store = ProjectionStore(tail_limit=100)
    store.hydrate_events(ev.session() + ev.task("t", "t") + ev.start("t"))
    cmd, events = ev.command("t", "make")
    store.hydrate_events(events)
    for i in range(1000):
        store.apply(ev.output(cmd, f"line {i}\n"))
    run = store.snapshot().command_runs[0]
    assert len(run.tail) == 100
    assert run.tail.endswith("line 999\n")
    assert run.tail_truncated


def _interrupted_answer(ev: ConsoleEvents, draft_path: Path) -> list[RuntimeEvent]:
    """The durable events of an answer interrupted by Esc whose streamed text was kept."""
    mid, started = ev.assistant_start()
    kept = ev.artifact("", str(draft_path), type_="other")
    kept[0].payload.pop("task_id")
    failed = ev.assistant_failed(mid, "interrupted (Esc)")
    failed[0].payload["failure_artifact_id"] = kept[0].payload["artifact_id"]
    return started + kept + failed


def test_a_reopened_interrupted_answer_shows_its_kept_draft(tmp_path: Path) -> None:
    root = tmp_path / "artifacts"
    root.mkdir()
    draft = root / "draft.md"
    draft.write_text("Once upon a time")
    ev = ConsoleEvents()
    store = ProjectionStore(artifact_root=root)
    store.hydrate_events(ev.session() + ev.user_message("tell me a story"))
    store.hydrate_events(_interrupted_answer(ev, draft))
    answer = store.snapshot().messages[-1]
    assert (answer.text, answer.status, answer.error) == (
        "Once upon a time",
        "failed",
        "interrupted (Esc)",
    )
    # live, the streamed text is on screen already: the file is not read over it
    live = ProjectionStore(artifact_root=root)
    mid, started = ev.assistant_start()
    kept = ev.artifact("", str(draft), type_="other")
    kept[0].payload.pop("task_id")
    failed = ev.assistant_failed(mid, "interrupted (Esc)")
    failed[0].payload["failure_artifact_id"] = kept[0].payload["artifact_id"]
    for event in ev.session() + started + [ev.assistant_delta(mid, "Once")] + kept + failed:
        live.apply(event)
    assert live.snapshot().messages[-1].text == "Once"


def test_a_draft_outside_the_artifact_root_is_never_read(tmp_path: Path) -> None:
    root = tmp_path / "artifacts"
    root.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("TOKEN=hunter2")
    ev = ConsoleEvents()
    store = ProjectionStore(artifact_root=root)
    store.hydrate_events(ev.session() + _interrupted_answer(ev, secret))
    assert store.snapshot().messages[-1].text == ""
    assert store.snapshot().messages[-1].status == "failed"


def test_diff_outside_the_artifact_root_is_never_read(tmp_path: Path) -> None:
    root = tmp_path / "artifacts"
    root.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("TOKEN=hunter2")
    (root / "link.diff").symlink_to(secret)
    ev = ConsoleEvents()
    store = ProjectionStore(artifact_root=root)
    store.hydrate_events(ev.session() + ev.task("t", "t"))
    store.hydrate_events(ev.artifact("t", str(secret)) + ev.artifact("t", str(root / "link.diff")))
    store.hydrate_events(ev.artifact("t", str(root / ".." / "secret.txt")))
    assert [d.text for d in store.snapshot().diffs] == ["", "", ""]
    # and without a root, no file is read at all
    inside = root / "ok.diff"
    inside.write_text("+x\n")
    blind = ProjectionStore()
    blind.hydrate_events(ev.session() + ev.task("t", "t") + ev.artifact("t", str(inside)))
    assert blind.snapshot().diffs[0].text == ""


def test_subscribers_get_the_revision_and_can_leave() -> None:
    ev = ConsoleEvents()
    store = ProjectionStore()
    seen: list[int] = []
    client = InProcessProjectionClient(store)
    sub = client.subscribe(seen.append)
    store.hydrate_events(ev.session() + ev.user_message("hi"))
    sub.close()
    store.hydrate_events(ev.user_message("again"))
    assert seen == [1, 2]
    assert client.snapshot().revision == 3


def test_a_failing_subscriber_does_not_stop_the_fold() -> None:
    ev = ConsoleEvents()
    store = ProjectionStore()

    def boom(revision: int) -> None:
        raise RuntimeError("subscriber bug")

    store.subscribe(boom)
    store.hydrate_events(ev.session() + ev.user_message("hi"))
    assert len(store.snapshot().messages) == 1


def test_hydrate_from_the_session_db_equals_apply_live(tmp_path: Path) -> None:
    diff = tmp_path / "a.diff"
    diff.write_text("+new\n")
    events = demo_events(ConsoleEvents(), diff_path=str(diff))
    db = open_session_database(tmp_path / "session.db")
    try:
        log = EventStore(db)
        live = ProjectionStore(artifact_root=tmp_path)
        for event in events:
            if event.type not in EPHEMERAL_TYPES:
                log.append(event)
            live.apply(event)
        hydrated = ProjectionStore(artifact_root=tmp_path)
        assert hydrated.hydrate(log, "ses_console") == len(_durable(events))
        durable_only = ProjectionStore(artifact_root=tmp_path)
        durable_only.hydrate_events(_durable(events))
        a = hydrated.snapshot().model_dump(exclude={"revision"})
        assert a == durable_only.snapshot().model_dump(exclude={"revision"})
        # live differs only in what ephemeral events carry (tails, live counters, progress)
        b = live.snapshot().model_dump(exclude={"revision"})
        for run in b["command_runs"]:
            run.update(tail="", tail_truncated=False)
        for agent in b["agents"]:
            agent.update(turn=None, tokens=None, state=None)
        for task in b["tasks"]:
            task["progress"] = None
        assert a == b
        # a second hydrate only catches up
        ev = ConsoleEvents()
        ev.n = 1000  # fresh message ids
        log.append(ev.user_message("later")[0])
        assert hydrated.hydrate(log, "ses_console") == 1
        assert hydrated.snapshot().messages[-1].text == "later"
    finally:
        db.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), length=st.integers(min_value=1, max_value=50))
def test_property_hydrate_equals_live_and_tasks_match_the_sql_projection(
    data: st.DataObject, length: int
) -> None:
    rnd = random.Random(data.draw(st.integers(0, 2**32)))
    sim = SessionSimulator("ses_P", "prj_P")
    events = [sim.start()]
    while len(events) < length:
        events += sim.step(lambda options: data.draw(st.sampled_from(options)), rnd)
    with tempfile.TemporaryDirectory() as tmp:
        db = open_session_database(Path(tmp) / "s.db")
        try:
            log = EventStore(db)
            live = ProjectionStore()
            for event in events:
                log.append(event)
                live.apply(event)
            hydrated = ProjectionStore()
            hydrated.hydrate(log, "ses_P")
            snap = hydrated.snapshot()
            assert snap.model_dump() == live.snapshot().model_dump()
            rows = {r["id"]: r["status"] for r in SessionStore(db).tasks.list_all()}
            assert {t.task_id: t.status for t in snap.tasks} == rows
            sql = SessionStore(db)
            commands = {r["id"]: derive_command_status(r) for r in sql.command_runs.list_all()}
            assert {c.command_run_id: c.status for c in snap.command_runs} == commands
            agents = {r["id"]: r["status"] for r in sql.agents.list_all()}
            assert {a.agent_id: a.status for a in snap.agents} == agents
            messages = SessionStore(db).messages.list_all()
            done = {m.message_id for m in snap.messages if m.status == "complete"}
            assert {m["id"] for m in messages} == done
        finally:
            db.close()


def test_an_event_the_fold_refuses_changes_nothing() -> None:
    ev = ConsoleEvents()
    store = ProjectionStore()
    store.hydrate_events(ev.session() + ev.task("t1", "one"))
    before = store.snapshot()
    ev.agent_of["t1"] = "agt_x"
    ev.attempt_of["t1"] = 1
    # completed while still pending: an illegal transition (air.events.transitions.TASK_FROM)
    [early] = [e for e in ev.complete("t1", "too early") if e.type == "task.completed"]
    assert not store.apply(early)
    assert not store.apply(ev.event("task.started", {"task_id": "t1"}))  # invalid payload
    assert store.snapshot() is before
    assert store.snapshot().tasks[0].status == "pending"


def test_rehydrating_after_the_live_feed_changes_nothing(tmp_path: Path) -> None:
    events = demo_events(ConsoleEvents())
    db = open_session_database(tmp_path / "session.db")
    try:
        log = EventStore(db)
        live = ProjectionStore()
        for event in events:
            if event.type not in EPHEMERAL_TYPES:
                log.append(event)
            live.apply(event)
        before = live.snapshot()
        live.hydrate(log, "ses_console")  # the bus said: lagging, re-read the store
        assert live.snapshot() is before  # every stored event was already applied
        assert live.last_seq == len(_durable(events))
    finally:
        db.close()


def test_main_agent_state_comes_from_its_transitions() -> None:
    ev = ConsoleEvents()
    store = ProjectionStore()
    store.hydrate_events(ev.session())
    change = {"from_state": "IDLE", "to_state": "DIRECT_MODE", "trigger": "direct"}
    store.apply(ev.event("main_agent.state.changed", change, "main"))
    assert store.snapshot().main_agent.state == "DIRECT_MODE"
    assert store.snapshot().main_agent.direct_mode
    change = {"from_state": "DIRECT_MODE", "to_state": "IDLE", "trigger": "done"}
    store.apply(ev.event("main_agent.state.changed", change, "main"))
    assert not store.snapshot().main_agent.direct_mode
