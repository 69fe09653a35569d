"""Slash commands of the console, parsed into UiCommands or local view actions.

Owns ``SLASH_COMMANDS`` (name → one-line help), ``Parsed`` and ``parse_input``: a line the
person typed becomes a ``UiCommand`` for the runtime (a message, ``/direct``, ``/done``,
``/cancel``, ``/compact``, ``/model PROVIDER/MODEL``, ``/plan BATCH``, ``/quit``), a local
``view`` action (``/help``, ``/tasks``, ``/cost``, ``/model``, ``/history``), or an ``error``
to show. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from air.contracts.ui import UiCommand

__all__ = ["SLASH_COMMANDS", "Parsed", "parse_input"]

SLASH_COMMANDS: dict[str, str] = {
    "/help": "show keys and commands",
    "/direct": "talk to the Main Agent directly (it edits the main workspace itself)",
    "/done": "leave direct mode",
    "/tasks": "show the task tree",
    "/cancel": "/cancel [TASK]: cancel exactly that task (default: the selected one)",
    "/cost": "show tokens and cost per task and in total",
    "/model": "show the provider and model; /model P/M switches what comes next",
    "/history": "show the whole conversation",
    "/compact": "compact the conversation now (a summary stands for the older messages)",
    "/quit": "quit (asks first when work is running)",
    "/plan": "/plan BATCH: check a batch file as a run would and show its plan (starts nothing)",
}


@dataclass(frozen=True)
class Parsed:
    command: UiCommand | None = None
    view: str | None = None
    """``help``, ``tasks``, ``cost``, ``model``, ``history`` or ``quit`` (asks first)."""
    error: str | None = None


def parse_input(text: str, *, selected_task: str | None = None) -> Parsed:
    """Parse one submitted input.

    Args:
        text: what the person submitted (may span several lines).
        selected_task: the task selected in the tree, the default of ``/cancel``.
    """
    stripped = text.strip()
    if not stripped:
        return Parsed()
    if not stripped.startswith("/") or stripped.startswith("//"):
        body = text[text.index("/") + 1 :] if stripped.startswith("//") else text
        return Parsed(command=UiCommand(kind="user_message", text=body.strip("\n")))
    name, _, rest = stripped.partition(" ")
    name = name.lower()
    rest = rest.strip()
    if name == "/direct":
        return Parsed(command=UiCommand(kind="direct", text=rest or None))
    if name == "/done":
        return Parsed(command=UiCommand(kind="direct_done"))
    if name == "/compact":
        if rest:
            return Parsed(error="/compact takes no argument")
        return Parsed(command=UiCommand(kind="compact"))
    if name == "/cancel":
        task = rest or selected_task
        if not task:
            return Parsed(error="/cancel needs a task: select one in the tree or type /cancel TASK")
        return Parsed(command=UiCommand(kind="cancel_task", task_id=task))
    if name == "/model" and rest:
        return _switch_model(rest)
    if name == "/plan":
        if not rest:
            return Parsed(error="/plan needs a batch file: /plan BATCH (a YAML file)")
        return Parsed(command=UiCommand(kind="plan", text=rest))
    if name in ("/help", "/tasks", "/cost", "/model", "/history", "/quit"):
        if rest and name != "/help":
            return Parsed(error=f"{name} takes no argument")
        return Parsed(view=name[1:])
    return Parsed(error=f"unknown command {name}; /help lists them (start with // to send a /)")


def _switch_model(ref: str) -> Parsed:
    """``/model PROVIDER/MODEL``: the switch, or an error naming the expected shape."""
    provider, _, model = ref.partition("/")
    if not provider or not model or " " in ref:
        return Parsed(error="/model takes PROVIDER/MODEL, e.g. /model openai/gpt-4o")
    return Parsed(command=UiCommand(kind="switch_model", text=ref))
