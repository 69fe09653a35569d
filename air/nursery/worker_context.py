"""The workers' ContextPack provider of a run (IMPL-CTX-6, IMPL-COMPACT-1).

Owns ``worker_context`` (the ``WorkerContextBuilder`` sized by the model's window, wrapped in
the compaction trigger), ``CompactingContext`` (that trigger: a task's context past the
compaction threshold compacts the session once and is built again on the summary) and
``session_compactor`` (the session's ``SessionCompactor`` over the runtime's compaction lock,
which the Main Agent shares). ``open_runtime()`` builds them.
"""

from __future__ import annotations

from typing import Any, Protocol

import trio

from air.contracts import AirException
from air.contracts.runtime import ContextPack
from air.nursery.compaction import SessionCompactor
from air.nursery.ledger import SessionLedger
from air.session.manager import OpenSession

__all__ = ["CompactingContext", "PackBuilder", "session_compactor", "worker_context"]


class PackBuilder(Protocol):
    """What ``CompactingContext`` needs of ``air.context.worker_pack.WorkerContextBuilder``."""

    @property
    def token_budget(self) -> int: ...

    @property
    def last(self) -> Any: ...

    def build(self, attempt: Any) -> ContextPack: ...


class CompactingContext:
    """The workers' ContextPack provider with the compaction trigger (IMPL-COMPACT-1): when the
    assembler asks for compaction of a task's context and the history is due, the session is
    compacted once and the context built again on the summary. A failed compaction (recorded
    ``context.compaction.failed``) leaves the task its fitted, uncompacted context.
    """

    def __init__(self, builder: PackBuilder, compactor: SessionCompactor) -> None:
        self.builder = builder
        self.compactor = compactor

    async def __call__(self, attempt: Any) -> ContextPack:
        pack = self.builder.build(attempt)
        last = self.builder.last
        if last is None or not getattr(last, "compaction_requested", False):
            return pack
        reason = f"the context of task {attempt.task_spec.id} passed the compaction threshold"
        try:
            outcome = await self.compactor.compact_if_due(self.builder.token_budget, reason)
        except AirException:
            return pack
        return pack if outcome is None else self.builder.build(attempt)


def worker_context(
    session: OpenSession, ledger: SessionLedger, provider: Any, model: str, lock: trio.Lock
) -> Any:
    """The ContextPack builder of the run's workers, sized by the model's window (IMPL-CTX-6),
    compacting the session when a task's context passes the threshold (IMPL-COMPACT-1; not
    for a provider that cannot choose a compactor model, e.g. per-task cassettes)."""
    from importlib import resources

    from air.context.worker_pack import WorkerContextBuilder

    rows: list[Any] = getattr(provider, "list_models", list)()
    ref = model.partition("/")
    window = next((r.context_window for r in rows if (r.provider_id, r.model_id) == ref[::2]), None)
    prompts = resources.files("air.roles").joinpath("prompts")
    builder = WorkerContextBuilder.for_session(
        session, role_prompt_dir=str(prompts), context_window=window
    )
    if not hasattr(provider, "select_model"):
        return builder
    return CompactingContext(builder, session_compactor(session, ledger, provider, lock))


def session_compactor(
    session: OpenSession, ledger: SessionLedger, models: Any, lock: trio.Lock
) -> SessionCompactor:
    from air.context.compaction import load_compaction_rules

    return SessionCompactor(
        ledger=ledger,
        store=session.store,
        models=models,
        session_id=session.session_id,
        rules=load_compaction_rules(project=session.project),
        lock=lock,
    )
