"""PlainConsole: a line-oriented console for screen readers and dumb terminals (``--plain``).

Owns ``PlainConsole``. It prints one line per fact (a message, a task's status change, a
permission prompt with its scopes, a blocker), never moves the cursor or redraws, and reads
the person's lines from a byte stream: the same slash commands as the full console, and
``once`` / ``task`` / ``session`` / ``project`` / ``deny`` to answer an open permission
prompt. A line that arrives within the prompt guard after a prompt was printed is not taken
as its answer. At the end of its input it waits for the answers to what it sent (the Main
Agent settled, no task running) before it quits, unless a permission prompt is open: no
input is left to answer it. An answer is printed as plain Markdown lines
(``markdown.markdown_plain``). Every projected text passes ``text.clean``; a prompt's command
and segments pass ``air.contracts.display.shown`` (exact text, escaped; IMPL-UI-7).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import trio

from air.contracts.display import cost_text, hides, left_out_text, shown
from air.contracts.ui import (
    PermissionAnswer,
    PermissionPromptProjection,
    ProjectionClient,
    ProjectionSnapshot,
    UiCommand,
    UiCommandChannel,
)
from air.ui_urwid.commands import SLASH_COMMANDS, parse_input
from air.ui_urwid.cost import cost_lines
from air.ui_urwid.markdown import markdown_plain
from air.ui_urwid.text import clean
from air.ui_urwid.views import HIDDEN_WARNING, answer_label

__all__ = ["PLAIN_ANSWERS", "PlainConsole"]

_SETTLED = frozenset({"IDLE", "DIRECT_MODE", "CONFIRMING"})
"""Main Agent states with no turn or run in flight."""

PLAIN_ANSWERS: dict[str, PermissionAnswer] = {
    "once": "allow_once",
    "task": "allow_task",
    "session": "allow_session",
    "project": "allow_project",
    "deny": "deny",
}


class PlainConsole:
    """Print the projection as lines; send the person's lines as UiCommands.

    Args:
        client: the projection.
        commands: where decisions go.
        write: prints one line (e.g. ``lambda s: print(s, flush=True)``).
        frame_interval: shortest time between two passes over the snapshot.
        prompt_guard_s: lines arriving this soon after a prompt do not answer it.
    """

    def __init__(
        self,
        client: ProjectionClient,
        commands: UiCommandChannel,
        write: Callable[[str], None],
        *,
        frame_interval: float = 0.05,
        prompt_guard_s: float = 0.3,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.commands = commands
        self.write = write
        self.frame_interval = frame_interval
        self.prompt_guard_s = prompt_guard_s
        self.clock = clock
        self._changed = trio.Event()
        self._moved = trio.Event()
        self._printed_messages: set[str] = set()
        self._streaming: set[str] = set()
        self._task_status: dict[str, str] = {}
        self._prompts: dict[str, float] = {}
        self._blockers: set[tuple[str, str]] = set()
        self._snapshot = ProjectionSnapshot()
        self._done = False
        self._sent_messages = 0
        """Messages sent to the Main Agent (each becomes a user message in the projection)."""
        self._users_before = 0

    def _ping(self, revision: int) -> None:
        self._changed.set()
        self._moved.set()

    def render(self, snap: ProjectionSnapshot) -> None:
        """Print what is new in ``snap`` since the last call."""
        self._snapshot = snap
        for m in snap.messages:
            if m.message_id in self._printed_messages:
                continue
            if m.status == "streaming":
                if m.message_id not in self._streaming:
                    self._streaming.add(m.message_id)
                    self.write("air is answering…")
                continue
            self._printed_messages.add(m.message_id)
            who = "you" if m.role == "user" else "air"
            text = clean(m.text)
            if m.status != "complete":
                text = f"(failed: {clean(m.error or '')})"
            elif m.role == "assistant":
                text = markdown_plain(text)  # the structure without styles (IMPL-UI-9)
            self.write(f"{who}> {text}")
        for i, t in enumerate(snap.tasks, 1):
            if self._task_status.get(t.task_id) == t.status:
                continue
            self._task_status[t.task_id] = t.status
            line = f"task #{i} {clean(t.title)}: {t.status}"
            if t.status == "completed" and t.summary:
                line += f" — {clean(t.summary)}"
            elif t.error and t.status != "running":
                line += f" — {clean(t.error)}"
            if t.status == "completed" and t.left_out_count:
                line += f" — {left_out_text(t.left_out, t.left_out_count)}"
            self.write(line)
        for b in snap.blockers:
            if (b.task_id, b.reason) not in self._blockers:
                self._blockers.add((b.task_id, b.reason))
                options = "; ".join(clean(o) for o in b.options)
                self.write(f"blocked {b.task_id} ({b.needs}): {clean(b.reason)}. {options}".strip())
        for p in snap.permission_prompts:
            if p.prompt_id not in self._prompts:
                self._prompts[p.prompt_id] = self.clock()
                self._print_prompt(p)

    def _print_prompt(self, p: PermissionPromptProjection) -> None:
        self.write(f"permission needed — {p.tool_name}: {shown(p.summary)} (risk {p.risk_level})")
        if hides(p.summary) or any(hides(seg.text) for seg in p.segments):
            self.write(f"  {HIDDEN_WARNING}")
        for seg in p.segments:
            self.write(f"  segment [{seg.risk_level}] {shown(seg.text)}")
        words = {v: k for k, v in PLAIN_ANSWERS.items()}
        for answer in p.scopes:
            self.write(f"  {words[answer]}: {answer_label(answer, p)[1]}")
        self.write("answer with one of: " + ", ".join(words[a] for a in p.scopes))

    async def handle_line(self, line: str) -> None:
        """Act on one line the person typed."""
        text = line.rstrip("\r\n")
        open_prompts = [
            p for p in self._snapshot.permission_prompts if p.prompt_id in self._prompts
        ]
        if open_prompts and text.strip().lower() in PLAIN_ANSWERS:
            prompt = open_prompts[0]
            if self.clock() - self._prompts[prompt.prompt_id] < self.prompt_guard_s:
                self.write("ignored: the prompt had just appeared; answer again")
                return
            answer = PLAIN_ANSWERS[text.strip().lower()]
            if answer not in prompt.scopes:
                self.write(f"{text.strip()} is not offered for this prompt")
                return
            await self.commands.send(
                UiCommand(kind="permission_response", prompt_id=prompt.prompt_id, decision=answer)
            )
            self._prompts[prompt.prompt_id] = float("inf")
            return
        parsed = parse_input(text)
        if parsed.error:
            self.write(parsed.error)
        elif parsed.command is not None:
            await self.commands.send(parsed.command)
            if parsed.command.kind in ("user_message", "direct", "direct_done"):
                self._sent_messages += 1
        elif parsed.view == "quit":
            force = self._snapshot.totals.running > 0
            await self.commands.send(UiCommand(kind="quit", force=force))
            self._done = True
        elif parsed.view == "help":
            for name, help_line in SLASH_COMMANDS.items():
                self.write(f"{name}: {help_line}")
        elif parsed.view == "tasks":
            t = self._snapshot.totals
            for i, task in enumerate(self._snapshot.tasks, 1):
                self.write(
                    f"task #{i} {clean(task.title)}: {task.status} {cost_text(task.cost_usd)}"
                )
            self.write(
                f"total: {t.completed}/{t.tasks} done, {t.tokens} tokens {cost_text(t.cost_usd, 4)}"
            )
        elif parsed.view == "cost":
            for line in cost_lines(self._snapshot, clean):
                self.write(line)
        elif parsed.view == "model":
            s = self._snapshot.session
            self.write(f"model: {(s.model_id if s else None) or '-'}")
        elif parsed.view == "history":
            for m in self._snapshot.messages:
                self.write(f"{'you' if m.role == 'user' else 'air'}> {clean(m.text)}")

    async def _printer(self) -> None:
        while True:
            await self._changed.wait()
            self._changed = trio.Event()
            self.render(self.client.snapshot())
            await trio.sleep(self.frame_interval)

    def answered(self, snap: ProjectionSnapshot) -> bool:
        """True when nothing the person sent is still being answered: every message sent is
        in the conversation with a reply after the last one (a settled Main Agent that has not
        yet taken the message up is not an answer), the Main Agent is settled, nothing streams
        and no task runs; or a permission prompt is open (with the input at its end nobody can
        answer it)."""
        if snap.permission_prompts:
            return True
        users = sum(1 for m in snap.messages if m.role == "user")
        replied = not self._sent_messages or (
            bool(snap.messages) and snap.messages[-1].role != "user"
        )
        return (
            replied
            and users >= self._users_before + self._sent_messages
            and snap.main_agent.state in _SETTLED
            and not any(m.status == "streaming" for m in snap.messages)
            and not snap.totals.running
        )

    async def _until_answered(self) -> None:
        """The end of input: wait for the answers (a signal still ends the console)."""
        if self.answered(self.client.snapshot()):
            return
        self.write("input ended: waiting for the answer (Ctrl-C quits now)")
        while True:
            moved = self._moved = trio.Event()
            if self.answered(self.client.snapshot()):
                break
            await moved.wait()
        snap = self.client.snapshot()
        self.render(snap)
        if snap.permission_prompts:
            self.write("input ended with a permission prompt open: quitting (its task ends)")

    async def run(self, lines: trio.abc.ReceiveStream) -> None:
        """Run until ``/quit`` or the end of input (which quits once answered)."""
        subscription = self.client.subscribe(self._ping)
        snap = self.client.snapshot()
        self._users_before = sum(1 for m in snap.messages if m.role == "user")
        self.render(snap)
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._printer)
                buf = b""
                while not self._done:
                    chunk = await lines.receive_some(4096)
                    if not chunk:
                        if buf.strip():  # a last line without its newline
                            await self.handle_line(buf.decode("utf-8", "replace"))
                        if self._done:
                            break
                        await self._until_answered()
                        await self.commands.send(UiCommand(kind="quit"))
                        break
                    buf += chunk
                    while b"\n" in buf and not self._done:
                        raw, buf = buf.split(b"\n", 1)
                        await self.handle_line(raw.decode("utf-8", "replace"))
                nursery.cancel_scope.cancel(reason="the plain console ended")
        finally:
            subscription.close()
