"""The console's keys: one table, read by the help overlay (F1, ``?``) and the README.

Owns ``KEYS`` (key → what it does, in the order the help shows them), ``help_text`` (the
help overlay: the keys, then the slash commands) and ``key_map_markdown`` (the same keys as
the README's one table; ``tests/ui/test_keymap.py`` checks the README holds exactly it).
"""

from __future__ import annotations

from air.ui_urwid.commands import SLASH_COMMANDS

__all__ = ["KEYS", "help_text", "key_map_markdown"]

KEYS: tuple[tuple[str, str], ...] = (
    ("Enter", "send the message"),
    ("Shift-Enter, Ctrl-J, Alt-Enter", "new line (or end the line with a backslash)"),
    ("Up/Down, Ctrl-P/Ctrl-N", "input history (from the first / last line of the input)"),
    ("Ctrl-R", "search the input history: type; Ctrl-R again: older; Enter takes it; Esc"),
    ("Ctrl-A / E, Ctrl-U / K", "start / end of the line; delete to its start / end"),
    ("Ctrl-W", "delete the word before the cursor"),
    ("Ctrl-D", "delete the character under the cursor; on an empty line: quit"),
    ("Ctrl-C", "work running: cancel it, again: kill it; idle: clear the line, again: quit"),
    ("Esc", "interrupt the Main Agent's current turn (nothing else)"),
    ("Ctrl-Z", "stop air and its work (`fg` continues; the stop is off the deadlines)"),
    ("PageUp / PageDown", "scroll the conversation (from the input line too)"),
    ("mouse wheel", "scroll the conversation (Shift+drag still selects text)"),
    ("Tab", "focus: input, tasks, detail, conversation"),
    ("Up/Down (tasks)", "select a task; its details follow"),
    ("x (tasks)", "cancel the selected task only"),
    ("Ctrl-Y", "copy the focused code block / the task's diff or command, as shown"),
    ("Ctrl-O", "expand / fold the focused message"),
    ("F2", "HUD preset: full / essential / minimal"),
    ("F3", "follow / hold the live output (scroll-lock)"),
    ("F1, ? (empty line)", "this help (Esc closes; Up/Down scroll it)"),
)
"""Every key of the full console, in the help's order."""


def help_text() -> str:
    """The help overlay: every key, then every slash command."""
    width = max(len(key) for key, _ in KEYS) + 2
    lines = [f"{key:<{width}}{what}" for key, what in KEYS]
    lines.append("")
    lines += [f"{name:<{width}}{text}" for name, text in SLASH_COMMANDS.items()]
    return "\n".join(lines)


def key_map_markdown() -> str:
    """``KEYS`` as one Markdown table (the README's key map)."""
    rows = ["| Key | What it does |", "| --- | --- |"]
    rows += [f"| {key} | {what} |" for key, what in KEYS]
    return "\n".join(rows) + "\n"
