"""The plain console: one line per fact, answers typed as words, the prompt guard."""

from __future__ import annotations

from air.contracts.ui import UiCommand
from air.projection import InProcessProjectionClient, ProjectionStore
from air.testing.console_script import ConsoleEvents, RecordingChannel
from air.ui_urwid.plain import PlainConsole


class Clock:
    def __init__(self) -> None:
        self.now = 10.0

    def __call__(self) -> float:
        return self.now


async def test_plain_lines_and_a_guarded_prompt_answer() -> None:
    ev = ConsoleEvents()
    store = ProjectionStore()
    channel = RecordingChannel()
    lines: list[str] = []
    clock = Clock()
    console = PlainConsole(InProcessProjectionClient(store), channel, lines.append, clock=clock)
    store.hydrate_events(ev.session() + ev.chat("hi", "hello \x1b[2Jthere"))
    store.hydrate_events(ev.task("t1", "build") + ev.start("t1"))
    pid, prompt = ev.prompt("t1", "make install", risk="high")
    store.hydrate_events(prompt)
    console.render(store.snapshot())
    console.render(store.snapshot())  # nothing new: nothing printed twice
    assert lines[:3] == ["you> hi", "air> hello there", "task #1 build: running"]
    assert "permission needed — shell.run: make install (risk high)" in lines
    assert "answer with one of: once, task, session, project, deny" in lines
    assert len(lines) == len(set(lines))
    await console.handle_line("task\n")
    assert channel.sent == []
    assert lines[-1] == "ignored: the prompt had just appeared; answer again"
    clock.now += 0.5
    await console.handle_line("task\n")
    assert channel.sent == [
        UiCommand(kind="permission_response", prompt_id=pid, decision="allow_task")
    ]
    await console.handle_line("/cancel t1")
    await console.handle_line("/nope")
    assert channel.sent[-1] == UiCommand(kind="cancel_task", task_id="t1")
    assert lines[-1].startswith("unknown command /nope")
    assert all("\x1b" not in line for line in lines)
