"""Compaction as a task (SDD §10.3, §19.3; IMPL-ARCH-4).

Owns ``SessionCompactor``: when the ContextAssembler (or ``air compact``) asks, it snapshots the
immutable message range (everything after the previous summary's cut, except the newest
``keep_recent_messages``), creates the ``compact`` task (``context.compaction.requested``, then
``context.compaction.started``), has the compactor summarise the range chunk by chunk — one
read-only model call through the ProviderManager per chunk, every request inside the
compactor's own budget — keeps the pinned facts verbatim ahead of the model's text, and records
``summary.created`` (the only writer of the ``summaries`` row, under a runtime-minted
``sum_<ULID>``) and then ``context.compaction.completed``; a failed call ends the task with
``context.compaction.failed``. Messages are never edited or deleted. The production trigger
(IMPL-COMPACT-1) is ``compact_if_due``: when the history not yet summarised reaches the rules'
``trigger_ratio`` of a request budget (the Main Agent's next request, a worker task's context),
one compaction runs under the session's compaction lock, re-checked inside it, so concurrent
askers compact once; ``view`` is what a request then carries (the latest summary and the ids of
every message it covers); ``air.nursery.worker_context`` wires it into the workers' ContextPack
builder. It also owns ``record_worker_summary``: a ``compact`` task run by a CompactorRole
worker gets its row the same way (the model's own ``summary_id`` is replaced, never trusted).
Its events go through an ``EventRecorder`` port (the session's ledger), so it lives beside the
CompactionPolicy it runs, not in the nursery.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, Protocol

import trio

from air.context.compaction import (
    CompactionRules,
    chunk_messages,
    message_text,
    pinned_facts,
    pinned_of,
    render_summary,
)
from air.context.loader import builtin_resource
from air.context.tokens import estimate_tokens
from air.contracts.error import AirError, AirException, ErrorKind, Retryability, make_air_error
from air.contracts.ids import new_id
from air.contracts.provider import (
    CanonicalMessage,
    MessageStopEvent,
    ModelAssignment,
    ModelRequirement,
    ProviderCompletionInput,
    ProviderErrorEvent,
    ProviderStreamEvent,
    TextBlock,
)
from air.contracts.task import TaskSpec, TaskType
from air.store.repositories import SessionStore

__all__ = [
    "AGENT_ID",
    "CompactionOutcome",
    "CompactionView",
    "EventRecorder",
    "SessionCompactor",
    "record_worker_summary",
]


class EventRecorder(Protocol):
    """Where the compactor records its events: the session's ledger (``SessionLedger``)."""

    async def record(self, type: str, payload: dict[str, Any]) -> Any:
        """Ingest one durable event; raises on failure."""
        ...


AGENT_ID = "compactor"
_FINAL_STATUSES = frozenset({"completed", "cancelled"})


class CompactorModels(Protocol):
    """What the compactor needs of the ProviderManager."""

    def select_model(self, requirement: ModelRequirement) -> ModelAssignment: ...

    def complete(
        self, request: ProviderCompletionInput
    ) -> AsyncGenerator[ProviderStreamEvent, None]: ...


@dataclass(frozen=True)
class CompactionOutcome:
    task_id: str
    summary_id: str
    summary_text: str
    covers_until_message_id: str
    replaced_message_ids: tuple[str, ...]
    chunks: int
    pinned: tuple[str, ...]


@dataclass(frozen=True)
class CompactionView:
    """What a request carries after a compaction: the latest summary, and every message id
    it stands for (all messages up to and including its ``covers_until_message_id``)."""

    summary_id: str
    content: str
    covered: frozenset[str]


