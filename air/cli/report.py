"""``air report --html FILE``: one self-contained HTML page of a session.

Owns: rendering the report's fold of a session (``air.cli.report_snapshot.open_report``: the
fold the runtime stored and the events of ``REPORT_TYPES`` after it, IMPL-READ-8; the span from
the summary row; the shown commands' output paths from the artifacts table) as a page with no
network reference, no script and inline CSS (IMPL-REL-7): a timeline with one row per worker
(agent) and one bar per attempt (placed by its start and end, labelled with the task, wave and
attempt, coloured by outcome: a retry is a second bar of the same task, a cancel
is its own colour), merge markers, the waves, and per task its status, duration, tokens, turns,
cost, error, and links to its diffs, command output and evidence (the artifact files under the
session directory, each also inlined, bounded, in a ``<details>``). Everything from the log is
escaped: first as exact text (``air.contracts.display.shown``: a command's ``\\r``, escape
sequences, bidi and zero-width characters made visible, IMPL-UI-7), then for HTML; an artifact
path outside the session's directory is neither linked nor read. A long task shows its latest
10 commands (and latest 5 that did not succeed), diffs and evidence with counts of all and the
command for the rest: ``--task ID``, that task's page with every one (a fold of the whole log).
"""

from __future__ import annotations

import html
import os
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from air.artifacts.names import artifact_file
from air.cli.history import find_project, resolve_session, session_db_path
from air.cli.session_report import (
    SessionSummary,
    TaskSummary,
    command_outcome,
    read_report_events,
    summarise,
)
from air.contracts.display import cost_text, shown
from air.contracts.error import AirException, CliExit

