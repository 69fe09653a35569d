"""The console's components, built from projections (SDD §13.2): one function per view.

Owns ``SessionView`` pieces (``message_widget``, ``notice_widget``), ``task_tree_rows``
(TaskListView grouped by wave), ``detail_rows`` (ToolRunView, live command tail, DiffView,
EvidenceView, BlockerReport of the selected task), ``permission_prompt`` (PermissionPrompt:
every answer with its exact scope and every command segment with its risk), ``hud_text``
(HudView presets Full / Essential / Minimal; the help's text is ``keymap``'s), ``risk_attr``
and the ``PALETTE`` / ``MONO_PALETTE`` pair. Every string from a projection passes
``text.clean`` first, but a command, a path or a tool's input, which pass
``air.contracts.display.shown`` (exact text, escaped; IMPL-UI-7). Pure widget construction:
no I/O, no state.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from functools import partial
from typing import Any, Literal

import urwid

from air.contracts.display import cost_text, hides, left_out_text, shown
from air.contracts.progress import QUEUED_FOR_SLOT
from air.contracts.ui import (
    BlockerProjection,
    CommandRunProjection,
    MessageProjection,
    PermissionAnswer,
    PermissionPromptProjection,
    ProjectionSnapshot,
    TaskProjection,
)
from air.ui_urwid.markdown import code_body, code_end, code_top, markdown_widgets, split_blocks
from air.ui_urwid.task_items import TaskItems, group_by_task
from air.ui_urwid.text import clean, diff_markup, fold, fold_middle
from air.ui_urwid.ticking import TickingText

__all__ = [
    "HIDDEN_WARNING",
    "HUD_PRESETS",
    "MONO_PALETTE",
    "PALETTE",
    "STATUS_MARK",
    "TAIL_LINES",
    "HudPreset",
    "SelectableRow",
    "TreeRowCache",
    "answer_label",
    "detail_rows",
    "elapsed_s",
    "hud_text",
    "message_widget",
    "notice_widget",
    "permission_prompt",
    "risk_attr",
    "task_line",
    "task_tree_rows",
]

HudPreset = Literal["full", "essential", "minimal"]
HUD_PRESETS: tuple[HudPreset, ...] = ("full", "essential", "minimal")
HIDDEN_WARNING = (
    "! this request holds control or invisible characters, shown escaped "
    "(\\r, \\x1b, \\u202e …; a backslash of its own is shown as \\\\)"
)
"""Said in a permission prompt whose text ``shown`` had to escape."""
TAIL_LINES = 20
"""Lines of a command's live output shown in the detail pane."""
_TAIL_CHARS = 4000

PALETTE: list[tuple[str, str, str]] = [
    ("body", "default", "default"),
    ("hud", "black", "light gray"),
    ("user", "light cyan,bold", "default"),
    ("assistant", "light green,bold", "default"),
    ("code", "yellow", "default"),
    ("code_label", "dark gray", "default"),
    ("fold", "dark gray", "default"),
    ("notice", "light magenta", "default"),
    ("error", "light red", "default"),
    ("selected", "black", "light cyan"),
    ("wave", "light blue,bold", "default"),
    ("status_running", "yellow", "default"),
    ("status_completed", "light green", "default"),
    ("status_failed", "light red", "default"),
    ("status_cancelled", "dark gray", "default"),
    ("status_pending", "default", "default"),
    ("diff_add", "light green", "default"),
    ("diff_del", "light red", "default"),
    ("diff_hunk", "light cyan", "default"),
    ("diff_file", "bold", "default"),
    ("prompt", "white", "dark red"),
    ("prompt_body", "default", "default"),
    ("risk_high", "light red,bold", "default"),
    ("risk_medium", "yellow,bold", "default"),
    ("risk_low", "light green", "default"),
    ("title", "bold", "default"),
    ("md_heading", "light blue,bold,underline", "default"),
    ("md_strong", "bold", "default"),
    ("md_emph", "italics", "default"),
    ("md_strike", "strikethrough", "default"),
    ("md_code", "yellow", "default"),
    ("md_link", "light blue,underline", "default"),
    ("md_url", "dark gray", "default"),
    ("md_quote", "italics", "default"),
    ("md_rule", "dark gray", "default"),
    ("md_bullet", "light cyan", "default"),
    ("md_table_head", "bold", "default"),
    ("syn_keyword", "light magenta", "default"),
    ("syn_string", "light green", "default"),
    ("syn_comment", "dark gray", "default"),
    ("syn_number", "light cyan", "default"),
    ("syn_name", "light blue", "default"),
]
"""Colour palette; ``MONO_PALETTE`` (``NO_COLOR``) maps every entry to plain/bold/reverse."""