class SessionCompactor:
    """Runs the compaction task of one session (see the module docstring).

    Args:
        ledger: the session's event log (every event goes through it).
        store: the session's repositories (messages, tasks, summaries are read).
        models: the ProviderManager; the compactor's calls carry no tools.
        session_id: the session.
        rules: merged compaction rules (trigger, messages kept, summariser instructions).
        request_budget: the most tokens one compactor request may use (prompt, chunk and
            answer together); each chunk is cut to fit it.
        chunk_output_tokens: the answer budget of one chunk call.
        model: the compactor's model; default ``models.select_model(role="compactor")``,
            chosen at the first call (building a compactor never fails).
        lock: the session's compaction lock (compactors over other model ports of the same
            session share it, so two askers never summarise one range twice).
    """

    def __init__(
        self,
        *,
        ledger: EventRecorder,
        store: SessionStore,
        models: CompactorModels,
        session_id: str,
        rules: CompactionRules | None = None,
        request_budget: int = 8_000,
        chunk_output_tokens: int = 600,
        model: ModelAssignment | None = None,
        lock: trio.Lock | None = None,
    ) -> None:
        self.ledger = ledger
        self.store = store
        self.models = models
        self.session_id = session_id
        self.rules = rules or CompactionRules()
        self.request_budget = request_budget
        self.chunk_output_tokens = chunk_output_tokens
        self._model = model
        self.lock = lock or trio.Lock()
        prompt = builtin_resource("role-compactor.md")
        self.system = "\n\n".join(p for p in (prompt, self.rules.instructions) if p.strip())

    @property
    def model(self) -> ModelAssignment:
        if self._model is None:
            self._model = self.models.select_model(
                ModelRequirement(role="compactor", needs_tools=False)
            )
        return self._model

    # -- the range -------------------------------------------------------------------------
    def latest_summary(self) -> dict[str, Any] | None:
        rows = [dict(r) for r in self.store.summaries.list_all()]
        rows = [r for r in rows if r.get("session_id") == self.session_id]
        return rows[-1] if rows else None

    def _uncovered(self) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        """The messages after the latest summary's cut (oldest first), and that summary."""
        previous = self.latest_summary()
        rows = [dict(r) for r in self.store.messages.list_by_session(self.session_id)]
        if previous is not None and previous.get("covers_until_message_id"):
            ids = [r["id"] for r in rows]
            cut = previous["covers_until_message_id"]
            rows = rows[ids.index(cut) + 1 :] if cut in ids else rows
        return rows, previous

    def snapshot(self) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        """The immutable range to summarise (oldest first) and the summary it extends."""
        rows, previous = self._uncovered()
        keep = self.rules.keep_recent_messages
        return rows[: max(len(rows) - keep, 0)], previous

    def pending_tokens(self) -> int:
        """The estimated tokens of the messages no summary covers yet."""
        return sum(estimate_tokens(message_text(r)) for r in self._uncovered()[0])

    def due(self, token_budget: int) -> bool:
        """True when the history not summarised yet reaches ``trigger_ratio`` of
        ``token_budget`` and something is old enough to summarise (the newest
        ``keep_recent_messages`` never are)."""
        if token_budget <= 0:
            return False
        rows, _ = self._uncovered()
        used = sum(estimate_tokens(message_text(r)) for r in rows)
        if used < self.rules.trigger_ratio * token_budget:
            return False
        return len(rows) > self.rules.keep_recent_messages

    def view(self) -> CompactionView | None:
        """The latest summary and the ids it covers; None before the first compaction."""
        summary = self.latest_summary()
        if summary is None:
            return None
        ids = [str(r["id"]) for r in self.store.messages.list_by_session(self.session_id)]
        cut = summary.get("covers_until_message_id")
        covered = frozenset(ids[: ids.index(cut) + 1]) if cut in ids else frozenset()
        return CompactionView(str(summary["summary_id"]), str(summary["content"]), covered)

    async def compact_if_due(self, token_budget: int, reason: str) -> CompactionOutcome | None:
        """The production trigger: one compaction when ``due(token_budget)`` (checked again
        under the session's compaction lock); None when it is not due.

        Raises:
            AirException: as ``compact``.
        """
        if not self.due(token_budget):
            return None
        async with self.lock:
            if not self.due(token_budget):  # another asker compacted meanwhile
                return None
            return await self._compact(reason)

    def _open_tasks(self) -> tuple[list[str], list[str]]:
        criteria: list[str] = []
        paths: list[str] = []
        for row in self.store.tasks.list_all():
            spec = json.loads(row["spec_json"])
            if spec.get("type") == TaskType.COMPACT.value:
                continue
            criteria += [str(c) for c in spec.get("acceptance_criteria") or []]
            if row["status"] not in _FINAL_STATUSES:
                paths += [str(a) for a in (spec.get("scope") or {}).get("write_area") or []]
        return criteria, paths

    # -- the task --------------------------------------------------------------------------
    async def compact(self, reason: str) -> CompactionOutcome | None:
        """Run one compaction task now (under the session's compaction lock); None (recorded
        as not accepted) when nothing is old enough.

        Raises:
            AirException: the model call's error (after ``context.compaction.failed``), or
                ``config_error`` when the compactor's prompt alone exceeds its request budget.
        """
        async with self.lock:
            return await self._compact(reason)

    async def _compact(self, reason: str) -> CompactionOutcome | None:
        messages, previous = self.snapshot()
        if not messages:
            await self.ledger.record(
                "context.compaction.requested",
                {"accepted": False, "reason": f"{reason}; nothing older than the kept messages"},
            )
            return None
        criteria, paths = self._open_tasks()
        pinned = pinned_facts(messages, acceptance_criteria=criteria, paths_under_edit=paths)
        if previous is not None:  # the earlier summary's pinned facts stay pinned
            pinned = list(dict.fromkeys([*pinned_of(str(previous["content"])), *pinned]))
            messages = [
                {"role": "summary", "content": previous["content"]},
                *messages,
            ]
        chunk_tokens = (
            self.request_budget - estimate_tokens(self.system) - self.chunk_output_tokens - 64
        )
        if chunk_tokens < 64:
            raise AirException.of(
                kind=ErrorKind.CONFIG_ERROR,
                message=(
                    f"the compactor's request budget ({self.request_budget} tokens) leaves no "
                    "room for a chunk after its prompt and answer"
                ),
                user_action="Raise the compactor's request budget or shorten compaction-rules.md.",
            )
        chunks = chunk_messages(messages, chunk_tokens)
        spec = TaskSpec(
            id=new_id("t_compact"),
            type=TaskType.COMPACT,
            title="Compact the conversation",
            description=f"Summarise {len(messages)} messages ({reason}).",
            acceptance_criteria=["Every pinned fact is kept verbatim."],
            output_contract="CompactorResult",
        )
        await self.ledger.record(
            "context.compaction.requested",
            {"accepted": True, "reason": reason, "task_spec": spec.model_dump(mode="json")},
        )
        await self.ledger.record(
            "context.compaction.started", {"task_id": spec.id, "agent_id": AGENT_ID}
        )
        summaries: list[str] = []
        for index, chunk in enumerate(chunks, 1):
            text = await self._summarise(spec.id, chunk, index, len(chunks))
            summaries.append(text[: self.chunk_output_tokens * 4])
        summary = render_summary(pinned, summaries)
        summary_id = new_id("sum")
        until = str(messages[-1]["id"])
        await self.ledger.record(
            "summary.created",
            {
                "summary_id": summary_id,
                "content": summary,
                "task_id": spec.id,
                "covers_until_message_id": until,
                "token_count": estimate_tokens(summary),
            },
        )
        await self.ledger.record(
            "context.compaction.completed", {"task_id": spec.id, "summary_id": summary_id}
        )
        return CompactionOutcome(
            spec.id,
            summary_id,
            summary,
            until,
            tuple(str(m["id"]) for m in messages if m.get("id")),
            len(chunks),
            tuple(pinned),
        )

    async def _summarise(self, task_id: str, chunk: str, index: int, total: int) -> str:
        note = (
            f"Part {index} of {total} of an older conversation. Summarise it in at most "
            f"{self.chunk_output_tokens} tokens; keep decisions, file paths and identifiers. "
            "Reply with the summary text only.\n\n"
        )
        request = ProviderCompletionInput(
            provider_id=self.model.provider_id,
            model_id=self.model.model_id,
            system=self.system,
            messages=[CanonicalMessage(role="user", content=[TextBlock(text=note + chunk)])],
            tools=[],
            max_tokens=self.chunk_output_tokens,
            session_id=self.session_id,
            agent_id=AGENT_ID,
            task_id=task_id,
        )
        error: AirError | None = None
        try:
            async with aclosing(self.models.complete(request)) as stream:
                async for event in stream:
                    if isinstance(event, MessageStopEvent):
                        text = "".join(b.text for b in event.content if isinstance(b, TextBlock))
                        if text.strip():
                            return text.strip()
                        error = make_air_error(
                            kind=ErrorKind.VALIDATION_ERROR,
                            message="the compactor returned an empty summary",
                            retryability=Retryability.TRANSIENT,
                            user_action="Run air compact again.",
                        )
                        break
                    if isinstance(event, ProviderErrorEvent):
                        error = event.error
                        break
        except AirException as exc:
            error = exc.error
        error = error or make_air_error(
            kind=ErrorKind.PROVIDER_ERROR,
            message="the compactor's stream ended without a final message",
            retryability=Retryability.TRANSIENT,
            user_action="Run air compact again.",
        )
        await self.ledger.record(
            "context.compaction.failed",
            {"task_id": task_id, "error": error.model_dump(mode="json")},
        )
        raise AirException(error)


async def record_worker_summary(
    ledger: EventRecorder, task_id: str, worker_result: dict[str, Any]
) -> dict[str, Any]:
    """A ``compact`` task a CompactorRole worker completed: record ``summary.created`` under
    a runtime-minted id (the model's ``summary_id`` is never trusted) and return the worker
    result carrying that id, ready for ``task.completed``."""
    payload = dict(worker_result.get("result") or {})
    text = str(payload.get("summary_text") or "").strip()
    if not text:
        return worker_result
    summary_id = new_id("sum")
    await ledger.record(
        "summary.created",
        {
            "summary_id": summary_id,
            "content": text,
            "task_id": task_id,
            "token_count": estimate_tokens(text),
        },
    )
    payload["summary_id"] = summary_id
    return {**worker_result, "result": payload}
