"""TuiApp: the urwid console on ``urwid.TrioEventLoop`` inside the caller's Trio nursery.

Owns ``TuiApp``: what the person's keys and lines become (``UiCommand``s on the
``UiCommandChannel``: messages, Esc, cancels, permission answers, quit; local views: help,
history, cost, model, HUD presets, copy), and the run loop. It composes its concerns: the
widgets (``layout.ConsoleLayout``), the prompt guard (``concerns.PromptGate``), the
once-only announcements (``concerns.Announcer``) and the frame pump (``concerns.FramePump``:
the projection's change ping marks it dirty, redraws happen at most once per frame interval
whatever the event rate). It reads only a ``ProjectionClient``.

A console can open before its session (IMPL-FRAME-1): ``TuiApp.opening(text)`` draws the
first frame with no projection and no command channel (the HUD says ``text``; commands typed
meanwhile wait in the outbox), ``attach`` gives it both once the runtime is open; its screen
draws over the ``first_frame.FirstFrame`` already on the terminal (IMPL-FRAME-5).
"""

from __future__ import annotations

import os
import signal
import time
from collections import deque
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import trio
import urwid

from air.contracts.ui import (
    PermissionPromptProjection,
    ProjectionClient,
    ProjectionSnapshot,
    ProjectionSubscription,
    UiCommand,
    UiCommandChannel,
)
from air.ui_urwid.commands import parse_input
from air.ui_urwid.concerns import Announcer, Copy, FramePump, PromptGate, copy_text, osc52
from air.ui_urwid.cost import cost_lines
from air.ui_urwid.first_frame import FirstFrame
from air.ui_urwid.input import InputBox
from air.ui_urwid.layout import ConsoleLayout, empty_snapshot
from air.ui_urwid.root import Root
from air.ui_urwid.terminal import make_screen, newline_keys
from air.ui_urwid.text import clean
from air.ui_urwid.views import (
    HUD_PRESETS,
    MONO_PALETTE,
    PALETTE,
    answer_label,
    permission_prompt,
)

__all__ = ["FRAME_INTERVAL", "PROMPT_GUARD_S", "InputBox", "TuiApp"]


FRAME_INTERVAL = 1 / 30
"""Shortest time between two redraws (30 frames/s at most)."""
PROMPT_GUARD_S = 0.3
"""Keys typed this soon after a permission prompt appears are ignored."""
_BUSY_STATES = frozenset({"CLASSIFYING", "ANSWERING", "DELEGATING", "SCHEDULING", "EXECUTING"})
_BUSY_STATES |= {"INTERRUPTING", "SUMMARIZING", "ARCHITECTURE_DESIGNING", "ARCHITECTURE_REVISING"}
_ENDED = frozenset({"completed", "failed", "cancelled"})
"""Task statuses with nothing left to cancel (an interrupted task resumes: it may be cancelled)."""


class _Unsubscribed:
    def close(self) -> None:
        return None


class _NoProjection:
    """The ``ProjectionClient`` of a console whose session is still opening: nothing yet."""

    def __init__(self) -> None:
        self._snapshot = empty_snapshot()

    def snapshot(self) -> ProjectionSnapshot:
        return self._snapshot

    def subscribe(self, handler: Callable[[int], None]) -> ProjectionSubscription:
        return _Unsubscribed()


class _Unattached:
    """The command channel of a console before ``attach``: never sent to (the outbox is
    delivered only once attached)."""

    async def send(self, command: UiCommand) -> None:
        raise RuntimeError(f"the console sent {command.kind!r} before its session was attached")


