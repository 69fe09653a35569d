"""The console's screen: its widgets, focus and how a snapshot becomes them.

Owns ``ConsoleLayout``: the HUD, the conversation (entries re-projected from the snapshot,
message widgets cached by content), the task tree and detail pane (rebuilt only when what they
show changed), the status line, the input (or the replay controls) and the overlays (a
permission prompt box, help, history). It knows nothing of keys or commands (``TuiApp``).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

import urwid

from air.contracts.ui import (
    MainAgentProjection,
    MessageProjection,
    ProjectionSnapshot,
    TotalsProjection,
)
from air.ui_urwid.input import InputBox
from air.ui_urwid.keymap import help_text
from air.ui_urwid.task_items import TaskIndex
from air.ui_urwid.text import clean
from air.ui_urwid.ticking import TickingList
from air.ui_urwid.views import (
    HudPreset,
    SelectableRow,
    TreeRowCache,
    detail_rows,
    hud_text,
    message_widget,
    notice_widget,
    task_tree_rows,
)

__all__ = ["FREEZE_AFTER", "ConsoleLayout", "empty_snapshot"]

FREEZE_AFTER = 200
"""A conversation rebuilt with this many new message widgets (a reopen's first frame) is
frozen out of the garbage collector's walks (``gc.freeze``), once per console."""


def empty_snapshot() -> ProjectionSnapshot:
    """The snapshot of nothing, made without validation: no pydantic schema is compiled
    before the console's first frame (IMPL-FRAME-1)."""
    return ProjectionSnapshot.model_construct(
        main_agent=MainAgentProjection.model_construct(), totals=TotalsProjection.model_construct()
    )


class _Conversation(urwid.ListBox[Any]):
    """The conversation's list: while it ``follow``s, each frame shows the end of its last
    entry (however tall: a long answer's last lines); scrolled back, it stays put."""

    def __init__(self, walker: urwid.SimpleFocusListWalker[Any]) -> None:
        super().__init__(walker)
        self.walker = walker
        self.follow = True

    def render(self, size: tuple[int, int], focus: bool = False) -> urwid.Canvas:  # type: ignore[override]
        if self.follow and self.walker:
            last = len(self.walker) - 1
            self.walker.set_focus(last)  # the walker's: no pending realignment of the list
            self.set_focus_pending = self.set_focus_valign_pending = None
            rows = self.walker[last].rows((size[0],), focus)
            self.shift_focus(size, size[1] - rows)
        return super().render(size, focus)


class ConsoleLayout:
    """The widgets of one console and the view state they need.

    Args:
        on_submit: called with the input's text when the person presses Enter.
        replay: a read-only replay (no input box).
    """

    def __init__(self, on_submit: Callable[[str], None], *, replay: bool = False) -> None:
        self.replay = replay
        self.now: Callable[[], float] = time.time
        """The time elapsed times run to: the wall clock, or in a replay the recorded time of
        the last event played (a replayed task runs as long as it ran, not until today)."""
        self.snapshot = empty_snapshot()
        self.hud_preset: HudPreset = "full"
        self.follow = True
        """The detail pane follows new output (False: held, the scroll-lock)."""
        self.selected_task: str | None = None
        self.overlay: str | None = None
        """``help`` or ``history`` while one is open."""
        self.entries: list[tuple[str, str]] = []
        """The conversation: ``("msg", message_id)`` and ``("notice", text)``, in order."""
        self._known_messages: set[str] = set()
        self._msg_cache: dict[str, tuple[tuple[Any, ...], urwid.Widget]] = {}
        self._expanded: set[str] = set()
        self._tree_key: tuple[Any, ...] = ()
        self._second = 0
        self._frozen = False
        self._tree_rows: TreeRowCache = {}
        self._detail_key: tuple[Any, ...] = ()
        self._conv_key: tuple[Any, ...] = ()
        self._task_index = TaskIndex()
        self._build(on_submit)

    def sync(self, snapshot: ProjectionSnapshot, notices: list[str]) -> None:
        """Take a new snapshot: new messages and ``notices`` join the conversation."""
        self.snapshot = snapshot
        for message in snapshot.messages:
            if message.message_id not in self._known_messages:
                self._known_messages.add(message.message_id)
                self.entries.append(("msg", message.message_id))
        self.entries.extend(("notice", line) for line in notices)
        if self.selected_task is None and snapshot.tasks:
            running = [t for t in snapshot.tasks if t.status == "running"]
            self.selected_task = (running or snapshot.tasks)[0].task_id

    def say(self, text: str) -> None:
        self.status.set_text(("notice", text))

    def tree_selection(self) -> str | None:
        """The task the tree's focus is on."""
        focus = self.tree.focus
        row = focus.original_widget if isinstance(focus, urwid.AttrMap) else focus
        return row.key if isinstance(row, SelectableRow) else None

    def detail_at_end(self) -> bool:
        return bool(self.detail_walker) and (
            self.detail.focus_position == len(self.detail_walker) - 1
        )

    def _build(self, on_submit: Callable[[str], None]) -> None:
        self.hud = urwid.Text("", wrap="clip")
        self.conv_walker: urwid.SimpleFocusListWalker[Any] = urwid.SimpleFocusListWalker([])
        self.conv = _Conversation(self.conv_walker)
        self.tree_walker: urwid.SimpleFocusListWalker[Any] = urwid.SimpleFocusListWalker([])
        self.tree = TickingList(self.tree_walker, lambda: self.now())
        self.detail_walker: urwid.SimpleFocusListWalker[Any] = urwid.SimpleFocusListWalker([])
        self.detail = TickingList(self.detail_walker, lambda: self.now())
        self.detail_box = urwid.LineBox(self.detail, title="detail · following")
        self.status = urwid.Text("")
        self.input = InputBox(on_submit)
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
                "replay (read-only): space pause/play · n/b step · +/- speed · q quit · F1 help"
            )
            footer: Any = urwid.Pile([self.status, urwid.Text(("fold", controls))])
        else:
            footer = urwid.Pile([self.status, urwid.LineBox(self.input)])
        self.frame: urwid.Frame[Any, Any, Any] = urwid.Frame(
            self.columns, header=urwid.AttrMap(self.hud, "hud"), footer=footer, focus_part="footer"
        )
        if self.replay:
            self.frame.focus_position = "body"

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

    def cycle_focus(self) -> None:
        order = ["input", "tasks", "detail", "conversation"]
        if self.replay:
            order.remove("input")
        current = self.focus_name()
        nxt = order[(order.index(current) + 1) % len(order)] if current in order else order[0]
        self.focus(nxt)

    @property
    def conv_follow(self) -> bool:
        """The conversation shows its end (False: scrolled back by the person)."""
        return self.conv.follow

    @conv_follow.setter
    def conv_follow(self, value: bool) -> None:
        self.conv.follow = value

    def conversation_size(self, size: tuple[int, int]) -> tuple[int, int]:
        """The conversation's list inside a screen of ``size`` (its box's borders off)."""
        maxcol, maxrow = size
        _trim, (header, footer) = self.frame.frame_top_bottom(size, True)
        width = self.columns.column_widths((maxcol, max(1, maxrow - header - footer)))[0]
        return max(1, width - 2), max(1, maxrow - header - footer - 2)

    def scroll_conversation(self, size: tuple[int, int], key: str, times: int = 1) -> None:
        """Scroll the conversation in a screen of ``size`` by ``key`` (``page up``, ``up``,
        …) wherever the focus is; at its end it follows new messages again."""
        inner = self.conversation_size(size)
        for _ in range(times):
            self.conv.keypress(inner, key)
        self.conv_follow = "bottom" in self.conv.ends_visible(inner)

    def focused_message(self) -> MessageProjection | None:
        by_id = {m.message_id: m for m in self.snapshot.messages}
        if self.focus_name() == "conversation" and self.entries:
            kind, ident = self.entries[min(self.conv.focus_position, len(self.entries) - 1)]
            if kind == "msg":
                return by_id.get(ident)
        for kind, ident in reversed(self.entries):
            if kind == "msg" and by_id.get(ident) and by_id[ident].role == "assistant":
                return by_id[ident]
        return None

    def toggle_expand(self) -> None:
        message = self.focused_message()
        if message is not None:
            self._expanded ^= {message.message_id}

    def _conversation_widgets(self) -> list[urwid.Widget]:
        """The conversation's widgets; a message that left the projection's window leaves the
        entries and the cache (both stay as long as the window, not the session)."""
        by_id = {m.message_id: m for m in self.snapshot.messages}
        self.entries = [e for e in self.entries if e[0] == "notice" or e[1] in by_id]
        out: list[urwid.Widget] = []
        cache: dict[str, tuple[tuple[Any, ...], urwid.Widget]] = {}
        built = 0
        for kind, ident in self.entries:
            if kind == "notice":
                out.append(notice_widget(ident))
                continue
            message = by_id[ident]
            key = (len(message.text), message.status, ident in self._expanded, message.error)
            cached = self._msg_cache.get(ident)
            if cached is None or cached[0] != key:
                cached = (key, message_widget(message, expanded=ident in self._expanded))
                built += 1
            cache[ident] = cached
            out.append(cached[1])
        self._msg_cache = cache
        if built >= FREEZE_AFTER and not self._frozen:
            # a reopen's first frame built the whole window: those widgets stay, so later
            # full collections need not walk them in every frame that triggers one (that walk
            # was what grew with the session in a render: IMPL-READ-5)
            gc.freeze()
            self._frozen = True
        return out

    def refresh(
        self, prompt_box: urwid.Widget | None, extra: str = "", lead: str = ""
    ) -> urwid.Widget:
        """Rebuild the widgets from ``snapshot`` (no terminal I/O); returns the top widget
        (the frame, or an overlay: the prompt box given, help, history)."""
        now = self.now()
        snap = self.snapshot
        self.hud.set_text(hud_text(snap, self.hud_preset, extra=extra, lead=lead))
        # the conversation is rebuilt only when the projection, its notices or an expansion
        # changed: a frame that only scrolls costs the rows on screen
        conv_key = (snap.revision, len(self.entries), frozenset(self._expanded))
        if conv_key != self._conv_key:
            self._conv_key = conv_key
            widgets = self._conversation_widgets()
            if len(widgets) != len(self.conv_walker) or any(
                a is not b for a, b in zip(widgets, self.conv_walker, strict=True)
            ):
                self.conv_walker[:] = widgets
        # the tree and the detail pane are rebuilt only when what they show changed; a second
        # that passes only redraws their running rows on screen (TickingList, IMPL-READ-5)
        second = int(now) if snap.totals.running else 0
        if second != self._second:
            self._second = second
            urwid.CanvasCache.invalidate(self.tree)
            urwid.CanvasCache.invalidate(self.detail)
        tree_key = (tuple(snap.tasks), tuple(snap.waves), self.selected_task)
        if tree_key != self._tree_key:
            self._tree_key = tree_key
            rows = task_tree_rows(snap, now, self.selected_task, self._tree_rows)
            self.tree_walker[:] = rows
            for i, row in enumerate(rows):
                inner = row.original_widget if isinstance(row, urwid.AttrMap) else row
                if isinstance(inner, SelectableRow) and inner.key == self.selected_task:
                    self.tree.set_focus(i)
        sel = self.selected_task
        items = self._task_index.items(snap, sel)  # grouped once per snapshot
        detail_key = (sel, self.follow, tuple(t for t in snap.tasks if t.task_id == sel), items)
        if detail_key != self._detail_key:
            self._detail_key = detail_key
            position = self.detail.focus_position if self.detail_walker else 0
            self.detail_walker[:] = detail_rows(snap, self.selected_task, now, items)
            if self.follow:
                self.detail.set_focus(len(self.detail_walker) - 1)
            elif self.detail_walker:
                self.detail.set_focus(min(position, len(self.detail_walker) - 1))
        self.detail_box.set_title("detail · following" if self.follow else "detail · held (F3)")
        return self._top(prompt_box)

    def _top(self, prompt_box: urwid.Widget | None) -> urwid.Widget:
        if prompt_box is not None:
            return urwid.Overlay(
                prompt_box, self.frame, "center", ("relative", 80), "middle", "pack"
            )
        if self.overlay == "help":
            lines = [urwid.Text(line) for line in help_text().split("\n")]
            body = urwid.LineBox(
                urwid.ListBox(urwid.SimpleFocusListWalker(lines)), title="keys (Esc closes)"
            )
            return urwid.Overlay(
                body, self.frame, "center", ("relative", 90), "middle", ("relative", 80)
            )
        if self.overlay == "history":
            lines = [
                urwid.Text(f"{'you' if m.role == 'user' else 'air'}> {clean(m.text)}")
                for m in self.snapshot.messages
            ]
            history: Any = urwid.ListBox(urwid.SimpleFocusListWalker(lines))
            return urwid.Overlay(
                urwid.LineBox(history, title="history (Esc closes)"),
                self.frame, "center", ("relative", 90), "middle", ("relative", 90),
            )  # fmt: skip
        return self.frame
