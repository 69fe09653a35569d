"""The console's smaller concerns, each its own object, composed by ``TuiApp``.

Owns ``PromptGate`` (which permission prompt is open, when it first appeared, the guard that
ignores keys for a moment, the key → answer mapping), ``Announcer`` (a task's end and a blocker
announced once), ``FramePump`` (redraws at a bounded rate on a fixed grid, frame statistics)
and ``copy_text`` / ``osc52`` (the text Ctrl-Y copies, as the console shows it, and its
terminal sequence).
No urwid widgets here.
"""

from __future__ import annotations

import base64
import time
from collections import deque
from collections.abc import Callable
from typing import NamedTuple

import trio

from air.contracts.display import left_out_text, shown
from air.contracts.ui import (
    MessageProjection,
    PermissionAnswer,
    PermissionPromptProjection,
    ProjectionSnapshot,
    UiCommand,
)
from air.ui_urwid.markdown import split_blocks
from air.ui_urwid.text import seen
from air.ui_urwid.views import STATUS_MARK, answer_label

__all__ = ["Announcer", "Copy", "FramePump", "PromptGate", "copy_text", "osc52"]

_TERMINAL = frozenset({"completed", "failed", "blocked", "cancelled", "interrupted"})


class PromptGate:
    """The open permission prompt and its guard.

    Args:
        guard_s: how long after a prompt first appears its keys are ignored.
        clock: monotonic seconds.
    """

    def __init__(self, guard_s: float, clock: Callable[[], float]) -> None:
        self.guard_s = guard_s
        self.clock = clock
        self.ignored = 0
        """Keys ignored because the prompt had just appeared."""
        self._seen: dict[str, float] = {}
        self._answered: set[str] = set()

    def open_prompt(self, snap: ProjectionSnapshot) -> PermissionPromptProjection | None:
        """The first prompt not answered yet (marked seen now if it is new)."""
        for prompt in snap.permission_prompts:
            if prompt.prompt_id not in self._answered:
                self._seen.setdefault(prompt.prompt_id, self.clock())
                return prompt
        return None

    def waiting(self, snap: ProjectionSnapshot) -> int:
        return sum(p.prompt_id not in self._answered for p in snap.permission_prompts)

    def armed(self, prompt: PermissionPromptProjection) -> bool:
        seen = self._seen.get(prompt.prompt_id)
        return seen is not None and self.clock() - seen >= self.guard_s

    def answer(self, prompt: PermissionPromptProjection, key: str) -> UiCommand | None:
        """The UiCommand ``key`` answers with, or None (ignored, or not an answer key)."""
        if not self.armed(prompt):
            self.ignored += 1
            return None
        by_key = {answer_label(a, prompt)[0]: a for a in prompt.scopes}
        if key in ("d", "N") and "deny" in prompt.scopes:
            key = "n"
        answer: PermissionAnswer | None = by_key.get(key)
        if answer is None:
            return None
        self._answered.add(prompt.prompt_id)
        return UiCommand(kind="permission_response", prompt_id=prompt.prompt_id, decision=answer)


class Announcer:
    """Notices for a task reaching an end and for a new blocker, each once."""

    def __init__(self) -> None:
        self._announced: dict[str, str] = {}
        self._blockers: set[tuple[str, str]] = set()
        self._first = True

    def notices(self, snap: ProjectionSnapshot) -> list[str]:
        """What is new since the last call; nothing on the first (the console just opened)."""
        index = {t.task_id: i + 1 for i, t in enumerate(snap.tasks)}
        out: list[str] = []
        for task in snap.tasks:
            if task.status not in _TERMINAL or self._announced.get(task.task_id) == task.status:
                continue
            self._announced[task.task_id] = task.status
            line = f"{STATUS_MARK.get(task.status, '')} task #{index[task.task_id]} {task.title}"
            line += f": {task.status}"
            if task.status == "completed" and task.summary:
                line += f" — {task.summary}"
            elif task.error:
                line += f" — {task.error}"
            if task.status == "completed" and task.left_out_count:
                line += f" — {left_out_text(task.left_out, task.left_out_count)}"
            out.append(line)
        for blocker in snap.blockers:
            key = (blocker.task_id, blocker.reason)
            if key not in self._blockers:
                self._blockers.add(key)
                n = index.get(blocker.task_id, "?")
                out.append(f"task #{n} is blocked: {blocker.reason} (see detail)")
        first, self._first = self._first, False
        return [] if first else out


class Copy(NamedTuple):
    """What Ctrl-Y copies: ``text`` as the console shows it, and whether its source held
    more (escape sequences, a line hidden by a carriage return, control characters)."""

    text: str
    left_out: bool


def copy_text(
    snap: ProjectionSnapshot, *, task_id: str | None, message: MessageProjection | None
) -> Copy | None:
    """The text to copy: the task's diff (else its last command) when ``task_id`` is given,
    else the message's last code block (else its whole text) — each as it is shown: a block
    as drawn (``seen``), a command as exact text (``shown``)."""
    if task_id is not None:
        diff = next((d for d in snap.diffs if d.task_id == task_id), None)
        if diff is not None and diff.text:
            return _as_shown(diff.text, seen(diff.text))
        commands = [c for c in snap.command_runs if c.task_id == task_id]
        return _as_shown(commands[-1].command, shown(commands[-1].command)) if commands else None
    if message is None:
        return None
    code = [b for b in split_blocks(message.text) if b.kind == "code"]
    source = code[-1].text if code else message.text
    return _as_shown(source, seen(source))


def _as_shown(source: str, text: str) -> Copy:
    return Copy(text, text != source)


def osc52(text: str) -> str:
    """The terminal sequence that puts ``text`` on the clipboard (base64: nothing escapes)."""
    return "\x1b]52;c;" + base64.b64encode(text.encode()).decode() + "\x07"


class FramePump:
    """Redraw when dirty, at most once per ``interval``; frames start on a fixed grid, so the
    interval between frames is the larger of ``interval`` and the time a frame takes.

    Args:
        interval: shortest time between two frames.
        tick_every: while ``needs_tick()`` is true, redraw at least this often (elapsed times,
            arming a prompt) even when nothing changed.
    """

    def __init__(self, interval: float, tick_every: float) -> None:
        self.interval = interval
        self.tick_every = tick_every
        self.dirty = True
        self.frames = 0
        self.frame_times: deque[float] = deque(maxlen=100_000)
        """``time.perf_counter()`` at the end of each drawn frame."""
        self.render_times: deque[float] = deque(maxlen=100_000)

    def mark_dirty(self, revision: int = 0) -> None:
        """The projection changed (a subscription handler: cheap, never blocks)."""
        self.dirty = True

    def drew(self, started: float | None = None) -> None:
        done = time.perf_counter()
        if started is not None:
            self.render_times.append(done - started)
        self.frame_times.append(done)
        self.frames += 1

    async def run(self, needs_tick: Callable[[], bool], draw: Callable[[], None]) -> None:
        last_tick = 0.0
        next_frame = trio.current_time()
        while True:
            next_frame = max(next_frame + self.interval, trio.current_time())
            await trio.sleep_until(next_frame)
            now = trio.current_time()
            tick = needs_tick() and now - last_tick >= self.tick_every
            if not self.dirty and not tick:
                continue
            last_tick = now
            self.dirty = False
            started = time.perf_counter()
            draw()
            self.drew(started)