class TuiApp:
    """The console.

    Args:
        client: where the projection is read.
        commands: where the person's decisions go.
        screen: the urwid screen (default: the real terminal, bracketed paste on).
        no_color: monochrome palette (default: when ``NO_COLOR`` is set).
        frame_interval: shortest time between redraws.
        prompt_guard_s: how long a new permission prompt ignores keys.
        replay: read-only replay: no input box, replay keys instead.
        hud_extra: text for the HUD: appended (the Main Agent's context use), or first in a
            replay (its position).
        copy_file: where Ctrl-Y also writes the copied source text (OSC 52 goes to the
            terminal in any case; many terminals and tmux setups ignore it).
        clock: monotonic seconds (injected by tests of the prompt guard).
    """

    def __init__(
        self,
        client: ProjectionClient,
        commands: UiCommandChannel,
        *,
        screen: urwid.display.raw.Screen | None = None,
        no_color: bool | None = None,
        frame_interval: float = FRAME_INTERVAL,
        prompt_guard_s: float = PROMPT_GUARD_S,
        replay: bool = False,
        hud_extra: Callable[[], str] | None = None,
        copy_file: str | os.PathLike[str] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.commands = commands
        self.screen = screen
        self.no_color = bool(os.environ.get("NO_COLOR")) if no_color is None else no_color
        self.frame_interval = frame_interval
        self.prompt_guard_s = prompt_guard_s
        self.replay = replay
        self.hud_extra = hud_extra
        self.copy_file = Path(copy_file) if copy_file is not None else None
        self.clock = clock
        self.sent: list[UiCommand] = []
        self.gate = PromptGate(prompt_guard_s, clock)
        self.pump = FramePump(frame_interval, tick_every=min(1.0, prompt_guard_s / 2))
        self.announcer = Announcer()
        self.layout = ConsoleLayout(self._submit, replay=replay)
        self.root = Root(self, self.layout.frame)
        self.last_copy: str | None = None
        self.first_frame_cpu_s: float | None = None
        """CPU seconds this process had used when the first frame was drawn."""
        self._confirm_quit = False
        self._quit_armed = False
        """An idle Ctrl-C was pressed: the next Ctrl-C quits (any other key disarms it)."""
        self._ctrl_c = 0
        self._exiting = False
        self._ui_scope: trio.CancelScope | None = None
        self._outbox_send, self._outbox_recv = trio.open_memory_channel[UiCommand](256)
        self._note = ""
        self.opening_text: str | None = None
        """What the HUD says while the session opens (``opening``); None once attached."""
        self._attached = trio.Event()
        self._attached.set()
        self._subscription: ProjectionSubscription | None = None
        self.closed = trio.Event()
        """Set when ``run`` ended and the terminal was restored."""

    @classmethod
    def opening(
        cls,
        text: str,
        *,
        note: str | None = None,
        takeover: FirstFrame | None = None,
        **options: Any,
    ) -> TuiApp:
        """A console whose session is still opening: it draws at once, shows ``text`` in the
        HUD and keeps the person's commands until ``attach``; ``note`` (e.g. the project was
        just made) stays on the status line once attached; ``takeover``: the first frame
        already on the terminal (IMPL-FRAME-5), which this console's screen draws over."""
        if takeover is not None and options.get("screen") is None:
            options["screen"] = make_screen(takeover)
        app = cls(_NoProjection(), _Unattached(), **options)
        app.opening_text = text
        app._note = note or ""
        app._attached = trio.Event()
        app.layout.say(text)
        return app

    def attach(self, client: ProjectionClient, commands: UiCommandChannel) -> None:
        """Show ``client``'s projection and send to ``commands`` from now on (the commands
        typed while the session opened go first, in order)."""
        self.client = client
        self.commands = commands
        if self._subscription is not None:
            self._subscription.close()
            self._subscription = client.subscribe(self.pump.mark_dirty)
        if self.opening_text is not None:
            self.layout.say(self._note)
        self.opening_text = None
        self._attached.set()
        self.pump.mark_dirty()

    # --- layout --------------------------------------------------------------------------

    def palette(self) -> list[Any]:
        return list(MONO_PALETTE if self.no_color else PALETTE)

    # --- focus ---------------------------------------------------------------------------

    # --- keys ----------------------------------------------------------------------------

    @property
    def _snapshot(self) -> ProjectionSnapshot:
        return self.layout.snapshot

    @property
    def input(self) -> InputBox:
        return self.layout.input

    @property
    def selected_task(self) -> str | None:
        return self.layout.selected_task

    @selected_task.setter
    def selected_task(self, task_id: str | None) -> None:
        self.layout.selected_task = task_id

    def focus_name(self) -> str:
        return self.layout.focus_name()

    def focus(self, name: str) -> None:
        """Move the focus to ``input``, ``tasks``, ``detail`` or ``conversation``."""
        self.layout.focus(name)

    @property
    def ignored_prompt_keys(self) -> int:
        return self.gate.ignored

    @property
    def frames(self) -> int:
        return self.pump.frames

    @property
    def frame_times(self) -> deque[float]:
        return self.pump.frame_times

    @property
    def render_times(self) -> deque[float]:
        return self.pump.render_times

    def _open_prompt(self) -> PermissionPromptProjection | None:
        return None if self.replay else self.gate.open_prompt(self._snapshot)

    def handle_key(self, key: str) -> bool:
        """Global keys; True when consumed (then widgets do not see the key)."""
        if not isinstance(key, str):
            return False
        prompt = self._open_prompt()
        if prompt is not None:
            answer = self.gate.answer(prompt, key)
            if answer is not None and answer.decision is not None:
                self._send(answer)
                self._say(
                    f"answered {prompt.tool_name}: {answer_label(answer.decision, prompt)[1]}"
                )
                self._refresh()
            return True
        if self._confirm_quit:
            self._confirm_quit = False
            if key in ("y", "Y"):
                self._quit(force=True)
            else:
                self._say("quit cancelled")
            return True
        if self.input.search is not None and self.focus_name() == "input":
            return False  # the history search takes every key (Esc, Ctrl-C leave it)
        armed, self._quit_armed = self._quit_armed, False
        layout = self.layout
        on_empty_input = self.focus_name() == "input" and not self.input.edit_text
        if layout.overlay is not None:
            if key in ("esc", "q", "enter", "f1", "?"):
                layout.overlay = None
                self._refresh()
                return True
            return False
        if key == "f1" or (key == "?" and on_empty_input and not self.replay):
            layout.overlay = "help"
        elif key == "f2":
            layout.hud_preset = HUD_PRESETS[(HUD_PRESETS.index(layout.hud_preset) + 1) % 3]
        elif key == "f3":
            layout.follow = not layout.follow
        elif key == "tab":
            layout.cycle_focus()
        elif key == "ctrl y":
            self._copy()
        elif key == "ctrl o":
            layout.toggle_expand()
        elif key == "ctrl d" and self.focus_name() == "input" and self.input.edit_text:
            return False  # the input deletes the character under the cursor
        elif key == "ctrl d":
            self._ask_quit()
        elif key == "ctrl z":  # a terminal with extended keys sends it as a key, not SIGTSTP
            os.kill(os.getpid(), signal.SIGTSTP)  # urwid restores the terminal, then stops
        elif self.replay:
            return self._replay_key(key)
        elif key == "esc":
            self._send(UiCommand(kind="interrupt"))
            self._say("interrupting the Main Agent's current turn (tasks keep running)")
        elif key == "ctrl c":
            self._ctrl_c_pressed(armed)
        elif key == "x" and self.focus_name() == "tasks":
            self._cancel_selected()
        elif len(key) == 1 and key.isprintable() and self.focus_name() != "input":
            self.focus("input")  # typing goes to the input wherever the focus was
            return False
        else:
            return False
        self._refresh()
        return True

    def _replay_key(self, key: str) -> bool:
        if key == " ":
            self._send(UiCommand(kind="replay_pause"))
        elif key in ("n", "."):
            self._send(UiCommand(kind="replay_step"))
        elif key in ("b", ","):
            self._send(UiCommand(kind="replay_back"))
        elif key in ("+", "-"):
            speed = float(getattr(self.commands, "speed", 1.0))
            speed = speed * 2 if key == "+" else max(0.125, speed / 2)
            self._send(UiCommand(kind="replay_speed", speed=speed))
        elif key in ("q", "ctrl c"):
            self._send(UiCommand(kind="quit"))
            self.stop()
        else:
            return False
        self._refresh()
        return True

    def after_key(self) -> None:
        """After a widget handled a key: follow the tree selection and the detail scroll."""
        layout = self.layout
        if self.focus_name() == "tasks":
            selected = layout.tree_selection()
            if selected is not None and selected != layout.selected_task:
                layout.selected_task = selected
                self._refresh()
        elif self.focus_name() == "detail" and layout.follow != layout.detail_at_end():
            layout.follow = layout.detail_at_end()
            self._refresh()

    def _running(self) -> int:
        return self._snapshot.totals.running

    def _ctrl_c_pressed(self, armed: bool) -> None:
        """Work running: cancel it, a second press kills it (IMPL-FRAME-2). Idle: the first
        press clears the line (or says how to quit), a second one in a row quits."""
        busy = self._running() or self._snapshot.main_agent.state in _BUSY_STATES
        if not busy:
            if armed:
                self._ask_quit()
                return
            self._quit_armed = True
            if self.input.edit_text:
                self.input.set_edit_text("")
                self._say("line cleared; Ctrl-C again (or Ctrl-D) quits")
            else:
                self._say("Ctrl-C again (or Ctrl-D) quits")
            return
        self._ctrl_c += 1
        force = self._ctrl_c >= 2
        self._send(UiCommand(kind="cancel_run", force=force))
        running = [t.title for t in self._snapshot.tasks if t.status == "running"]
        what = ", ".join(clean(t) for t in running) or "the Main Agent's work"
        if force:
            self._say(f"killing: {what}")
            self._quit(force=True)  # the work is killed and the console ends (IMPL-FRAME-2)
        else:
            self._say(f"cancelling: {what} (Ctrl-C again kills)")

    def _cancel_selected(self) -> None:
        task = next((t for t in self._snapshot.tasks if t.task_id == self.selected_task), None)
        if task is None:
            self._say("no task selected")
            return
        self._send(UiCommand(kind="cancel_task", task_id=task.task_id))
        self._say(f"cancelling task {task.task_id} ({clean(task.title)}) only")

    def _ask_quit(self) -> None:
        if self._running():
            self._confirm_quit = True
            self._say(f"{self._running()} task(s) running: quit and cancel them? (y/n)")
        else:
            self._quit(force=False)

    def _quit(self, *, force: bool) -> None:
        self._send(UiCommand(kind="quit", force=force))
        self.stop()

    def stop(self) -> None:
        """End the console (the SDD's TuiApp.stop): the loop exits, the screen is restored."""
        self._exiting = True
        if self._ui_scope is not None:
            self._ui_scope.cancel(reason="the person quit the console")

    def _send(self, command: UiCommand) -> None:
        self.sent.append(command)
        try:
            self._outbox_send.send_nowait(command)
        except trio.WouldBlock:
            self._say("busy: the runtime has not taken the last commands yet; try again")

    def _say(self, text: str) -> None:
        self.layout.say(text)

    # --- input ---------------------------------------------------------------------------

    def _resolve_task(self, token: str) -> str:
        tasks = self._snapshot.tasks
        if token.lstrip("#").isdigit():
            n = int(token.lstrip("#"))
            if 1 <= n <= len(tasks):
                return tasks[n - 1].task_id
        matches = [t.task_id for t in tasks if t.task_id.startswith(token)]
        return matches[0] if len(matches) == 1 else token

    def _cannot_cancel(self, task_id: str) -> str | None:
        """Why ``/cancel TASK`` sends nothing: no such task, or it has already ended."""
        task = next((t for t in self._snapshot.tasks if t.task_id == task_id), None)
        if task is None:
            known = ", ".join(t.task_id for t in self._snapshot.tasks[:5])
            return f"no task {clean(task_id)}: nothing cancelled" + (
                f" (tasks: {known})" if known else " (this session has no tasks)"
            )
        if task.status in _ENDED:
            return f"task {task_id} already {task.status}: nothing to cancel"
        return None

    def _submit(self, text: str) -> None:
        parsed = parse_input(text, selected_task=self.selected_task)
        if parsed.error:
            self._say(parsed.error)
        elif parsed.command is not None:
            cmd = parsed.command
            if cmd.kind == "cancel_task" and cmd.task_id:
                cmd = cmd.model_copy(update={"task_id": self._resolve_task(cmd.task_id)})
                refused = self._cannot_cancel(str(cmd.task_id))
                if refused is not None:
                    self._say(refused)
                    self._refresh()
                    return
                self._say(f"cancelling task {cmd.task_id} only")
            self._send(cmd)
        elif parsed.view == "quit":
            self._ask_quit()
        elif parsed.view in ("help", "history"):
            self.layout.overlay = parsed.view
        elif parsed.view == "tasks":
            self.focus("tasks")
        elif parsed.view == "cost":
            self._say("\n".join(cost_lines(self._snapshot, clean)))
        elif parsed.view == "model":
            s = self._snapshot.session
            model = f"{s.model_provider_id or '-'} / {s.model_id or '-'}" if s else "-"
            self._say(f"model: {model} (/model PROVIDER/MODEL switches for what comes next)")
        self._refresh()

    # --- copy ----------------------------------------------------------------------------

    def copy_source(self) -> Copy | None:
        """What Ctrl-Y copies for the current focus."""
        in_tasks = self.focus_name() in ("tasks", "detail") and self.selected_task is not None
        return copy_text(
            self._snapshot,
            task_id=self.selected_task if in_tasks else None,
            message=None if in_tasks else self.layout.focused_message(),
        )

    def _copy(self) -> None:
        copy = self.copy_source()
        if copy is None:
            self._say("nothing to copy here")
            return
        text = copy.text
        self.last_copy = text
        if self.screen is not None and getattr(self.screen, "_started", False):
            self.screen.write(osc52(text))
            self.screen.flush()
        if self.copy_file is not None:
            self.copy_file.write_text(text, encoding="utf-8")
        hidden = " as shown (its hidden characters left out)" if copy.left_out else ""
        self._say(f"copied {len(text.splitlines()) or 1} line(s) of source text{hidden}")

    # --- projection → widgets ------------------------------------------------------------

    def _update(self) -> None:
        snap = self.client.snapshot()
        self.layout.sync(snap, self.announcer.notices(snap))
        if not self._running():
            self._ctrl_c = 0
        self._refresh()

    def _refresh(self) -> None:
        """Rebuild the widgets from the current snapshot (no terminal I/O)."""
        prompt = self._open_prompt()
        box = None
        if prompt is not None:
            pending = self.gate.waiting(self._snapshot) - 1
            box = permission_prompt(prompt, armed=self.gate.armed(prompt), pending=pending)
        extra = self.hud_extra() if self.hud_extra is not None else ""
        if self.replay:  # a replay says so first, however narrow the terminal
            self.root.original_widget = self.layout.refresh(box, lead=extra.lstrip(" ·"))
        else:
            self.root.original_widget = self.layout.refresh(box, extra)
        if self.opening_text is not None:
            self.layout.hud.set_text(f" air · {self.opening_text} · F1 help")

    def render_text(self, size: tuple[int, int]) -> list[str]:
        """Update from the client and render the whole screen to text (tests, plain dumps)."""
        self._update()
        canvas = self.root.render(size, focus=True)
        return [line.decode("utf-8") for line in canvas.text]

    # --- running -------------------------------------------------------------------------

    def _needs_tick(self) -> bool:
        if self._running():
            return True
        prompt = self._open_prompt()
        return prompt is not None and not self.gate.armed(prompt)

    async def _deliver(self, scope: trio.CancelScope) -> None:
        with scope:
            await self._attached.wait()
            async with self._outbox_recv:
                async for command in self._outbox_recv:
                    await self.commands.send(command)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run the console until the person quits (or the caller cancels); with
        ``nursery.start`` it returns once the first frame is on the screen."""
        screen = self.screen or make_screen()
        self.screen = screen
        loop = urwid.MainLoop(
            self.root,
            self.palette(),
            screen=screen,
            event_loop=urwid.TrioEventLoop(),
            handle_mouse=True,  # the wheel scrolls the conversation
            input_filter=lambda keys, raw: newline_keys(screen, keys, raw),
        )
        self._subscription = self.client.subscribe(self.pump.mark_dirty)

        def draw() -> None:
            self._update()
            loop.draw_screen()

        async with trio.open_nursery() as nursery:
            deliver_scope = trio.CancelScope()
            nursery.start_soon(self._deliver, deliver_scope)
            try:
                with ExitStack() as stack:
                    stack.enter_context(loop.start())
                    saved = screen.tty_signal_keys(intr="undefined", quit="undefined")
                    if saved is not None:
                        stack.callback(screen.tty_signal_keys, *saved)
                    draw()
                    self.pump.drew()
                    self.first_frame_cpu_s = time.process_time()
                    task_status.started()
                    with trio.CancelScope() as self._ui_scope:
                        if self._exiting:
                            self._ui_scope.cancel(reason="quit before the loop started")
                        async with trio.open_nursery() as ui:
                            ui.start_soon(self.pump.run, self._needs_tick, draw)
                            await loop.event_loop.run_async()  # type: ignore[attr-defined]
                            ui.cancel_scope.cancel(reason="the urwid loop ended")
            finally:
                if self._subscription is not None:
                    self._subscription.close()
                self._outbox_send.close()
                if self._attached.is_set():
                    # the last commands (quit) still reach the channel, within a bound
                    deliver_scope.deadline = trio.current_time() + 5
                else:
                    deliver_scope.cancel(reason="the console closed before its session opened")
        self.closed.set()