INLINE_LIMIT = 64 * 1024
"""At most this many bytes of one artifact are inlined into the page."""

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}
.timeline{position:relative;border:1px solid #ccc;background:#fafafa}
.row{position:relative;height:26px;border-bottom:1px solid #eee}
.label{position:absolute;left:4px;top:4px;width:210px;overflow:hidden;white-space:nowrap;
font:12px monospace}
.lane{position:absolute;left:220px;right:8px;top:0;bottom:0}
.bar{position:absolute;top:4px;height:18px;border-radius:3px;font:11px/18px monospace;
overflow:hidden;white-space:nowrap;color:#fff;padding-left:3px;box-sizing:border-box}
.completed{background:#2e7d32}.failed{background:#c62828}.blocked{background:#6d4c41}
.cancelled{background:#757575}.interrupted{background:#ef6c00}.running{background:#1565c0}
.merge{position:absolute;top:0;bottom:0;width:2px;background:#6a1b9a}
.wave{position:absolute;top:0;bottom:0;border-left:1px dashed #999;font:10px monospace;
color:#555;padding-left:2px}
pre{background:#f4f4f4;padding:6px;max-height:320px;overflow:auto;font-size:12px}
"""


def _e(value: object) -> str:
    """Free text from the log for the page: invisible characters escaped, then HTML."""
    return html.escape(shown(str(value), keep_lines=True), quote=True)


def _exact(value: object) -> str:
    """A command or path for the page: every hidden character, newlines too, escaped."""
    return html.escape(shown(str(value)), quote=True)


def _stamp(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


class _Page:
    def __init__(
        self,
        summary: SessionSummary,
        session_dir: Path,
        out: Path,
        outputs: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        self.summary = summary
        self.outputs = outputs or {}
        self.session_dir = session_dir.resolve()
        self.out_dir = out.resolve().parent
        self.start = _stamp(summary.started_at) if summary.started_at else None
        span = summary.duration_s
        self.span = span if span > 0 else 1.0

    def pct(self, stamp: str | None) -> float:
        if stamp is None or self.start is None:
            return 100.0
        return max(0.0, min(100.0, (_stamp(stamp) - self.start).total_seconds() / self.span * 100))

    def artifact_link(self, path: str | None, label: str) -> str:
        """A relative link to an artifact file and its inlined head; '' when it is not a
        regular file inside the session directory."""
        if not path:
            return ""
        # where the file is now (a project moved since it was recorded): by its name
        real = Path(os.path.realpath(artifact_file(path, self.session_dir / "artifacts")))
        if not real.is_relative_to(self.session_dir) or not real.is_file():
            return f"<span>{_e(label)} (not in the session directory)</span>"
        href = os.path.relpath(real, self.out_dir)
        with open(real, "rb") as handle:
            data = handle.read(INLINE_LIMIT + 1)
        text = data[:INLINE_LIMIT].decode("utf-8", "replace")
        more = "\n… (cut; open the file)" if len(data) > INLINE_LIMIT else ""
        return (
            f'<details><summary><a href="{_e(href)}">{_e(label)}</a></summary>'
            f"<pre>{html.escape(text + more)}</pre></details>"  # output: kept as written
        )

    def timeline(self) -> str:
        rows: dict[str, list[str]] = {}
        merges: list[str] = []
        wave_starts: dict[int, str] = {}
        for task in self.summary.tasks.values():
            for attempt in task.attempts:
                agent = attempt.agent_id or "(no worker)"
                left = self.pct(attempt.started_at)
                width = max(0.6, self.pct(attempt.ended_at) - left)
                wave_starts.setdefault(attempt.wave, attempt.started_at)
                title = (
                    f"{task.task_id} attempt {attempt.index} (wave {attempt.wave}): "
                    f"{attempt.outcome}, {attempt.started_at} → {attempt.ended_at or 'running'}"
                )
                rows.setdefault(agent, []).append(
                    f'<div class="bar {_e(attempt.outcome)}" data-task="{_e(task.task_id)}" '
                    f'data-wave="{attempt.wave}" data-attempt="{attempt.index}" '
                    f'data-outcome="{_e(attempt.outcome)}" title="{_e(title)}" '
                    f'style="left:{left:.2f}%;width:{width:.2f}%">'
                    f"{_e(task.task_id)} #{attempt.index}</div>"
                )
            for merge in task.merges:
                outcome, at = merge["outcome"], merge["at"]
                note = f"merge of {task.task_id}: {outcome} at {at}"
                merges.append(
                    f'<div class="merge" data-task="{_e(task.task_id)}" '
                    f'data-outcome="{_e(outcome)}" style="left:{self.pct(at):.2f}%" '
                    f'title="{_e(note)}"></div>'
                )
        waves = "".join(
            f'<div class="wave" data-wave="{n}" style="left:{self.pct(at):.2f}%">wave {n}</div>'
            for n, at in sorted(wave_starts.items())
        )
        body = [
            f'<div class="row"><div class="label">waves</div><div class="lane">{waves}</div></div>'
        ]
        for agent, bars in rows.items():
            body.append(
                f'<div class="row" data-agent="{_e(agent)}"><div class="label">{_e(agent)}</div>'
                f'<div class="lane">{"".join(bars)}</div></div>'
            )
        body.append(
            f'<div class="row" data-agent="merges"><div class="label">merges</div>'
            f'<div class="lane">{"".join(merges)}</div></div>'
        )
        return f'<div class="timeline" id="timeline">{"".join(body)}</div>'

    def task_section(self, task: TaskSummary, artifacts: dict[str, dict[str, Any]]) -> str:
        parts = [f'<h2 id="task-{_e(task.task_id)}">{_e(task.task_id)}: {_e(task.title)}</h2>']
        status = _e(task.status)
        if task.status == "interrupted":
            status += " (resumable: <code>air resume</code> runs it again)"
        parts.append(f"<p>status <b>{status}</b>, {len(task.attempts)} attempt(s)")
        if task.summary:
            parts.append(f" — {_e(task.summary)}")
        parts.append("</p>")
        if task.left_out():
            parts.append(f'<p class="left-out">{_e(task.left_out())}</p>')
        if task.error_message:
            parts.append(
                f'<p class="error">error {_e(task.error_kind)}: {_e(task.error_message)}</p>'
            )
        diffs = [a for a in task.artifacts if a.get("type") == "diff"]
        if diffs:
            parts.append("<h3>Diffs</h3>")
            parts.append(self.more(len(diffs), task.diff_count, "diffs", task))
            parts += [
                self.artifact_link(a.get("path"), a.get("slug") or a.get("artifact_id") or "diff")
                for a in diffs
            ]
        if task.command_count:
            shown_now = task.shown_commands()
            counts = ", ".join(
                f"{task.command_counts[k]} {_CLASS_WORDS[k]}"
                for k in _CLASS_WORDS
                if task.command_counts.get(k)
            )
            parts.append(
                f'<h3>Commands</h3><p class="counts" data-commands="{task.command_count}">'
                f"{task.command_count} run: {_e(counts)}</p>"
            )
            parts.append(self.more(len(shown_now), task.command_count, "commands", task))
            parts.append("<ul>")
            for command in shown_now:
                parts.append(
                    f'<li data-n="{command.get("n")}">#{command.get("n")} '
                    f"<code>{_exact(command.get('command'))}</code> "
                    f"{_e(command_outcome(command))}"
                )
                for stream in ("stdout", "stderr"):
                    found = artifacts.get(str(command.get(f"{stream}_artifact_id")))
                    if found is not None:
                        parts.append(self.artifact_link(found.get("path"), stream))
                parts.append("</li>")
            parts.append("</ul>")
        if task.evidence:
            parts.append("<h3>Evidence</h3>")
            parts.append(self.more(len(task.evidence), task.evidence_count, "evidence items", task))
            parts.append("<ul>")
            for item in task.evidence:
                parts.append(
                    f'<li data-evidence="{_e(item.get("evidence_ref_id"))}">'
                    f"{_e(item.get('kind'))}: {_e(item.get('claim'))}</li>"
                )
            parts.append("</ul>")
        return "".join(parts)

    def more(self, shown_n: int, total: int, what: str, task: TaskSummary | None = None) -> str:
        """'' when every one is shown; else how many are and where the rest are."""
        if shown_n >= total or task is None:
            return ""
        rest = f"air report --html FILE --task {task.task_id}"
        return (
            f'<p class="more" data-shown="{shown_n}" data-total="{total}">{shown_n} of '
            f"{total} {what} shown (the latest; for commands also the latest that did not "
            f"succeed); every one: <code>{_exact(rest)}</code></p>"
        )

    def render(self, only: str | None = None) -> str:
        summary = self.summary
        usage = summary.usage()
        artifacts = {
            str(a.get("artifact_id")): a for t in summary.tasks.values() for a in t.artifacts
        } | self.outputs
        if only is not None:
            return (
                '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
                f"<title>air task {_e(only)}</title><style>{_CSS}</style></head>"
                f"<body><h1>air session {_e(summary.session_id)}: task {_e(only)}</h1>"
                f"{self.task_section(summary.tasks[only], artifacts)}</body></html>\n"
            )
        rows = "".join(
            f'<tr data-task="{_e(t.task_id)}"><td><a href="#task-{_e(t.task_id)}">'
            f"{_e(t.task_id)}</a></td><td>{_e(t.status)}</td><td>{len(t.attempts)}</td>"
            f"<td>{t.duration_s:.2f}</td><td>{t.tokens}</td><td>{t.turns}</td>"
            f"<td>{_e(cost_text(t.cost_usd, 4))}</td></tr>"
            for t in summary.tasks.values()
        )
        counts = summary.counts()
        return (
            '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f"<title>air session {_e(summary.session_id)}</title><style>{_CSS}</style></head>"
            f"<body><h1>air session {_e(summary.session_id)}</h1>"
            f"<p>{_e(summary.started_at)} → {_e(summary.ended_at)} ({summary.duration_s:.2f} s), "
            f"{counts['tasks']} tasks: {counts['completed']} completed, {counts['failed']} failed, "
            f"{counts['blocked']} blocked, {counts['cancelled']} cancelled; {summary.waves} waves; "
            f"{usage['tokens']} tokens, {usage['turns']} turns, "
            f"cost {_e(cost_text(usage['cost_usd'], 4))}</p>"
            f"{_usage_table(usage)}"
            f"<h2>Timeline</h2>{self.timeline()}"
            '<h2>Tasks</h2><table id="tasks"><tr><th>task</th><th>status</th><th>attempts</th>'
            "<th>seconds</th><th>tokens</th><th>turns</th><th>cost</th></tr>"
            f"{rows}</table>"
            + "".join(self.task_section(t, artifacts) for t in summary.tasks.values())
            + "</body></html>\n"
        )


_CLASS_WORDS = {
    "ok": "exit 0",
    "nonzero": "another exit code",
    "failed": "failed to run",
    "cancelled": "cancelled",
    "running": "no end recorded",
}
"""``command_class`` keys, in the order the page counts them."""

_PURPOSE_NAMES = {
    "main_agent": "Main Agent",
    "designer": "Architecture Designer",
    "compaction": "compaction",
    "task": "tasks",
}


def _usage_rows(attr: str, parts: dict[str, dict[str, Any]], names: dict[str, str]) -> str:
    return "".join(
        f'<tr data-{attr}="{_e(key)}"><td>{_e(names.get(key, key))}</td>'
        f"<td>{part['calls']}</td><td>{part['input_tokens']}</td><td>{part['output_tokens']}</td>"
        f"<td>{part['cache_read_tokens']}</td><td>{part['cache_write_tokens']}</td>"
        f"<td>{_e(cost_text(part['cost_usd'], 4))}</td></tr>"
        for key, part in parts.items()
    )


def _usage_table(usage: dict[str, Any]) -> str:
    """Every model call of the session by who made it, tasks' calls per wave and the Main
    Agent's per turn (the usage ledger, IMPL-USAGE-1)."""
    waves = {w: f"wave {w}" for w in usage["by_wave"]}
    turns = {m: f"turn {i} ({m})" for i, m in enumerate(usage["by_turn"], 1)}
    return (
        '<h2>Model calls</h2><table id="usage"><tr><th>by</th><th>calls</th><th>tokens in</th>'
        "<th>tokens out</th><th>cache read</th><th>cache write</th><th>cost</th></tr>"
        f"{_usage_rows('purpose', usage['by_purpose'], _PURPOSE_NAMES)}"
        f"{_usage_rows('wave', usage['by_wave'], waves)}"
        f"{_earlier_turns(usage)}"
        f"{_usage_rows('turn', usage['by_turn'], turns)}</table>"
    )


def _earlier_turns(usage: dict[str, Any]) -> str:
    earlier = usage.get("earlier_turns")
    if earlier is None:
        return ""
    return _usage_rows("turn", {"earlier": earlier}, {"earlier": "earlier turns, summed"})


def write_report(
    project: Any, session_id: str, out: Path, task: str | None = None
) -> SessionSummary:
    """Write the page of ``session_id`` to ``out``: the report's stored fold and the events
    after it (``open_report``, IMPL-READ-8), the span from the summary row, the paths of the
    shown commands' output from the artifacts table. With ``task``, that task's page with every
    command, diff and evidence item (a fold of the whole log, ``read_report_events``).

    Raises:
        AirException: ``not_found`` when the session has no task ``task``.
    """
    from air.cli.report_snapshot import open_report
    from air.store.read_model import read_summary
    from air.store.session_db import open_session_database

    db = open_session_database(session_db_path(project, session_id), must_exist=True)
    try:
        if task is None:
            summary = open_report(db, session_id).fold.summary()
        else:
            summary = summarise(read_report_events(db.conn, session_id))
            if task not in summary.tasks:
                raise AirException.of(
                    kind="not_found",
                    message=f"session {session_id} has no task {task!r}",
                    user_action="Name a task of the session (the page without --task lists them).",
                )
        row = read_summary(db, session_id)
        outputs = _outputs(db.conn, summary, task)
    finally:
        db.close()
    session_dir = Path(project.local_root) / "sessions" / session_id
    page = report_page(summary, row, session_dir, out, outputs, only=task)
    from air.whole_file import write_whole

    write_whole(out, page.encode("utf-8"))
    return summary


def _outputs(conn: Any, summary: SessionSummary, task: str | None) -> dict[str, dict[str, Any]]:
    """The stored artifacts (id -> its ``path``) the page's commands name as their output."""
    tasks = summary.tasks.values() if task is None else [summary.tasks[task]]
    wanted = sorted(
        {
            str(c[f"{stream}_artifact_id"])
            for t in tasks
            for c in t.shown_commands()
            for stream in ("stdout", "stderr")
            if c.get(f"{stream}_artifact_id")
        }
    )
    found: dict[str, dict[str, Any]] = {}
    for start in range(0, len(wanted), 500):
        part = wanted[start : start + 500]
        marks = ", ".join("?" for _ in part)
        rows = conn.execute(
            f"SELECT artifact_id, path FROM artifacts WHERE artifact_id IN ({marks})", part
        )
        found.update({str(i): {"artifact_id": i, "path": p} for i, p in rows})
    return found


def report_page(
    summary: SessionSummary,
    row: Any,
    session_dir: Path,
    out: Path,
    outputs: dict[str, dict[str, Any]] | None = None,
    *,
    only: str | None = None,
) -> str:
    """The page of ``summary``; ``row`` is the session's summary row (or None): the session
    ends with its last event, whatever its type. ``outputs``: stored artifacts by id (commands'
    output), besides the summary's own; ``only``: one task's page."""
    if row is not None:
        summary.started_at, summary.ended_at = row.first_at, row.last_at
    return _Page(summary, session_dir, out, outputs).render(only)


def run_report(args: dict[str, Any]) -> int:
    project = find_project(args["--project"])
    session_id = resolve_session(project, args["--session"])
    out = Path(args["--html"])
    task = args.get("--task")
    summary = write_report(project, session_id, out, task)
    what = f"task {task}" if task else f"{len(summary.tasks)} tasks, {summary.waves} waves"
    print(f"air: wrote {out} ({what}) for session {session_id}", file=sys.stderr)
    return CliExit.OK
