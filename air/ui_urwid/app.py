"""TuiApp: the urwid console on ``urwid.TrioEventLoop`` inside the caller's Trio nursery.

Owns ``TuiApp``: the layout (HUD, conversation, task tree, detail pane, input, overlays for
the permission prompt, help and history), the key handling that turns what the person does
into ``UiCommand``s on the ``UiCommandChannel``, and the frame pump. The app reads only a
``ProjectionClient``: the projection's change ping marks it dirty, and the pump redraws at
most once per ``frame_interval`` whatever the event rate (coalescing). Conversation entries
are rebuilt from the snapshot (never kept only on screen), so a re-hydrate or a resize loses
nothing. A permission prompt ignores keys for ``prompt_guard_s`` after it appears. A task's
end and a blocker are announced once.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import trio
import urwid

from air.contracts.ui import (
    MessageProjection,
    PermissionPromptProjection,
    ProjectionClient,
    ProjectionSnapshot,
    UiCommand,
    UiCommandChannel,
)
from air.ui_urwid.commands import parse_input
from air.ui_urwid.concerns import Announcer, FramePump, PromptGate, copy_text, osc52
from air.ui_urwid.text import clean
from air.ui_urwid.views import (
    HUD_PRESETS,
    MONO_PALETTE,
    PALETTE,
    HudPreset,
    SelectableRow,
    answer_label,
    detail_rows,
    help_text,
    hud_text,
    message_widget,
    notice_widget,
    permission_prompt,
    task_tree_rows,
)

__all__ = ["FRAME_INTERVAL", "PROMPT_GUARD_S", "InputBox", "TuiApp"]

Size = tuple[()] | tuple[int] | tuple[int, int]

FRAME_INTERVAL = 1 / 30
"""Shortest time between two redraws (30 frames/s at most)."""
PROMPT_GUARD_S = 0.3
"""Keys typed this soon after a permission prompt appears are ignored."""
_BUSY_STATES = frozenset({"CLASSIFYING", "ANSWERING", "DELEGATING", "SCHEDULING", "EXECUTING"})
_BUSY_STATES |= {"INTERRUPTING", "SUMMARIZING", "ARCHITECTURE_DESIGNING", "ARCHITECTURE_REVISING"}


class InputBox(urwid.Edit):
    """Multi-line input: Enter submits, Alt-Enter or a trailing backslash adds a line, a
    bracketed paste keeps its newlines, ↑/↓ on the first/last line walk the history."""

    def __init__(self, on_submit: Callable[[str], None]) -> None:
        super().__init__(caption="> ", multiline=True)
        self._on_submit = on_submit
        self.pasting = False
        self.history: list[str] = []
        self._hist_pos: int | None = None

    def keypress(self, size: Size, key: str) -> str | None:
        if key == "begin paste":
            self.pasting = True
            return None
        if key == "end paste":
            self.pasting = False
            return None
        if key == "meta enter" or (key == "enter" and self.pasting):
            self.insert_text("\n")
            return None
        if key == "enter":
            text = self.edit_text
            if text.endswith("\\"):
                self.set_edit_text(text[:-1] + "\n")
                self.set_edit_pos(len(self.edit_text))
                return None
            if text.strip():
                self.history.append(text)
            self._hist_pos = None
            self.set_edit_text("")
            self._on_submit(text)
            return None
        before = self.edit_text[: self.edit_pos]
        after = self.edit_text[self.edit_pos :]
        if key in ("ctrl p", "up") and (key == "ctrl p" or "\n" not in before):
            return self._walk(-1) if self.history else key
        if key in ("ctrl n", "down") and (key == "ctrl n" or "\n" not in after):
            return self._walk(1) if self._hist_pos is not None else key
        handled: str | None = super().keypress(size, key)  # type: ignore[arg-type]
        return handled

    def _walk(self, step: int) -> str | None:
        pos = len(self.history) if self._hist_pos is None else self._hist_pos
        pos = max(0, min(len(self.history), pos + step))
        self._hist_pos = None if pos == len(self.history) else pos
        self.set_edit_text("" if self._hist_pos is None else self.history[pos])
        self.set_edit_pos(len(self.edit_text))
        return None
        return None


class _Root(urwid.WidgetPlaceholder[urwid.Widget]):
    def __init__(self, app: TuiApp, widget: urwid.Widget) -> None:
        super().__init__(widget)
        self._app = app

    def selectable(self) -> bool:
        return True  # global keys (a prompt's answer, Esc, F1) arrive even over plain text

    def keypress(self, size: Size, key: str) -> str | None:
        if self._app.handle_key(key):
            return None
        rest = super().keypress(size, key)
        self._app.after_key()
        return rest


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
        hud_extra: text appended to the HUD (the replay position).
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
        self.hud_preset: HudPreset = "full"
        self.follow = True
        self.selected_task: str | None = None
        self.notices: list[str] = []
        self.sent: list[UiCommand] = []
        self.gate = PromptGate(prompt_guard_s, clock)
        self.pump = FramePump(frame_interval, tick_every=min(1.0, prompt_guard_s / 2))
        self.announcer = Announcer()
        self.last_copy: str | None = None
        self.first_frame_cpu_s: float | None = None
        """CPU seconds this process had used when the first frame was drawn."""
        self._snapshot = ProjectionSnapshot()
        self._tree_key: tuple[Any, ...] = ()
        self._detail_key: tuple[Any, ...] = ()
        self._entries: list[tuple[str, str]] = []
        self._known_messages: set[str] = set()
        self._msg_cache: dict[str, tuple[tuple[Any, ...], urwid.Widget]] = {}
        self._expanded: set[str] = set()
        self._overlay: str | None = None
        self._confirm_quit = False
        self._ctrl_c = 0
        self._exiting = False
        self._ui_scope: trio.CancelScope | None = None
        self._outbox_send, self._outbox_recv = trio.open_memory_channel[UiCommand](256)
        self._build_layout()

    # --- layout --------------------------------------------------------------------------

    def _build_layout(self) -> None:
        self.hud = urwid.Text("", wrap="clip")
        self.conv_walker: urwid.SimpleFocusListWalker[Any] = urwid.SimpleFocusListWalker([])
        self.conv = urwid.ListBox(self.conv_walker)
        self.tree_walker: urwid.SimpleFocusListWalker[Any] = urwid.SimpleFocusListWalker([])
        self.tree = urwid.ListBox(self.tree_walker)
        self.detail_walker: urwid.SimpleFocusListWalker[Any] = urwid.SimpleFocusListWalker([])
        self.detail = urwid.ListBox(self.detail_walker)
        self.detail_box = urwid.LineBox(self.detail, title="detail · following")
        self.status = urwid.Text("")
        self.input = InputBox(self._submit)
        self.right = urwid.Pile(
            [("weight", 2, urwid.LineBox(self.tree, title="tasks")), ("weight", 3, self.detail_box)]
        )
        self.columns = urwid.Columns(
            [
                ("weight", 3, urwid.LineBox(self.conv, title="conversation")),
                ("weight", 2, self.right),
            ]
        )
        if self.replay:
            controls = (
                "replay (read-only): space pause/play · n step · +/- speed · q quit · F1 help"
            )
            footer: Any = urwid.Pile([self.status, urwid.Text(("fold", controls))])
        else:
            footer = urwid.Pile([self.status, urwid.LineBox(self.input)])
        self.frame: urwid.Frame[Any, Any, Any] = urwid.Frame(
            self.columns, header=urwid.AttrMap(self.hud, "hud"), footer=footer, focus_part="footer"
        )
        self.root = _Root(self, self.frame)
        if self.replay:
            self.frame.focus_position = "body"

    def palette(self) -> list[Any]:
        return list(MONO_PALETTE if self.no_color else PALETTE)

    # --- focus ---------------------------------------------------------------------------

    def focus_name(self) -> str:
        if self.frame.focus_position == "footer":
            return "input"
        if self.columns.focus_position == 0:
            return "conversation"
        return "tasks" if self.right.focus_position == 0 else "detail"

    def focus(self, name: str) -> None:
        """Move the focus to ``input``, ``tasks``, ``detail`` or ``conversation``."""
        if name == "input":
            self.frame.focus_position = "footer"
            return
        self.frame.focus_position = "body"
        if name == "conversation":
            self.columns.focus_position = 0
        else:
            self.columns.focus_position = 1
            self.right.focus_position = 0 if name == "tasks" else 1

    def _cycle_focus(self) -> None:
        order = ["input", "tasks", "detail", "conversation"]
        if self.replay:
            order.remove("input")
        current = self.focus_name()
        nxt = order[(order.index(current) + 1) % len(order)] if current in order else order[0]
        self.focus(nxt)

    # --- keys ----------------------------------------------------------------------------

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
        if self._overlay is not None:
            if key in ("esc", "q", "enter", "f1"):
                self._overlay = None
                self._refresh()
                return True
            return False
        if key == "f1":
            self._overlay = "help"
        elif key == "f2":
            self.hud_preset = HUD_PRESETS[(HUD_PRESETS.index(self.hud_preset) + 1) % 3]
        elif key == "f3":
            self.follow = not self.follow
        elif key == "tab":
            self._cycle_focus()
        elif key == "ctrl y":
            self._copy()
        elif key == "ctrl o":
            self._toggle_expand()
        elif key == "ctrl d":
            self._ask_quit()
        elif self.replay:
            return self._replay_key(key)
        elif key == "esc":
            self._send(UiCommand(kind="interrupt"))
            self._say("interrupting the Main Agent's current turn (tasks keep running)")
        elif key == "ctrl c":
            self._ctrl_c_pressed()
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
        """After a widget handled a key: follow the tree selection."""
        if self.focus_name() == "tasks":
            focus = self.tree.focus
            row = focus.original_widget if isinstance(focus, urwid.AttrMap) else focus
            if isinstance(row, SelectableRow) and row.key != self.selected_task:
                self.selected_task = row.key
                self._refresh()
        elif self.focus_name() == "detail":
            at_end = self.detail.focus_position == len(self.detail_walker) - 1
            if self.follow != at_end:
                self.follow = at_end
                self._refresh()

    def _running(self) -> int:
        return self._snapshot.totals.running

    def _ctrl_c_pressed(self) -> None:
        busy = self._running() or self._snapshot.main_agent.state in _BUSY_STATES
        if not busy:
            self._ask_quit()
            return
        self._ctrl_c += 1
        force = self._ctrl_c >= 2
        self._send(UiCommand(kind="cancel_run", force=force))
        running = [t.title for t in self._snapshot.tasks if t.status == "running"]
        what = ", ".join(clean(t) for t in running) or "the Main Agent's work"
        if force:
            self._say(f"killing: {what}")
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
        self.status.set_text(("notice", text))

    # --- input ---------------------------------------------------------------------------

    def _resolve_task(self, token: str) -> str:
        tasks = self._snapshot.tasks
        if token.lstrip("#").isdigit():
            n = int(token.lstrip("#"))
            if 1 <= n <= len(tasks):
                return tasks[n - 1].task_id
        matches = [t.task_id for t in tasks if t.task_id.startswith(token)]
        return matches[0] if len(matches) == 1 else token

    def _submit(self, text: str) -> None:
        parsed = parse_input(text, selected_task=self.selected_task)
        if parsed.error:
            self._say(parsed.error)
        elif parsed.command is not None:
            cmd = parsed.command
            if cmd.kind == "cancel_task" and cmd.task_id:
                cmd = cmd.model_copy(update={"task_id": self._resolve_task(cmd.task_id)})
                self._say(f"cancelling task {cmd.task_id} only")
            self._send(cmd)
        elif parsed.view == "quit":
            self._ask_quit()
        elif parsed.view in ("help", "history"):
            self._overlay = parsed.view
        elif parsed.view == "tasks":
            self.focus("tasks")
        elif parsed.view == "cost":
            t = self._snapshot.totals
            per = "; ".join(f"{clean(x.title)} ${x.cost_usd:.2f}" for x in self._snapshot.tasks)
            self._say(f"total {t.tokens} tokens ${t.cost_usd:.4f}" + (f" — {per}" if per else ""))
        elif parsed.view == "model":
            s = self._snapshot.session
            model = f"{s.model_provider_id or '-'} / {s.model_id or '-'}" if s else "-"
            self._say(f"model (fixed for the session): {model}")
        self._refresh()

    # --- copy ----------------------------------------------------------------------------

    def copy_source(self) -> str | None:
        """The source text Ctrl-Y copies for the current focus."""
        in_tasks = self.focus_name() in ("tasks", "detail") and self.selected_task is not None
        return copy_text(
            self._snapshot,
            task_id=self.selected_task if in_tasks else None,
            message=None if in_tasks else self._focused_message(),
        )

    def _focused_message(self) -> MessageProjection | None:
        by_id = {m.message_id: m for m in self._snapshot.messages}
        if self.focus_name() == "conversation" and self._entries:
            kind, ident = self._entries[min(self.conv.focus_position, len(self._entries) - 1)]
            if kind == "msg":
                return by_id.get(ident)
        for kind, ident in reversed(self._entries):
            if kind == "msg" and by_id.get(ident) and by_id[ident].role == "assistant":
                return by_id[ident]
        return None

    def _copy(self) -> None:
        text = self.copy_source()
        if text is None:
            self._say("nothing to copy here")
            return
        self.last_copy = text
        if self.screen is not None and getattr(self.screen, "_started", False):
            self.screen.write(osc52(text))
            self.screen.flush()
        if self.copy_file is not None:
            self.copy_file.write_text(text, encoding="utf-8")
        self._say(f"copied {len(text.splitlines()) or 1} line(s) of source text")

    def _toggle_expand(self) -> None:
        message = self._focused_message()
        if message is not None:
            self._expanded ^= {message.message_id}

    # --- projection → widgets ------------------------------------------------------------

    def _update(self) -> None:
        snap = self.client.snapshot()
        self._snapshot = snap
        for message in snap.messages:
            if message.message_id not in self._known_messages:
                self._known_messages.add(message.message_id)
                self._entries.append(("msg", message.message_id))
        self._entries.extend(("notice", line) for line in self.announcer.notices(snap))
        if not self._running():
            self._ctrl_c = 0
        if self.selected_task is None and snap.tasks:
            running = [t for t in snap.tasks if t.status == "running"]
            self.selected_task = (running or snap.tasks)[0].task_id
        self._refresh()

    def _conversation_widgets(self) -> list[urwid.Widget]:
        by_id = {m.message_id: m for m in self._snapshot.messages}
        out: list[urwid.Widget] = []
        for kind, ident in self._entries:
            if kind == "notice":
                out.append(notice_widget(ident))
                continue
            message = by_id.get(ident)
            if message is None:
                continue
            key = (len(message.text), message.status, ident in self._expanded, message.error)
            cached = self._msg_cache.get(ident)
            if cached is None or cached[0] != key:
                cached = (key, message_widget(message, expanded=ident in self._expanded))
                self._msg_cache[ident] = cached
            out.append(cached[1])
        return out

    def _refresh(self) -> None:
        """Rebuild the widgets from the current snapshot (no terminal I/O)."""
        now = time.time()
        snap = self._snapshot
        extra = self.hud_extra() if self.hud_extra is not None else ""
        self.hud.set_text(hud_text(snap, self.hud_preset, extra=extra))
        at_end = not self.conv_walker or self.conv.focus_position >= len(self.conv_walker) - 1
        widgets = self._conversation_widgets()
        if len(widgets) != len(self.conv_walker) or any(
            a is not b for a, b in zip(widgets, self.conv_walker, strict=True)
        ):
            self.conv_walker[:] = widgets
        if at_end and self.conv_walker:
            self.conv.set_focus(len(self.conv_walker) - 1)
        # the tree and the detail pane are rebuilt only when what they show changed
        second = int(now) if snap.totals.running else 0
        tree_key = (tuple(snap.tasks), tuple(snap.waves), self.selected_task, second)
        if tree_key != self._tree_key:
            self._tree_key = tree_key
            rows = task_tree_rows(snap, now, self.selected_task)
            self.tree_walker[:] = rows
            for i, row in enumerate(rows):
                inner = row.original_widget if isinstance(row, urwid.AttrMap) else row
                if isinstance(inner, SelectableRow) and inner.key == self.selected_task:
                    self.tree.set_focus(i)
        sel = self.selected_task
        detail_key = (
            sel, second, self.follow, tuple(t for t in snap.tasks if t.task_id == sel),
            tuple(r for r in snap.tool_runs if r.task_id == sel),
            tuple(c for c in snap.command_runs if c.task_id == sel),
            tuple(d for d in snap.diffs if d.task_id == sel),
            tuple(e for e in snap.evidence if e.task_id == sel),
            tuple(b for b in snap.blockers if b.task_id == sel),
        )  # fmt: skip
        if detail_key != self._detail_key:
            self._detail_key = detail_key
            position = self.detail.focus_position if self.detail_walker else 0
            self.detail_walker[:] = detail_rows(snap, self.selected_task, now)
            if self.follow:
                self.detail.set_focus(len(self.detail_walker) - 1)
            elif self.detail_walker:
                self.detail.set_focus(min(position, len(self.detail_walker) - 1))
        self.detail_box.set_title("detail · following" if self.follow else "detail · held (F3)")
        self.root.original_widget = self._top()

    def _top(self) -> urwid.Widget:
        prompt = self._open_prompt()
        if prompt is not None:
            pending = self.gate.waiting(self._snapshot) - 1
            box = permission_prompt(prompt, armed=self.gate.armed(prompt), pending=pending)
            return urwid.Overlay(box, self.frame, "center", ("relative", 80), "middle", "pack")
        if self._overlay == "help":
            body = urwid.LineBox(
                urwid.Filler(urwid.Text(help_text()), valign="top"), title="keys (Esc closes)"
            )
            return urwid.Overlay(
                body, self.frame, "center", ("relative", 90), "middle", ("relative", 80)
            )
        if self._overlay == "history":
            lines = [
                urwid.Text(f"{'you' if m.role == 'user' else 'air'}> {clean(m.text)}")
                for m in self._snapshot.messages
            ]
            history: Any = urwid.ListBox(urwid.SimpleFocusListWalker(lines))
            return urwid.Overlay(
                urwid.LineBox(history, title="history (Esc closes)"),
                self.frame, "center", ("relative", 90), "middle", ("relative", 90),
            )  # fmt: skip
        return self.frame

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
            async with self._outbox_recv:
                async for command in self._outbox_recv:
                    await self.commands.send(command)

    async def run(self) -> None:
        """Run the console until the person quits (or the caller cancels)."""
        screen = self.screen or urwid.display.raw.Screen(bracketed_paste_mode=True)
        self.screen = screen
        loop = urwid.MainLoop(
            self.root,
            self.palette(),
            screen=screen,
            event_loop=urwid.TrioEventLoop(),
            handle_mouse=False,
        )
        subscription = self.client.subscribe(self.pump.mark_dirty)

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
                    with trio.CancelScope() as self._ui_scope:
                        if self._exiting:
                            self._ui_scope.cancel(reason="quit before the loop started")
                        async with trio.open_nursery() as ui:
                            ui.start_soon(self.pump.run, self._needs_tick, draw)
                            await loop.event_loop.run_async()  # type: ignore[attr-defined]
                            ui.cancel_scope.cancel(reason="the urwid loop ended")
            finally:
                subscription.close()
                self._outbox_send.close()
                # the last commands (quit) still reach the channel, within a bound
                deliver_scope.deadline = trio.current_time() + 5
