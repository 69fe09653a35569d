"""Session rows as layer text: how the model reads a message, a run or a failed attempt.

Owns the text of the L7 conversation blocks (``render_blocks``: text, tool_use, tool_result;
thinking left out), of an L8 command run with its derived status (``render_command_run``,
``command_ref``), of a failed attempt's evidence (``failure_evidence``), and the cut that keeps
one block short (``cut_text``) and the JSON form of a value (``json_text``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from air.context.session_rows import row_value

__all__ = [
    "BLOCK_TEXT_LIMIT",
    "command_ref",
    "cut_text",
    "failure_evidence",
    "json_text",
    "render_blocks",
    "render_command_run",
]

_REASONING = (
    "thinking",
    "redacted_thinking",
    "openai_reasoning",
    "reasoning_content",
    "reasoning_details",
)
"""The model's own reasoning blocks: bound to its conversation, never re-read as text."""

BLOCK_TEXT_LIMIT = 4_000
"""A single tool_use input / tool_result shown in the conversation layer is cut here."""


def json_text(value: Any) -> str:
    """``value`` as compact, key-sorted JSON (non-JSON values by their ``str``)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def cut_text(text: str, limit: int = BLOCK_TEXT_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, saying how many more there were."""
    return text if len(text) <= limit else text[:limit] + f" [... {len(text) - limit} more]"


def render_blocks(content: Any) -> str:
    """A message's content (text or content blocks) as one text; thinking is left out."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return cut_text(json_text(content))
    parts: list[str] = []
    for block in content:
        if not isinstance(block, Mapping):
            parts.append(cut_text(json_text(block)))
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "tool_use":
            parts.append(
                f"[tool_use {block.get('name')} id={block.get('id')}] "
                + cut_text(json_text(block.get("input", {})))
            )
        elif kind == "tool_result":
            inner = block.get("content", "")
            text = render_blocks(inner) if isinstance(inner, list) else str(inner)
            flag = " error" if block.get("is_error") else ""
            parts.append(f"[tool_result{flag} for {block.get('tool_use_id')}] " + cut_text(text))
        elif kind in _REASONING:
            continue  # the model's own reasoning, bound to its conversation: never re-read
        else:
            parts.append(cut_text(json_text(block)))
    return "\n".join(part for part in parts if part)


def failure_evidence(meta: Any) -> str:
    """L8 detail of a failed attempt (IMPL-REVIEW-2): the worker's own summary, its
    verification results, the parsed diagnostics, the failing tests and reviewer findings."""
    if not isinstance(meta, Mapping):
        return ""
    text = ""
    if meta.get("worker_summary"):
        text += f"\nthe worker said: {cut_text(str(meta['worker_summary']))}"
    for check in list(meta.get("verification") or [])[:10]:
        if isinstance(check, Mapping):
            notes = f" — {cut_text(str(check['notes']))}" if check.get("notes") else ""
            text += f"\nverification {check.get('name')}: {check.get('status')}{notes}"
    for d in list(meta.get("diagnostics") or [])[:10]:
        if isinstance(d, Mapping):
            where = ":".join(str(d[k]) for k in ("file", "line", "column") if d.get(k))
            text += f"\ndiagnostic {where}: {cut_text(str(d.get('message')))}"
    failed = [str(t) for t in meta.get("failed_tests") or []][:20]
    if failed:
        text += "\nfailing tests: " + ", ".join(failed)
    for finding in list(meta.get("findings") or [])[:10]:
        text += f"\nreviewer finding: {cut_text(str(finding))}"
    return text


def command_ref(row: Any) -> str | None:
    """The source ref of a command run's layer (``command_run:<id>``), None without an id."""
    rid = row_value(row, "id", "command_run_id")
    return f"command_run:{rid}" if rid else None


def render_command_run(row: Any) -> str:
    """One command run with its derived status (SDD §4.4: no status column)."""
    command = row_value(row, "command")
    text = f"$ {command}"
    cwd = row_value(row, "cwd")
    if cwd:
        text += f"  (in {cwd})"
    exit_code = row_value(row, "exit_code")
    if row_value(row, "cancelled_at", "cancel_reason") is not None:
        status = f"cancelled ({row_value(row, 'cancel_reason') or 'no reason'})"
    elif row_value(row, "completed_at") is None and exit_code is None:
        status = "running"
    elif exit_code == 0:
        status = "ok (exit 0)"
    elif exit_code is not None:
        status = f"error (exit {exit_code})"
    else:
        status = "unknown"
    text += f"\n→ {status}"
    duration = row_value(row, "duration_ms")
    if duration is not None:
        text += f", {duration} ms"
    for name in ("stdout_artifact_id", "stderr_artifact_id"):
        artifact = row_value(row, name)
        if artifact:
            text += f"\n{name.split('_')[0]}: {artifact}"
    return text
