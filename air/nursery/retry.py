"""RetryPlanner: what to do after a failed attempt (SDD §7.4, runner-contract invariant 21).

Owns: ``AttemptSummary``, ``RetryPlanner.decide`` and ``debug_context`` (what a debug task is
told: the failure's parsed diagnostics and failing tests, and the DebugKnowledgeStore records
with the same signature). Pure code, deterministic in its inputs, so that recovery re-derives
the same decision from the durable ``task_attempts`` rows.

Rules, in order:
1. cancellation → ``cancel``; a worker that reported a blocker → ``block``;
2. environment, permission, auth, config or policy impossibility, or a failure marked
   ``retryability: never`` (a provider's 400/404) → ``block`` (never an infinite retry); an
   architecture mismatch → ``block`` routed to the Architecture Designer;
3. budget = ``TaskConstraints.retry_budget`` extra attempts; when it is spent →
   ``skip`` if ``VerificationPolicy.fallback_allowed`` and the task is not critical
   (``verification.required`` false), else ``block``;
4. a transient failure (stall, spawn error, provider error, protocol truncation, rate limit)
   → ``retry`` of the same spec (``changed_dimension="none"``);
5. a hard timeout → ``retry_serial`` (alone in its wave); the task's whole deadline passed (the
   error names its ``timeout_phase``) → ``block``: no time is left (IMPL-DEADLINE-1);
6. an identical failure signature escalates faster: seen on two earlier attempts (a debugger
   already looked) → ``block`` at once, budget or not; seen on one → ``debug``; a failed
   verification → ``debug``;
7. any other task-quality failure → ``retry`` with one changed dimension: ``model`` (the next
   of ``escalation_models`` after the one that failed) when an earlier attempt already failed
   on quality and such a model is configured, else ``context`` (the previous failure — error,
   the worker's summary, verification results, diagnostics — is in the retry's L8).

``retry_spec`` applies a decision's dimension to the spec the retry runs (IMPL-REVIEW-2).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from air.contracts.error import AirError, ErrorKind, Retryability
from air.contracts.task import RetryAction, TaskSpec
from air.nursery.graph import TaskNode
from air.supervision.deadline import phase_of

if TYPE_CHECKING:  # built when an attempt has failed (IMPL-BOOT-12)
    from air.contracts.artifact_records import DebugRecord
    from air.contracts.task_results import RetryDecision

__all__ = ["TRANSIENT_KINDS", "AttemptSummary", "RetryPlanner", "debug_context", "retry_spec"]

TRANSIENT_KINDS = frozenset(
    {
        ErrorKind.WORKER_STALLED,
        ErrorKind.PROVIDER_ERROR,
        ErrorKind.RATE_LIMITED,
        ErrorKind.PROTOCOL_ERROR,
    }
)
_IMPOSSIBLE = frozenset(
    {
        ErrorKind.ENVIRONMENT_ERROR,
        ErrorKind.PERMISSION_DENIED,
        ErrorKind.AUTH_ERROR,
        ErrorKind.CONFIG_ERROR,
        ErrorKind.POLICY_ERROR,
    }
)


class AttemptSummary(NamedTuple):
    """One finished attempt of a task, as read from ``task_attempts``."""

    attempt_index: int
    failure_signature: str | None = None
    failure_kind: str | None = None


class RetryPlanner:
    """Decides retry / retry_serial / debug / skip / block / cancel for a failed attempt.

    Args:
        escalation_models: the model ladder, ``provider/model`` refs from the run's default
            (first; a task naming no model is on it) up; a quality retry moves one rung up
            (empty: the ``model`` dimension is never chosen).
    """

    def __init__(self, escalation_models: Sequence[str] = ()) -> None:
        self.escalation_models = tuple(escalation_models)

    def next_model(self, task: TaskNode) -> str | None:
        """The escalation model after the one ``task`` runs on (None: no other is left)."""
        models = self.escalation_models
        if not models:
            return None
        current = task.spec.constraints.model_id or models[0]
        if current not in models:
            return models[0]
        later = models[models.index(current) + 1 :]
        return later[0] if later else None

    def decide(
        self,
        task: TaskNode,
        attempts: Sequence[AttemptSummary],
        error: AirError,
        *,
        transient: bool = False,
    ) -> RetryDecision:
        """Decide what follows a failed attempt.

        Args:
            task: the task (its spec carries the retry budget and verification policy).
            attempts: every finished attempt, the failed one included.
            error: the failure of the latest attempt.
            transient: the runner's classification (invariant 21).

        Returns:
            The decision and its reason.
        """
        from air.contracts.task_results import RetryDecision

        kind = error.kind
        if kind == ErrorKind.CANCELLED:
            return RetryDecision(action=RetryAction.CANCEL, reason="the attempt was cancelled")
        if kind in _IMPOSSIBLE:
            return RetryDecision(
                action=RetryAction.BLOCK,
                reason=f"{kind.value}: retrying cannot help until the environment changes",
            )
        if kind in TRANSIENT_KINDS and error.retryability == Retryability.NEVER:
            # e.g. a provider's 400/404: the same request would be refused again (IMPL-API-2)
            return RetryDecision(
                action=RetryAction.BLOCK, reason=f"refused, retrying cannot help: {error.message}"
            )
        if kind == ErrorKind.ARCHITECTURE_MISMATCH:
            return RetryDecision(
                action=RetryAction.BLOCK,
                reason="architecture/interface mismatch: route to the Architecture Designer",
            )
        phase = phase_of(error)
        if phase is not None:
            # the whole-task deadline passed: no time is left for a retry (IMPL-DEADLINE-1)
            return RetryDecision(
                action=RetryAction.BLOCK,
                reason=f"the task's deadline passed ({phase}): no time left for a retry",
            )
        if (error.metadata or {}).get("worker_status") == "blocked":
            return RetryDecision(action=RetryAction.BLOCK, reason="the worker reported a blocker")
        used = max(0, len(attempts) - 1)
        budget = task.spec.constraints.retry_budget
        if used >= budget:
            verification = task.spec.verification
            if verification.fallback_allowed and not verification.required:
                return RetryDecision(
                    action=RetryAction.SKIP,
                    reason=f"retry budget {budget} spent; fallback allowed for a non-critical task",
                )
            return RetryDecision(
                action=RetryAction.BLOCK, reason=f"retry budget {budget} spent: {error.message}"
            )
        is_transient = (
            transient or error.retryability == Retryability.TRANSIENT or kind in TRANSIENT_KINDS
        )
        if is_transient:
            return RetryDecision(
                action=RetryAction.RETRY, reason=f"transient failure ({kind.value}): same spec"
            )
        if kind == ErrorKind.TIMEOUT:
            return RetryDecision(
                action=RetryAction.RETRY_SERIAL,
                reason="hard timeout: retry alone in its wave",
                changed_dimension="serialization",
            )
        signature = error.semantic_signature
        repeats = sum(1 for a in attempts[:-1] if signature and a.failure_signature == signature)
        if repeats >= 2:
            return RetryDecision(
                action=RetryAction.BLOCK,
                reason=f"the same failure {repeats + 1} times, after a debugger: {error.message}",
            )
        if repeats or kind == ErrorKind.VERIFICATION_FAILED:
            return RetryDecision(
                action=RetryAction.DEBUG,
                reason="same failure again"
                if repeats
                else "verification failed: a debugger looks first",
                changed_dimension="debugger",
            )
        quality_before = any(
            a.failure_kind is not None
            and a.failure_kind not in {k.value for k in TRANSIENT_KINDS}
            and a.failure_kind != ErrorKind.TIMEOUT.value
            for a in attempts[:-1]
        )
        model = self.next_model(task)
        if quality_before and model is not None:
            return RetryDecision(
                action=RetryAction.RETRY,
                reason=f"task-quality failure again: retry on {model}",
                changed_dimension="model",
            )
        return RetryDecision(
            action=RetryAction.RETRY,
            reason="task-quality failure: retry with the failure added to the context",
            changed_dimension="context",
        )


def retry_spec(planner: RetryPlanner, task: TaskNode, decision: RetryDecision) -> TaskSpec:
    """The spec the retry runs: a ``model`` retry names the next escalation model; every
    other dimension keeps the spec (``context`` is L8, ``serialization`` the solo set,
    ``debugger`` a debug child)."""
    spec = task.spec
    if decision.changed_dimension != "model":
        return spec
    model = planner.next_model(task)
    if model is None:
        return spec
    constraints = spec.constraints.model_copy(update={"model_id": model})
    return spec.model_copy(update={"constraints": constraints})


def debug_context(error: AirError, records: Sequence[DebugRecord], limit: int = 20) -> str:
    """The failure evidence a debug task starts from, as text for its description.

    Args:
        error: the failed attempt's error; its metadata may hold ``diagnostics`` (parsed
            compiler/linker/CMake diagnostics) and ``failed_tests``.
        records: DebugKnowledgeStore records with the error's semantic signature.
        limit: at most this many diagnostics and records.
    """
    meta = error.metadata or {}
    lines = [f"Failure signature: {error.semantic_signature or 'none'}."]
    diagnostics = [d for d in meta.get("diagnostics") or [] if isinstance(d, dict)]
    if diagnostics:
        lines.append("Parsed diagnostics:")
        for d in diagnostics[:limit]:
            where = ":".join(str(d[k]) for k in ("file", "line", "column") if d.get(k))
            lines.append(f"- {where}: {d.get('message')} [{d.get('semantic_signature')}]")
    failed = [str(t) for t in meta.get("failed_tests") or []]
    if failed:
        lines.append("Failing tests: " + ", ".join(failed[:limit]) + ".")
    if records:
        lines.append("Known fixes for this signature (DebugKnowledgeStore):")
        for r in records[:limit]:
            fix = r.fix_summary or "no summary"
            lines.append(f"- {r.diagnosis} Root cause: {r.root_cause or 'unknown'}. Fix: {fix}")
    return "\n".join(lines)
