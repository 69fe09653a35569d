"""A confirmed architecture change is written into the architecture document (SDD §19.4).

Owns ``RecordingGate``, the Scheduler's architecture gate around ``SchedulerGate``: once the
person confirmed a ``requires_user_confirmation`` change, the change is appended to the
project's architecture document under "Confirmed architecture changes" through
``ArchitectureDesigner.update_architecture_docs`` (the ToolRegistry's ``fs.write``, which keeps
the diff as an artifact; then ``architecture.plan.updated``, its summary holding the diff, also
said in the conversation so the console shows it), and
the same change later (the same task description touching the same architecture areas; its
digest is in the entry's marker) passes without being held again (IMPL-ARCH-5). The document is
read whole at the path checked, no link followed; one that cannot be read or written is said
in the conversation and the confirmed change goes on, unrecorded. Also owns
``change_digest``, ``recorded_digests`` and ``document_update`` (the entry, the new text and
its unified diff).
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from air.agents.architecture import (
    ArchitectureChange,
    ArchitectureDeclaration,
    DocumentUpdate,
    GateVerdict,
    SchedulerGate,
)
from air.contracts.error import AirException, ErrorKind
from air.contracts.task import TaskSpec
from air.contracts.worker_result import WorkerResult
from air.small_file import read_small

__all__ = [
    "HEADING",
    "RecordingGate",
    "change_digest",
    "document_path",
    "document_update",
    "recorded_digests",
]

HEADING = "## Confirmed architecture changes"
_MARK = re.compile(r"<!-- air:architecture-change ([0-9a-f]{16}) -->")
DOCUMENT_MAX = 4 << 20
"""The largest architecture document a confirmed change is appended to (it is rewritten whole)."""
_DIFF_SHOWN = 4000
"""At most this many characters of the diff go into the event's summary (the artifact has all)."""


def change_digest(change: ArchitectureChange, triggers: Sequence[str]) -> str:
    """The identity of a change: what the task was asked (its description) and the
    architecture areas and paths it touched."""
    key = "\x1f".join([change.detail.strip(), *sorted(triggers)])
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def document_path(declaration: ArchitectureDeclaration, root: Path) -> str:
    """The document a confirmed change is recorded in: the first declared document that is one
    file (existing, or a ``.md`` to create), else ``<first declared directory>/changes.md``."""
    for pattern in declaration.docs:
        if re.search(r"[*?\[]", pattern):
            continue
        if (root / pattern).is_dir():
            continue
        if (root / pattern).is_file() or pattern.endswith(".md"):
            return pattern
    for literal in declaration.doc_roots():
        if (root / literal).is_dir() or "." not in Path(literal).name:
            return f"{literal}/changes.md"
    return "docs/architecture.md"


def recorded_digests(declaration: ArchitectureDeclaration, root: Path) -> set[str]:
    """The digests of the changes already recorded in the architecture document, read whole as
    ``document_update`` reads it; none when it cannot be read (the change is asked again, and
    its record then says why)."""
    rel = document_path(declaration, root)
    try:
        return set(_MARK.findall(_document_text(root.resolve() / rel, rel) or ""))
    except AirException:
        return set()


def document_update(
    declaration: ArchitectureDeclaration,
    root: Path,
    change: ArchitectureChange,
    triggers: Sequence[str],
    summary: str,
) -> tuple[DocumentUpdate, str]:
    """The document with the change's entry appended, and the unified diff of that edit."""
    rel = document_path(declaration, root)
    found = _document_text(root.resolve() / rel, rel)
    before = found or ""
    day = datetime.now(UTC).strftime("%Y-%m-%d")
    tasks = ", ".join(f"`{t}`" for t in change.task_ids) or "a task"
    entry = [
        f"- {day}, {tasks}: {' '.join(summary.split())}",
        f"  Touches: {'; '.join(triggers)}.",
        f"  <!-- air:architecture-change {change_digest(change, triggers)} -->",
    ]
    text = before if before.endswith("\n") or not before else before + "\n"
    if HEADING not in text:
        text += ("\n" if text else "") + HEADING + "\n\n"
    after = text + "\n".join(entry) + "\n"
    diff = "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"a/{rel}" if found is not None else "/dev/null",
            tofile=f"b/{rel}",
        )
    )
    shown = diff if len(diff) <= _DIFF_SHOWN else diff[: _DIFF_SHOWN - 1] + "…"
    note = f"recorded the confirmed architecture change in {rel}:\n{shown}"
    return DocumentUpdate(path=rel, content=after, summary=note), diff


def _document_text(path: Path, rel: str) -> str | None:
    """The document's text (None when there is none yet), read whole at the path checked, no
    link followed (``read_small(exact=True)``): a document a task swapped for a link to a key
    never reaches the diff that is shown and recorded; one too large to rewrite is refused,
    never cut.

    Raises:
        AirException: ``config_error`` when it is a link, no regular file, larger than
            ``DOCUMENT_MAX`` or not UTF-8.
    """
    try:
        return read_small(path, DOCUMENT_MAX, exact=True).decode("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise AirException.of(
            kind=ErrorKind.CONFIG_ERROR,
            message=f"the architecture document {rel} cannot be read to append to it",
            detail=str(exc),
            user_action=f"Make {rel} a UTF-8 text file in the project (no link) of at most "
            f"{DOCUMENT_MAX >> 20} MiB, or declare another one in .air/shared/architecture.yaml.",
        ) from exc


class RecordingGate:
    """``SchedulerGate`` that records what the person confirmed and does not hold it again.

    Args:
        gate: the session's SchedulerGate (its designer writes the document).
    """

    def __init__(self, gate: SchedulerGate) -> None:
        self.gate = gate
        self.designer = gate.designer

    async def review(self, spec: TaskSpec, result: WorkerResult) -> GateVerdict:
        change = ArchitectureChange.of_result(spec, result)
        triggers = self.designer.triggers(change)
        root = Path(self.designer.project_root)
        declaration = self.designer.declaration
        if triggers and change_digest(change, triggers) in recorded_digests(declaration, root):
            where = document_path(declaration, root)
            reason = f"this change was confirmed before and is recorded in {where}"
            return GateVerdict(True, "silent_continue", reason)
        verdict = await self.gate.review(spec, result)
        if verdict.proceed and verdict.result_class == "requires_user_confirmation":
            try:
                update, _diff = document_update(declaration, root, change, triggers, verdict.reason)
                await self.designer.update_architecture_docs(update)
            except AirException as exc:  # confirmed all the same: said, the task goes on
                where = document_path(declaration, root)
                said = f"the confirmed architecture change was not recorded in {where}: {exc}"
                await self.designer.turns.say(f"{said}. {exc.user_action or ''}", task_id=spec.id)
            else:
                await self.designer.turns.say(update.summary, task_id=spec.id)  # shown to them
        return verdict
