"""Parent-side checks of what a worker hands back (runner invariants 6 and 25).

Owns: ``check_result`` (a ``worker.result`` must name this task and agent; its role result must
match the role's contract, else completed → partial; an executor's claimed change must have
passed every verification command through ``shell.run`` in this run — no self-attestation;
summary and raw text are capped with the full text in an artifact; everything is redacted
before it is recorded), ``cap_text`` (the byte and line cap) and ``artifact`` (a redacted text
artifact of this run).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from air.contracts.artifact import ArtifactType
from air.contracts.error import ErrorKind
from air.contracts.runtime import AgentType
from air.ipc.framing import ProtocolViolation
from air.supervision.worker_run import CONTRACT, Supervisor, WorkerRun, err, redact

if TYPE_CHECKING:  # a result or an artifact exists only once a worker sent one (IMPL-BOOT-12)
    from air.contracts.artifact_records import ArtifactRef
    from air.contracts.error import AirError
    from air.contracts.worker_result import WorkerResult

__all__ = ["artifact", "cap_text", "check_result"]


def cap_text(text: str, max_bytes: int, max_lines: int) -> tuple[str, bool]:
    """Cut ``text`` to ``max_bytes`` UTF-8 bytes and ``max_lines`` lines (runner invariant 6)."""
    lines = text.split("\n")
    cut = False
    if len(lines) > max_lines:
        text, cut = "\n".join(lines[:max_lines]), True
    data = text.encode("utf-8")
    if len(data) > max_bytes:
        text, cut = data[:max_bytes].decode("utf-8", "ignore"), True
    return text, cut


def _missing_verification(run: WorkerRun, result: WorkerResult) -> list[str]:
    from air.contracts.worker_result import WorkerStatus

    spec = run.request.task_spec
    changes = bool(result.changed_files) or bool((result.result or {}).get("changes_made"))
    commands = list(spec.verification.commands or [])
    if not (
        result.status == WorkerStatus.COMPLETED
        and changes
        and commands
        and run.agent_type == AgentType.EXECUTOR
    ):
        return []
    skipped = {v.name for v in result.verification if v.status == "skipped"}
    return [
        c
        for c in commands
        if not run.verified.get(c)
        and not (spec.verification.fallback_allowed and c in skipped and c not in run.verified)
    ]


def _verification_error(run: WorkerRun, missing: list[str]) -> AirError:
    """Says what happened to each missing command: it ran through shell.run and failed, or
    it never ran (a claim with no run behind it is not a failed run)."""
    failed = [c for c in missing if c in run.verified]
    never = [c for c in missing if c not in run.verified]
    parts = [f"failed in shell.run: {', '.join(failed)}"] if failed else []
    parts += [f"never ran through shell.run: {', '.join(never)}"] if never else []
    action = "Fix the change so the verification commands pass."
    if never:
        action = "Run the verification commands with shell.run after the change, until they pass."
    message = "verification " + "; ".join(parts)
    return err(ErrorKind.VERIFICATION_FAILED, message, user_action=action)


def check_result(sup: Supervisor, run: WorkerRun, result: WorkerResult) -> WorkerResult:
    """Validate a result on the parent side (runner invariant 25: no self-attestation)."""
    from air.contracts.worker_result import ROLE_RESULT_MODELS, WorkerResult, WorkerStatus

    spec = run.request.task_spec
    if result.task_id != spec.id or result.agent_id != run.request.agent_id:
        raise ProtocolViolation("a worker result names another task or agent")
    if sup.redactor is not None:
        # what the model wrote may hold a key it saw: redacted before anything is cut or
        # recorded (cut first, a secret across the cut was no longer whole)
        dumped = sup.redactor.redact_obj(result.model_dump(mode="json"))
        result = WorkerResult.model_validate(dumped)
    update: dict[str, Any] = {}
    contract = CONTRACT[run.agent_type]
    if result.result is not None:
        try:
            ROLE_RESULT_MODELS[contract].model_validate(result.result)
        except ValidationError as exc:
            if result.status == WorkerStatus.COMPLETED:
                update["status"] = WorkerStatus.PARTIAL
                update["error"] = err(
                    ErrorKind.VALIDATION_ERROR,
                    f"the result does not match {contract}: "
                    + redact(sup, str(exc.errors()[0]["msg"])),
                )
    missing = _missing_verification(run, result)
    if missing:
        update["status"] = WorkerStatus.FAILED
        update["error"] = _verification_error(run, missing)
    cfg = sup.config
    for name in ("summary", "raw_text"):
        value = getattr(result, name)
        if isinstance(value, str):
            capped, cut = cap_text(value, cfg.max_result_bytes, cfg.max_result_lines)
            if cut:
                ref = artifact(sup, run, f"result-{name}", value)
                update[name] = capped + f"\n[truncated; full text in artifact {ref.artifact_id}]"
                update["artifacts"] = [*result.artifacts, *update.get("artifacts", []), ref]
    return result.model_copy(update=update) if update else result


def artifact(
    sup: Supervisor,
    run: WorkerRun,
    slug: str,
    text: str,
    *,
    tool_run_id: str | None = None,
    artifact_type: ArtifactType = ArtifactType.OTHER,
) -> ArtifactRef:
    from air.contracts.artifact_records import ArtifactContext, ArtifactCreateInput

    req = run.request
    return sup.artifacts.create(
        ArtifactCreateInput(
            type=artifact_type,
            slug=slug,
            extension=".txt",
            content=redact(sup, text).encode("utf-8"),
        ),
        ArtifactContext(
            session_id=req.session_id,
            task_id=req.task_spec.id,
            agent_id=req.agent_id,
            tool_run_id=tool_run_id,
        ),
    )