_MONO = {"hud": "standout", "selected": "standout", "prompt": "standout", "user": "bold"}
_MONO |= {"assistant": "bold", "wave": "bold", "diff_file": "bold", "title": "bold"}
_MONO |= {"md_heading": "bold,underline", "md_strong": "bold", "md_emph": "italics"}
_MONO |= {"md_strike": "strikethrough", "md_code": "underline", "md_link": "underline"}
_MONO |= {"md_quote": "italics", "md_table_head": "bold"}
_MONO |= {"risk_high": "bold", "risk_medium": "bold", "error": "bold", "status_failed": "bold"}
MONO_PALETTE: list[tuple[str, str, str, str]] = [
    (name, f"default,{_MONO[name]}" if name in _MONO else "default", "default", _MONO.get(name, ""))
    for name, _fg, _bg in PALETTE
]
"""No colour at all, whatever the terminal's colour depth: the settings are in the mono column
(urwid draws in one colour when ``NO_COLOR`` is set) and in the foreground (a screen of more
colours), so the selected row and the HUD stay visible in reverse video."""


def risk_attr(level: str) -> str:
    """The attribute a risk level is drawn with: only ``low`` is green."""
    if level in ("high", "critical"):
        return "risk_high"
    return "risk_low" if level == "low" else "risk_medium"


STATUS_MARK = {
    "pending": "·",
    "running": "▶",
    "completed": "✓",
    "failed": "✗",
    "blocked": "!",
    "cancelled": "⊘",
    "interrupted": "‖",
}
_STATUS_ATTR = {
    "running": "status_running",
    "completed": "status_completed",
    "failed": "status_failed",
    "blocked": "status_failed",
    "cancelled": "status_cancelled",
    "interrupted": "status_cancelled",
}

_SELECTED_ROW: dict[str | None, str] = dict.fromkeys(
    [None, "status_pending", *_STATUS_ATTR.values()], "selected"
)
"""The selected task row is drawn whole in the ``selected`` attribute (reverse video)."""

_ANSWER_LABEL: dict[PermissionAnswer, tuple[str, str]] = {
    "allow_once": ("1", "allow once: only this call"),
    "allow_task": ("2", "allow for task {task}: the same request again within that task only"),
    "allow_session": ("3", "allow for this session: the same request in any task until it ends"),
    "allow_project": ("4", "allow for this project: remembered for later sessions too"),
    "deny": ("n", "deny: the tool call fails and the worker is told why"),
}


class SelectableRow(TickingText):
    """A text row that can take focus (task tree entries); with ``markup_at`` its text runs
    with the clock (``TickingText``: a running task's elapsed time)."""

    _selectable = True

    def __init__(
        self,
        markup: urwid.text.Markup,
        key: str,
        *,
        markup_at: Callable[[float], urwid.text.Markup] | None = None,
        now: float = 0.0,
    ) -> None:
        super().__init__(
            markup_at or (lambda _now: markup), now, ticking=markup_at is not None, wrap="ellipsis"
        )
        self.key = key

    def keypress(self, size: tuple[()] | tuple[int] | tuple[int, int], key: str) -> str | None:
        return key


def _parse(ts: str | None) -> float | None:
    if not ts:
        return None
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def elapsed_s(task: TaskProjection, now: float) -> float | None:
    """Seconds the task's current attempt has run (up to now, or to its end)."""
    start = _parse(task.started_at)
    if start is None:
        return None
    end = _parse(task.ended_at) or now
    return max(0.0, end - start)


