"""ReplayPlayer: recorded pace scaled by speed, pause, step, and read-only refusal."""

from __future__ import annotations

import trio
import trio.testing

from air.contracts.ui import UiCommand
from air.projection import ProjectionStore, ReplayPlayer
from air.testing.console_script import ConsoleEvents, demo_events


async def test_replay_plays_at_recorded_pace_scaled_by_speed(
    autojump_clock: trio.testing.MockClock,
) -> None:
    events = demo_events(ConsoleEvents(step_ms=250))
    store = ProjectionStore()
    player = ReplayPlayer(events, store, speed=2.0)
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        await nursery.start(player.run)
    assert player.done
    assert player.finished.is_set()
    # (n - 1) gaps of 250 ms at 2x speed
    assert trio.current_time() - start == (len(events) - 1) * 0.125
    assert store.snapshot().tasks[0].status == "completed"


async def test_pause_step_speed_and_read_only(autojump_clock: trio.testing.MockClock) -> None:
    events = demo_events(ConsoleEvents(step_ms=1000))
    store = ProjectionStore()
    player = ReplayPlayer(events, store, paused=True)
    async with trio.open_nursery() as nursery:
        await nursery.start(player.run)
        await trio.sleep(60)
        assert player.position == 0  # paused: nothing plays
        await player.send(UiCommand(kind="replay_step"))
        await player.send(UiCommand(kind="replay_step"))
        assert player.position == 2
        assert store.snapshot().session is not None
        await player.send(UiCommand(kind="user_message", text="rewrite history"))
        await player.send(UiCommand(kind="cancel_task", task_id="task_a"))
        assert [c.kind for c in player.refused] == ["user_message", "cancel_task"]
        await player.send(UiCommand(kind="replay_speed", speed=4.0))
        await player.send(UiCommand(kind="replay_pause"))  # play
        await trio.sleep(0.25 * 3 + 0.01)
        assert player.position == 5
        await player.send(UiCommand(kind="quit"))
    assert player.finished.is_set()
    assert not player.done
