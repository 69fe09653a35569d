"""The workers' ContextPack provider of a run (IMPL-CTX-6, IMPL-COMPACT-1).

Owns ``worker_context`` (the ``WorkerContextBuilder`` sized by the model's window, wrapped in
the compaction trigger), ``CompactingContext`` (that trigger: a task's context past the
compaction threshold compacts the session once and is built again on the summary),
``session_compactor`` (the session's ``SessionCompactor`` over the runtime's compaction lock,
which the Main Agent shares) and ``document_refusal`` (which plan/architecture documents may
reach a worker's prompt: the PathClassifier's classes, as ``fs.read`` has them).
``open_runtime()`` builds them. The compaction rules are read (and a bad rules file refused)
while the runtime opens, as before; ``air.context.compactor`` is imported and the compactor
built only when a task's context first asks for compaction (IMPL-BOOT-8).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import trio

from air.contracts.error import AirException
from air.contracts.runtime import ContextPack
from air.nursery.ledger import SessionLedger
from air.session.manager import OpenSession

if TYPE_CHECKING:
    from air.context.compaction import CompactionRules
    from air.context.compactor import SessionCompactor

__all__ = [
    "ROLE_PROMPTS",
    "CompactingContext",
    "PackBuilder",
    "model_window",
    "session_compactor",
    "worker_context",
]


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

    def __init__(
        self,
        builder: PackBuilder,
        compactor: SessionCompactor | None = None,
        *,
        build_compactor: Callable[[], SessionCompactor] | None = None,
    ) -> None:
        """``compactor``, or ``build_compactor`` to build it when it is first needed."""
        if compactor is None and build_compactor is None:
            raise ValueError("CompactingContext needs a compactor or a way to build one")
        self.builder = builder
        self._compactor = compactor
        self._build_compactor = build_compactor

    @property
    def compactor(self) -> SessionCompactor:
        if self._compactor is None:
            assert self._build_compactor is not None
            self._compactor = self._build_compactor()
        return self._compactor

    async def __call__(self, attempt: Any) -> ContextPack:
        pack = self.builder.build(attempt)
        last = self.builder.last
        if last is None or not getattr(last, "compaction_requested", False):
            return pack
        reason = f"the context of task {attempt.task_spec.id} passed the compaction threshold"
        compactor = self.compactor  # built here, outside the try: a broken install is no skip
        try:
            outcome = await compactor.compact_if_due(self.builder.token_budget, reason)
        except AirException:
            return pack
        return pack if outcome is None else self.builder.build(attempt)


def worker_context(
    session: OpenSession, ledger: SessionLedger, provider: Any, model: str, lock: trio.Lock
) -> Any:
    """The ContextPack builder of the run's workers, sized by the model's window (IMPL-CTX-6),
    compacting the session when a task's context passes the threshold (IMPL-COMPACT-1; not
    for a provider that cannot choose a compactor model, e.g. per-task cassettes)."""
    from air.context.compaction import load_compaction_rules
    from air.context.worker_pack import WorkerContextBuilder

    builder = WorkerContextBuilder.for_session(
        session,
        role_prompt_dir=ROLE_PROMPTS,
        context_window=model_window(provider, model),
        document_refusal=document_refusal(session.project.project_root),
        # AGENTS.md and the rules as the run's trust check just passed them, for every attempt
        # (IMPL-TRUST-1): a change while it goes on waits for the next run's check
        fixed_rules=True,
    )
    if not hasattr(provider, "select_model"):
        return builder
    rules = load_compaction_rules(project=session.project)  # a bad rules file: refused now
    return CompactingContext(
        builder,
        build_compactor=lambda: session_compactor(session, ledger, provider, lock, rules=rules),
    )


def document_refusal(project_root: str) -> Callable[[Path], str | None]:
    """Why a plan/architecture document may not reach a worker's prompt: what ``fs.read`` treats
    as protected (credentials, git's internals, system files, air's local state) stays out of
    prompts too; the project's sources, build outputs and ``.air/shared`` may go in."""
    from air.contracts.permission import PathCategory
    from air.security.paths import PathClassifier

    classifier = PathClassifier()
    shared = os.path.join(os.path.realpath(project_root), ".air", "shared") + os.sep
    allowed = (PathCategory.PROJECT_SOURCE, PathCategory.PROJECT_BUILD_OUTPUT)

    def refusal(path: Path) -> str | None:
        found = classifier.classify(str(path), project_root)
        if found.category in allowed:
            return None
        if found.category is PathCategory.AIR_INTERNAL and str(path).startswith(shared):
            return None
        return f"{found.category.value}: {found.reason}"

    return refusal


def model_window(provider: Any, model: str) -> int | None:
    """The context window of ``model`` (``provider_id/model_id``) as the provider lists it
    (None: unknown, e.g. a cassette), which sizes the workers' context (IMPL-CTX-6)."""
    rows: list[Any] = getattr(provider, "list_models", list)()
    ref = model.partition("/")
    return next((r.context_window for r in rows if (r.provider_id, r.model_id) == ref[::2]), None)


ROLE_PROMPTS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "roles", "prompts")
"""The worker role prompts: ``air/roles/prompts/``, package data of the roles package (which
``air.nursery`` may not import), read as plain files next to this package (IMPL-BOOT-8)."""


def session_compactor(
    session: OpenSession,
    ledger: SessionLedger,
    models: Any,
    lock: trio.Lock,
    *,
    rules: CompactionRules | None = None,
) -> SessionCompactor:
    """The session's compactor; ``rules`` already read (default: read the project's now)."""
    from air.context.compaction import load_compaction_rules
    from air.context.compactor import SessionCompactor

    return SessionCompactor(
        ledger=ledger,
        store=session.store,
        models=models,
        session_id=session.session_id,
        rules=rules if rules is not None else load_compaction_rules(project=session.project),
        lock=lock,
    )