def _fmt_tokens(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def _fmt_elapsed(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = int(seconds)
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


# --- conversation -------------------------------------------------------------------------


def message_widget(message: MessageProjection, *, expanded: bool = False) -> urwid.Widget:
    """One message: a role label beside its blocks (a hanging indent). An answer's text is
    drawn as Markdown (``markdown``: IMPL-UI-9), a person's as they typed it; each top-level
    code block is framed with its info string; a long block is folded (its head and its end;
    while streaming, its last lines)."""
    role = "you" if message.role == "user" else "air"
    attr = "user" if message.role == "user" else "assistant"
    answer = message.role == "assistant"
    rows: list[urwid.Widget] = []
    streaming = message.status == "streaming"

    def text_rows(text: str, kind: str, lang: str) -> list[urwid.Widget]:
        if kind == "code":
            return [code_body(text, lang)]
        return markdown_widgets(text) if answer else [urwid.Text(text)]

    for block in split_blocks(clean(message.text)):
        if rows and answer:
            rows.append(urwid.Divider())  # blocks apart, as Markdown's own are
        if expanded:
            shown, hidden, end = block.text, 0, ""
        elif streaming:
            shown, hidden = fold(block.text, tail=True)
            end = ""
        else:
            shown, hidden, end = fold_middle(block.text)
        folded = hidden > 0 or end != ""
        if block.kind == "code":
            rows.append(code_top(block.lang))
        if hidden and streaming:
            rows.append(urwid.Text(("fold", f"… {hidden} earlier lines")))
        rows.extend(text_rows(shown, block.kind, block.lang))
        if folded and not streaming:
            what = f"{hidden} lines folded" if hidden else "folded"
            rows.append(urwid.Text(("fold", f"… {what} (Ctrl-O shows all) …")))
            rows.extend(text_rows(end, block.kind, block.lang))
        if block.kind == "code":
            rows.append(code_end())
    if message.status == "streaming":
        rows.append(urwid.Text(("fold", "▌ streaming")))
    elif message.status == "failed":
        rows.append(urwid.Text(("error", f"✗ {clean(message.error or 'failed')}")))
    body = urwid.Pile(rows or [urwid.Text("")])
    return urwid.Columns([(len(role) + 2, urwid.Text((attr, f"{role}> "))), body])


def notice_widget(text: str) -> urwid.Widget:
    return urwid.Text(("notice", f"• {clean(text)}"))


# --- task tree ------------------------------------------------------------------------------


def task_line(task: TaskProjection, index: int, now: float) -> urwid.text.Markup:
    mark = STATUS_MARK.get(task.status, "?")
    attr = _STATUS_ATTR.get(task.status, "status_pending")
    usage = f"{_fmt_elapsed(elapsed_s(task, now))} {task.turns}t {_fmt_tokens(task.tokens)}tok"
    cost = f" {cost_text(task.cost_usd)}" if task.cost_usd != 0 else ""
    status = QUEUED_FOR_SLOT if task.progress == QUEUED_FOR_SLOT else task.status
    return [
        (attr, f"{mark} #{index} "),
        clean(task.title),
        (attr, f"  {status}"),
        f"  {usage}{cost}",
    ]


TreeRowCache = dict[str, tuple[tuple[Any, ...], urwid.Widget]]
"""Per task: what its row was built from, and the row (``task_tree_rows``)."""


def task_tree_rows(
    snapshot: ProjectionSnapshot,
    now: float,
    selected: str | None,
    cache: TreeRowCache | None = None,
) -> list[urwid.Widget]:
    """Waves with their tasks; a task row carries its id as ``SelectableRow.key``.

    With ``cache``, a task's row is built again only when the task or its number changed: a
    tree of hundreds of tasks costs a lookup each. A running task's row runs with the clock
    itself (``TickingText``: ticked only while on screen, ``TickingList``), so a second that
    passes builds nothing here (IMPL-READ-5).
    """
    rows: list[urwid.Widget] = []
    by_id = {t.task_id: t for t in snapshot.tasks}
    index = {t.task_id: i + 1 for i, t in enumerate(snapshot.tasks)}
    for wave in snapshot.waves:
        rows.append(urwid.Text(("wave", f"Wave {wave.index + 1} · {wave.status}")))
        for tid in wave.task_ids:
            task = by_id[tid]
            key = (task, index[tid])
            cached = cache.get(tid) if cache is not None else None
            if cached is None or cached[0] != key:
                ticking = task.started_at is not None and task.ended_at is None
                markup_at = partial(task_line, task, index[tid])
                row = SelectableRow(
                    markup_at(now), tid, markup_at=markup_at if ticking else None, now=now
                )
                cached = (key, urwid.AttrMap(row, None, focus_map=_SELECTED_ROW))
                if cache is not None:
                    cache[tid] = cached
            rows.append(cached[1])
    t = snapshot.totals
    if snapshot.tasks:
        rows.append(
            urwid.Text(
                f"total: {t.completed}/{t.tasks} done, {t.running} running, {t.turns}t "
                f"{_fmt_tokens(t.tokens)}tok {cost_text(t.cost_usd)}"
            )
        )
    else:
        rows.append(urwid.Text(("fold", "no tasks yet")))
    return rows


# --- detail pane ----------------------------------------------------------------------------


def _command_rows(cmd: CommandRunProjection, *, tail_lines: int) -> list[urwid.Widget]:
    status = cmd.status if cmd.exit_code is None else f"{cmd.status} (exit {cmd.exit_code})"
    rows: list[urwid.Widget] = [urwid.Text([("title", "$ "), shown(cmd.command), f"  {status}"])]
    tail = clean(cmd.tail).rstrip("\n")
    if tail:
        lines = tail.split("\n")
        hidden = len(lines) - tail_lines
        if hidden > 0 or cmd.tail_truncated:
            rows.append(urwid.Text(("fold", "  … earlier output not shown")))
        last = "\n".join(lines[-tail_lines:])[-_TAIL_CHARS:]
        rows.append(urwid.Padding(urwid.Text(last), left=2))
    return rows


def blocker_widget(blocker: BlockerProjection) -> urwid.Widget:
    lines: list[urwid.Widget] = [
        urwid.Text(("error", f"Blocked ({blocker.needs}): {clean(blocker.reason)}"))
    ]
    for n, option in enumerate(blocker.options, 1):
        lines.append(urwid.Text(f"  {n}. {clean(option)}"))
    return urwid.LineBox(urwid.Pile(lines), title="blocker")


def _detail_header(task: TaskProjection, now: float) -> str:
    return (
        f"{task.task_id} · {task.type} · {task.status} · attempt {task.attempt} · "
        f"{_fmt_elapsed(elapsed_s(task, now))} · {task.turns}t "
        f"{_fmt_tokens(task.tokens)}tok {cost_text(task.cost_usd)}"
    )


def detail_rows(
    snapshot: ProjectionSnapshot, task_id: str | None, now: float, items: TaskItems | None = None
) -> list[urwid.Widget]:
    """Everything known about one task: header, blocker, tools, commands, diffs, evidence
    (``items``: the task's rows, ``TaskIndex.items``; grouped here when not given)."""
    task = next((t for t in snapshot.tasks if t.task_id == task_id), None)
    if task is None:
        return [urwid.Text(("fold", "select a task (Tab, then ↑/↓) to see its details"))]
    rows: list[urwid.Widget] = [
        urwid.Text(("title", clean(task.title))),
        TickingText(
            partial(_detail_header, task),
            now,
            ticking=task.started_at is not None and task.ended_at is None,
        ),
    ]
    if task.progress:
        rows.append(urwid.Text(("notice", clean(task.progress))))
    if task.error:
        rows.append(urwid.Text(("error", clean(task.error))))
    if task.summary:
        rows.append(urwid.Text(clean(task.summary)))
    if task.left_out_count:
        rows.append(urwid.Text(("notice", left_out_text(task.left_out, task.left_out_count))))
    mine = items if items is not None else group_by_task(snapshot).get(task.task_id, TaskItems())
    for blocker in mine.blockers:
        rows.append(blocker_widget(blocker))
    tools = mine.tool_runs
    if tools:
        rows.append(urwid.Text(("wave", "tools")))
        for run in tools:
            what = shown(run.input_summary)
            extra = f" — {clean(run.error)}" if run.error else ""
            rows.append(urwid.Text(f"  {run.tool_name} {what}  {run.status}{extra}"))
    for cmd in mine.command_runs:
        rows.extend(_command_rows(cmd, tail_lines=TAIL_LINES))
    for diff in mine.diffs:
        rows.append(urwid.Text(("wave", f"diff {shown(diff.path.rsplit('/', 1)[-1])}")))
        if diff.text:
            rows.append(urwid.Text(diff_markup(clean(diff.text))))
        if diff.truncated:
            rows.append(urwid.Text(("fold", "… diff truncated")))
    evidence = mine.evidence
    if evidence:
        rows.append(urwid.Text(("wave", "evidence")))
        for ev in evidence:
            rows.append(urwid.Text(f"  [{ev.kind}] {clean(ev.claim)} ({clean(ev.ref)})"))
    return rows


# --- permission prompt ----------------------------------------------------------------------


def answer_label(answer: PermissionAnswer, prompt: PermissionPromptProjection) -> tuple[str, str]:
    """The key and the exact scope sentence of one answer."""
    key, text = _ANSWER_LABEL[answer]
    return key, text.format(task=prompt.task_id or "(none)")


def permission_prompt(
    prompt: PermissionPromptProjection, *, armed: bool, pending: int = 0
) -> urwid.Widget:
    """The prompt box. ``armed`` False shows that keys are still ignored (just appeared).

    The summary (the command and the reasons) and every segment are shown as exact text
    (``shown``: escaped, never a terminal's rendering of it), with a warning when they hide
    characters."""
    rows: list[urwid.Widget] = [
        urwid.Text([("title", f"{prompt.tool_name}: "), shown(prompt.summary)]),
        urwid.Text(["risk: ", (risk_attr(prompt.risk_level), prompt.risk_level)]),
    ]
    if hides(prompt.summary) or any(hides(seg.text) for seg in prompt.segments):
        rows.append(urwid.Text(("risk_high", HIDDEN_WARNING)))
    if prompt.task_id:
        rows.append(urwid.Text(f"asked by task {prompt.task_id}"))
    for seg in prompt.segments:
        attr = risk_attr(seg.risk_level)
        category = f" {seg.category}" if seg.category else ""
        rows.append(
            urwid.Text(["  segment ", (attr, f"[{seg.risk_level}{category}] "), shown(seg.text)])
        )
    rows.append(urwid.Divider())
    for answer in prompt.scopes:
        key, text = answer_label(answer, prompt)
        rows.append(urwid.Text([("title", f" {key} "), text]))
    if not armed:
        rows.append(urwid.Text(("fold", "(keys are ignored for a moment so typing cannot answer)")))
    if pending:
        rows.append(urwid.Text(("fold", f"{pending} more prompt(s) waiting")))
    return urwid.AttrMap(
        urwid.LineBox(urwid.Pile(rows), title="permission needed"), "prompt_body", None
    )


# --- HUD and help ---------------------------------------------------------------------------


def hud_text(
    snapshot: ProjectionSnapshot, preset: HudPreset, *, extra: str = "", lead: str = ""
) -> str:
    """The HUD line: ``lead`` (a replay's position), then waiting permission prompts, then the
    rest, ``extra`` last. The line is clipped at the terminal's width, and at 80 columns what
    the person must know (this is a replay; something waits for them) must still show."""
    state = snapshot.main_agent.state + (" (direct)" if snapshot.main_agent.direct_mode else "")
    t = snapshot.totals
    n = len(snapshot.permission_prompts)
    prompts = f"{n} prompt{'s' if n > 1 else ''} waiting · " if n else ""
    if preset == "minimal":
        text = prompts + state
    elif preset == "essential":
        text = f"{prompts}{state} · {t.running} running · {t.completed}/{t.tasks} done · "
        text += cost_text(t.cost_usd)
    else:
        session = snapshot.session
        sid = session.session_id if session else "-"
        model = session_model(snapshot)
        text = (
            f"air · {prompts}{sid} · {model} · {state} · tasks {t.completed}/{t.tasks} done, "
            f"{t.running} running, {t.failed} failed, {t.blocked} blocked, "
            f"{t.cancelled} cancelled · "
            f"{_fmt_tokens(t.tokens)}tok {cost_text(t.cost_usd)} · F1 help"
        )
    return f" {lead} · {text}{extra}" if lead else f" {text}{extra}"


def session_model(snapshot: ProjectionSnapshot) -> str:
    """``provider/model`` the session recorded (issue 24 item 4); ``-`` when it recorded none."""
    s = snapshot.session
    if s is None or not s.model_id:
        return "-"
    return f"{s.model_provider_id}/{s.model_id}" if s.model_provider_id else s.model_id
