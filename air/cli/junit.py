"""The JUnit XML report of a run (``air run --junit FILE``) and the ``--json`` summary record.

Owns: ``junit_xml`` (one ``<testsuites>`` with one ``<testsuite>`` per session and one
``<testcase>`` per task, in the shape of the common JUnit schema Jenkins and GitLab read, see
``tests/cli/junit.xsd``), ``write_junit`` (atomic write), ``summary_record`` (the last
line of ``--json``) and ``write_reports`` (both, at the end of a headless run). IMPL-REL-2: a
failed or blocked task is a ``<failure>`` whose ``type`` is the error kind and whose
``message`` is the task's real error; a task air could not run (cancelled, interrupted, never
started) is ``<skipped>``; every testcase has its ``time`` and a ``<system-out>`` holding the
worker's summary, attempts, tokens and cost. Text from the log is shown as exact text
(``air.contracts.display.shown``, IMPL-UI-7): a command's control characters would otherwise
hide a part of it, or make the file no XML at all.
"""

from __future__ import annotations

import json
import socket
import time
from typing import Any
from xml.etree import ElementTree

from air.cli.session_report import SessionSummary, TaskSummary
from air.contracts.display import shown


def _usd(cost: float | None) -> str:
    """A cost in USD; ``unknown`` when a model's price is not known (never 0)."""
    return "unknown" if cost is None else f"{cost:.6f}"


def _seconds(value: float) -> str:
    return f"{value:.3f}"


def _case_out(task: TaskSummary) -> str:
    lines = [
        f"task {task.task_id}: {shown(task.title)}",
        f"status: {task.status} after {len(task.attempts)} attempt(s)",
        f"tokens: {task.tokens}, turns: {task.turns}, cost_usd: {_usd(task.cost_usd)}",
    ]
    if task.summary:
        lines.append(f"summary: {shown(task.summary, keep_lines=True)}")
    if task.changed_files:
        lines.append("changed: " + ", ".join(shown(f) for f in task.changed_files))
    if task.left_out():
        lines.append(task.left_out())
    for command in task.commands:
        exact = shown(str(command.get("command")))
        lines.append(f"command (exit {command.get('exit_code')}): {exact}")
    return "\n".join(lines) + "\n"


def junit_xml(summary: SessionSummary, hostname: str | None = None) -> ElementTree.Element:
    """The report as an element tree (``<testsuites>``)."""
    counts = summary.counts()
    failures = counts["failed"] + counts["blocked"]
    skipped = counts["cancelled"] + counts["interrupted"] + counts["pending"]
    name = f"air session {summary.session_id}"
    total = _seconds(summary.duration_s)
    root = ElementTree.Element(
        "testsuites",
        name=name,
        tests=str(counts["tasks"]),
        failures=str(failures),
        errors="0",
        time=total,
    )
    suite = ElementTree.SubElement(
        root,
        "testsuite",
        name=name,
        tests=str(counts["tasks"]),
        failures=str(failures),
        errors="0",
        skipped=str(skipped),
        time=total,
        timestamp=(summary.started_at or "")[:19] or "1970-01-01T00:00:00",
        hostname=hostname or socket.gethostname() or "localhost",
    )
    for task in summary.tasks.values():
        case = ElementTree.SubElement(
            suite,
            "testcase",
            classname="air.task",
            name=task.task_id,
            time=_seconds(task.duration_s),
        )
        if task.status in ("failed", "blocked"):
            message = shown(task.error_message or task.reason or f"task {task.status}")
            failure = ElementTree.SubElement(
                case, "failure", message=message, type=task.error_kind or f"task_{task.status}"
            )
            detail = shown(task.error_detail or "", keep_lines=True)
            failure.text = "\n".join(
                part for part in (f"{shown(task.title)}: {task.status}", message, detail) if part
            )
        elif task.status != "completed":
            reason = task.reason or f"task {task.status} (not run to the end)"
            ElementTree.SubElement(case, "skipped", message=shown(reason))
        ElementTree.SubElement(case, "system-out").text = _case_out(task)
    out = ElementTree.SubElement(suite, "system-out")
    usage = summary.usage()
    out.text = (
        f"session {summary.session_id}: {counts['completed']}/{counts['tasks']} completed, "
        f"{failures} failed, waves {summary.waves}, tokens {usage['tokens']}, "
        f"cost_usd {_usd(usage['cost_usd'])}\n"
    )
    return root


def write_junit(path: str, summary: SessionSummary) -> None:
    """Write the report to ``path``, whole (``air.whole_file``)."""
    import io

    from air.whole_file import write_whole

    tree = ElementTree.ElementTree(junit_xml(summary))
    ElementTree.indent(tree)
    data = io.BytesIO()
    tree.write(data, encoding="utf-8", xml_declaration=True)
    write_whole(path, data.getvalue())


def summary_record(
    summary: SessionSummary, *, exit_code: int, status: str, duration_s: float
) -> dict[str, Any]:
    """The last ``--json`` line: ``{"type": "air.summary", ...}`` (not a stored event)."""
    return {
        "type": "air.summary",
        "session_id": summary.session_id,
        "status": status,
        "exit_code": exit_code,
        "duration_s": round(duration_s, 3),
        "waves": summary.waves,
        "counts": summary.counts(),
        "usage": summary.usage(),
        "tasks": {
            t.task_id: {
                "status": t.status,
                "attempts": len(t.attempts),
                "duration_s": round(t.duration_s, 3),
                "tokens": t.tokens,
                "cost_usd": None if t.cost_usd is None else round(t.cost_usd, 6),
                "error": t.error_message,
            }
            for t in summary.tasks.values()
        },
    }


def write_reports(junit: str | None, progress: Any, runtime: Any, status: str, code: int) -> None:
    """At the end of a headless run (or when a second signal kills it): the ``--junit`` file
    and the ``--json`` summary record (after every event of the stream), from the session's log
    with the Scheduler's final word on each task's status; ``status``: how the run ended."""
    if not junit and progress.json_out is None:
        return
    from air.cli.session_report import read_report_events, summarise

    # the report's events by their type index, no model per event: a long session's end does
    # not read (and validate) every event it recorded
    session = runtime.session
    summary = summarise(read_report_events(session.db.conn, session.session_id))
    for node in runtime.scheduler.graph.tasks.values():  # the Scheduler's word is final
        if node.task_id in summary.tasks:
            summary.tasks[node.task_id].status = node.status.value
    if junit:
        write_junit(junit, summary)
    if progress.json_out is not None:
        record = summary_record(
            summary,
            exit_code=int(code),
            status=status,
            duration_s=time.monotonic() - progress.started,
        )
        progress.stream_line(json.dumps(record) + "\n")
