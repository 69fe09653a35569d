"""The one agent loop every role runs, and the five roles (SDD §8.3, ARCHITECTURE §4).

Owns: ``AgentLoopRole`` (messages → ``provider.complete`` → each ``tool_use`` → ``call_tool`` →
``tool_result`` blocks → repeat, until the final text holds a valid ```json:result block; one
repair round; budgets ``max_turns`` / cost with a wrap-up message and grace turns; a correction
received meanwhile goes in before the next turn, ``air.roles.steering``), the executor's
verification gate, ``ExecutorRole``, ``ReviewerRole``, ``DebuggerRole``, ``CompactorRole``,
``ExperienceMinerRole``, ``role_for`` (TaskType → role) and ``load_prompt`` (package resources).
"""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any, ClassVar

from pydantic import ValidationError

from air.contracts.error import AirError, ErrorKind, make_air_error
from air.contracts.ipc import AgentStartControl
from air.contracts.provider import unparsed_call
from air.contracts.runtime import AgentType, ContextPack
from air.contracts.task import TaskSpec, TaskType
from air.contracts.tool_runs import ToolResultEnvelope
from air.contracts.worker_result import (
    ROLE_RESULT_MODELS,
    Risk,
    VerificationResult,
    WorkerResult,
    WorkerStatus,
)
from air.ipc.runtime import WorkerRuntime
from air.roles.steering import take_steering

__all__ = [
    "REPAIR_MESSAGE",
    "RESUME_NOTE",
    "WRAP_UP_MESSAGE",
    "AgentLoopRole",
    "CompactorRole",
    "DebuggerRole",
    "ExecutorRole",
    "ExperienceMinerRole",
    "ReviewerRole",
    "extract_result_block",
    "load_prompt",
    "role_for",
]

WRAP_UP_MESSAGE = (
    "Budget reached ({reason}). Stop calling tools and give your final answer now, with the "
    "```json:result block."
)
REPAIR_MESSAGE = (
    "Your final answer did not contain a valid ```json:result block ({problem}). Reply again "
    "with only that block, following the output contract."
)
RESUME_NOTE = (
    "An earlier attempt at this task stopped without a result (the runtime stopped) after "
    "{turn} turns, in state {state}. Check what is already done before you redo it."
)
_BLOCK = re.compile(r"```json:result[ \t]*\r?\n(.*?)```", re.S)
_WRITE_TOOLS = frozenset({"fs.write", "fs.edit", "fs.patch", "fs.delete", "fs.move"})


def load_prompt(name: str) -> str:
    return resources.files("air.roles").joinpath("prompts", f"{name}.md").read_text("utf-8")


def extract_result_block(text: str, contract: str) -> tuple[dict[str, Any] | None, str | None]:
    """The last ```json:result block of ``text``, validated; or ``(None, problem)``."""
    blocks = _BLOCK.findall(text)
    if not blocks:
        return None, "no json:result block"
    try:
        data = json.loads(blocks[-1])
    except ValueError as exc:
        return None, f"invalid JSON: {exc}"
    except RecursionError:
        return None, "the block nests deeper than JSON air reads"
    if not isinstance(data, dict):
        return None, "the block is not a JSON object"
    try:  # JSON's `\ud800` alone is no UTF-8: the result could not be sent to the parent
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return None, "the block holds an unpaired surrogate (\\ud800-\\udfff), which is no text"
    status = data.get("status", "completed")
    if status not in ("completed", "failed", "blocked"):
        return None, f"status {status!r} is not completed, failed or blocked"
    if not isinstance(data.get("summary", ""), str):
        return None, "summary is not a string"
    try:
        payload = ROLE_RESULT_MODELS[contract].model_validate(data.get("result") or {})
    except ValidationError as exc:
        return None, f"result does not match {contract}: {exc.errors()[0]['msg']}"
    data["result"] = payload.model_dump(mode="json")
    return data, None


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _text_of(content: list[dict[str, Any]]) -> str:
    return "\n".join(str(b.get("text", "")) for b in content if b.get("type") == "text")


def _tool_result_text(env: ToolResultEnvelope) -> str:
    if env.status == "ok":
        out = env.output
        text = out if isinstance(out, str) else json.dumps(out, ensure_ascii=False, default=str)
    else:
        text = json.dumps(
            {
                "status": env.status,
                "error": env.error.message if env.error else None,
                "user_action": env.error.user_action if env.error else None,
            }
        )
    if env.truncated:
        refs = ", ".join(a.artifact_id for a in env.artifacts)
        text += f"\n[output truncated; full text in artifact {refs}]"
    return text


class AgentLoopRole:
    """One agent loop; subclasses set the agent type, output contract and prompt."""

    agent_type: ClassVar[AgentType]
    output_contract: ClassVar[str]
    prompt_name: ClassVar[str]

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        opts = options or {}
        self.grace_turns = int(opts.get("grace_turns", 2))
        self.max_tokens = int(opts.get("max_tokens", 4096))
        self.verification: dict[str, VerificationResult] = {}
        self.changed_files: list[str] = []
        self.evidence: list[Any] = []
        carried = opts.get("resume_from")
        self.resumed: dict[str, Any] | None = carried if isinstance(carried, dict) else None
        """The last checkpoint of an earlier attempt that ended without a result (IMPL-CKPT-1)."""

    # -- messages ------------------------------------------------------------------------------

    def system_prompt(self, pack: ContextPack) -> str:
        """The ``system`` of every turn. An assembled pack (it has ``messages``) already holds
        L0-L3, the role prompt included, and is used as is (IMPL-CTX-6); otherwise the role
        prompt comes first, then the pack's extra system text."""
        if pack.messages and pack.system_prompt:
            return pack.system_prompt
        parts = [load_prompt(self.prompt_name)]
        if pack.system_prompt:
            parts.append(pack.system_prompt)
        return "\n\n".join(parts)

    def first_messages(self, spec: TaskSpec, pack: ContextPack) -> list[dict[str, Any]]:
        """The first user message: the pack's assembled L4-L9, or one built from the spec."""
        if pack.messages:
            return [dict(m) for m in pack.messages]
        lines = [f"# Task {spec.id}: {spec.title}", "", spec.description]
        if spec.acceptance_criteria:
            lines += ["", "Acceptance criteria:"] + [f"- {c}" for c in spec.acceptance_criteria]
        if spec.verification.commands:
            lines += ["", "Verification commands (run each with shell.run):"]
            lines += [f"- `{c}`" for c in spec.verification.commands]
        if spec.scope.write_area:
            lines += ["", "Write area: " + ", ".join(spec.scope.write_area)]
        return [{"role": "user", "content": [{"type": "text", "text": "\n".join(lines)}]}]

    def resume(self, runtime: WorkerRuntime, messages: list[dict[str, Any]]) -> None:
        """Start from an earlier attempt's checkpoint: its usage counts as spent (budgets
        included; runner invariant 21) and the model is told where that attempt stopped."""
        cp = self.resumed
        if cp is None:
            return
        carried = cp.get("usage")
        usage: dict[str, Any] = carried if isinstance(carried, dict) else {}
        runtime.turn = _count(cp.get("turn"))
        runtime.tokens = _count(usage.get("tokens"))
        runtime.cache_read_tokens = _count(usage.get("cache_read_tokens"))
        runtime.cache_write_tokens = _count(usage.get("cache_write_tokens"))
        cost = usage.get("cost_usd")
        runtime.cost_known = isinstance(cost, (int, float))
        runtime.cost_usd = float(cost) if isinstance(cost, (int, float)) else 0.0
        files = [f for f in cp.get("changed_files") or [] if isinstance(f, str)]
        self.changed_files = list(files)
        note = RESUME_NOTE.format(turn=runtime.turn, state=cp.get("state", "running"))
        if files:
            note += " Files it had changed: " + ", ".join(files) + "."
        first = next((m for m in messages if m.get("role") == "user"), None)
        if first is None:
            messages.insert(0, {"role": "user", "content": [{"type": "text", "text": note}]})
            return
        content = first.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        first["content"] = [{"type": "text", "text": note}, *(content or [])]

    async def checkpoint(self, runtime: WorkerRuntime) -> None:
        """A lightweight checkpoint after a turn: the runtime's usage and the changed paths
        (the parent decides which become durable; ``air.supervision.checkpoints``)."""
        await runtime.checkpoint({"changed_files": self.changed_files}, "turn")

    # -- tool bookkeeping ----------------------------------------------------------------------

    def observe_tool(self, name: str, input: dict[str, Any], env: ToolResultEnvelope) -> None:
        self.evidence.extend(env.evidence_refs)
        if name in _WRITE_TOOLS and env.status == "ok":
            path = input.get("path") or input.get("to")
            if isinstance(path, str) and path not in self.changed_files:
                self.changed_files.append(path)
        if name == "shell.run":
            command = str(input.get("command", ""))
            out = env.output if isinstance(env.output, dict) else {}
            passed = env.status == "ok" and out.get("exit_code") == 0
            self.verification[command] = VerificationResult(
                name=command,
                status="passed" if passed else "failed",
                evidence_refs=list(env.evidence_refs) or None,
                notes=None if passed else f"exit {out.get('exit_code')} / {env.status}",
            )

    # -- result --------------------------------------------------------------------------------

    def gate(
        self, spec: TaskSpec, block: dict[str, Any]
    ) -> tuple[WorkerStatus, list[VerificationResult], list[Risk], AirError | None]:
        """Role-specific checks of a ``completed`` claim. Default: accept as is."""
        return WorkerStatus(block.get("status", "completed")), [], [], None

    def _result(
        self,
        runtime: WorkerRuntime,
        status: WorkerStatus,
        summary: str,
        *,
        payload: dict[str, Any] | None = None,
        error: AirError | None = None,
        stop_reason: str | None = None,
        raw_text: str | None = None,
        verification: list[VerificationResult] | None = None,
        risks: list[Risk] | None = None,
        extra_files: list[str] | None = None,
        wrapped_up: bool = False,
    ) -> WorkerResult:
        files = list(self.changed_files)
        for f in extra_files or []:
            if f not in files:
                files.append(f)
        return WorkerResult(
            task_id=runtime.task_id,
            agent_id=runtime.agent_id,
            agent_type=self.agent_type,
            status=status,
            summary=summary,
            changed_files=files,
            verification=verification
            if verification is not None
            else list(self.verification.values()),
            risks=risks or [],
            evidence_refs=self.evidence,
            result=payload,
            error=error,
            stop_reason=stop_reason,
            raw_text=raw_text,
            usage={
                "turns": runtime.turn,
                "tokens": runtime.tokens,
                "cache_read_tokens": runtime.cache_read_tokens,
                "cache_write_tokens": runtime.cache_write_tokens,
                "cost_usd": runtime.cost_usd if runtime.cost_known else None,
                "wrapped_up": wrapped_up,
            },
        )

    # -- the loop ------------------------------------------------------------------------------

    async def run(self, spec: TaskSpec, pack: ContextPack, runtime: WorkerRuntime) -> WorkerResult:
        system = self.system_prompt(pack)
        messages = self.first_messages(spec, pack)
        self.resume(runtime, messages)
        tools = list(pack.tools or [])
        limits = spec.constraints
        deadline: int | None = None
        stop_reason: str | None = None
        repaired = False
        last_text = ""
        while True:
            if runtime.wrap_up_reason and deadline is None:
                stop_reason, deadline = "soft_timeout", runtime.turn + self.grace_turns
                messages.append(
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": WRAP_UP_MESSAGE.format(reason=stop_reason)}
                        ],
                    }
                )
                messages = _merge_user(messages)
            take_steering(runtime, messages)  # a correction sent while it ran (mid-run steering)
            runtime.turn += 1
            env = await runtime.complete(
                system=system, messages=messages, tools=tools, max_tokens=self.max_tokens
            )
            if env.status != "ok" or not isinstance(env.output, dict):
                error = env.error or make_air_error(
                    kind=ErrorKind.PROVIDER_ERROR,
                    message="the model call failed",
                    retryability="transient",
                )
                status = WorkerStatus.PARTIAL if runtime.turn > 1 else WorkerStatus.FAILED
                return self._result(
                    runtime,
                    status,
                    f"model call failed: {error.message}",
                    error=error,
                    stop_reason="provider_error",
                    raw_text=last_text or None,
                )
            content: list[dict[str, Any]] = list(env.output.get("content") or [])
            usage = env.output.get("usage") or {}
            runtime.tokens += int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0))
            runtime.cost_usd += float(usage.get("cost_usd") or 0.0)
            runtime.cache_read_tokens += int(usage.get("cache_read_input_tokens", 0))
            runtime.cache_write_tokens += int(usage.get("cache_creation_input_tokens", 0))
            runtime.cost_known = runtime.cost_known and usage.get("cost_usd") is not None
            messages.append({"role": "assistant", "content": content})
            text = _text_of(content)
            last_text = text or last_text
            tool_uses = [b for b in content if b.get("type") == "tool_use"]
            if tool_uses:
                results: list[dict[str, Any]] = []
                for block in tool_uses:
                    name, tin = str(block.get("name")), dict(block.get("input") or {})
                    if block.get("input_error"):  # never made: the model mends it (IMPL-API-8)
                        answer, failed = unparsed_call(name, str(block["input_error"])), True
                    else:
                        res = await runtime.call_tool(name, tin)
                        self.observe_tool(name, tin, res)
                        answer, failed = _tool_result_text(res), res.status != "ok"
                    results.append(
                        {
                            "type": "tool_result",
                            "tool_use_id": block.get("id"),
                            "content": answer,
                            "is_error": failed,
                        }
                    )
                if deadline is not None and runtime.turn >= deadline:
                    return self._forced_stop(runtime, stop_reason or "budget", last_text)
                if deadline is None:
                    breach = self._breach(runtime, limits.max_turns, limits.max_cost_usd)
                    if breach is not None:
                        stop_reason, deadline = breach, runtime.turn + self.grace_turns
                        if self.grace_turns <= 0:
                            return self._forced_stop(runtime, breach, last_text)
                        results.append(
                            {"type": "text", "text": WRAP_UP_MESSAGE.format(reason=breach)}
                        )
                messages.append({"role": "user", "content": results})
                await self.checkpoint(runtime)
                continue
            final, problem = extract_result_block(text, self.output_contract)
            if final is not None:
                status, verification, risks, gate_error = self.gate(spec, final)
                if stop_reason is not None and status == WorkerStatus.COMPLETED:
                    status = WorkerStatus.PARTIAL
                return self._result(
                    runtime,
                    status,
                    str(final.get("summary") or "")[:4000],
                    payload=final["result"],
                    error=gate_error,
                    stop_reason=stop_reason,
                    verification=verification or None,
                    risks=risks,
                    extra_files=[f for f in final.get("changed_files") or [] if isinstance(f, str)],
                    wrapped_up=stop_reason is not None,
                )
            if not repaired and (deadline is None or runtime.turn < deadline):
                repaired = True
                messages.append(
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": REPAIR_MESSAGE.format(problem=problem)}
                        ],
                    }
                )
                continue
            invalid = make_air_error(
                kind=ErrorKind.VALIDATION_ERROR,
                message=f"the model's final answer has no valid result: {problem}",
                retryability="after_change",
                user_action="Read raw_text; the work may be usable.",
            )
            status = WorkerStatus.PARTIAL if stop_reason is not None else WorkerStatus.FAILED
            return self._result(
                runtime,
                status,
                "no valid structured result",
                error=invalid,
                stop_reason=stop_reason or "invalid_result",
                raw_text=text,
            )

    def _breach(self, runtime: WorkerRuntime, max_turns: int, max_cost: float | None) -> str | None:
        if runtime.turn >= max_turns:
            return "max_turns"
        if max_cost is not None and runtime.cost_usd >= max_cost:
            return "max_cost"
        return None

    def _forced_stop(self, runtime: WorkerRuntime, reason: str, text: str) -> WorkerResult:
        return self._result(
            runtime,
            WorkerStatus.PARTIAL,
            f"stopped by budget ({reason}) after {runtime.turn} turns",
            error=make_air_error(
                kind=ErrorKind.BUDGET_EXCEEDED,
                message=f"budget {reason} reached",
                retryability="never",
            ),
            stop_reason=reason,
            raw_text=text or None,
        )


def _merge_user(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Fold consecutive user messages into one (providers want alternating roles)."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if out and out[-1]["role"] == "user" and m["role"] == "user":
            out[-1] = {"role": "user", "content": list(out[-1]["content"]) + list(m["content"])}
        else:
            out.append(m)
    return out


class ExecutorRole(AgentLoopRole):
    agent_type = AgentType.EXECUTOR
    output_contract = "ExecutorResult"
    prompt_name = "executor"

    def gate(
        self, spec: TaskSpec, block: dict[str, Any]
    ) -> tuple[WorkerStatus, list[VerificationResult], list[Risk], AirError | None]:
        status = WorkerStatus(block.get("status", "completed"))
        changes = bool((block.get("result") or {}).get("changes_made")) or bool(self.changed_files)
        commands = list(spec.verification.commands or [])
        verification = [
            self.verification.get(c)
            or VerificationResult(name=c, status="unknown", notes="not run")
            for c in commands
        ]
        if status != WorkerStatus.COMPLETED or not changes or not commands:
            return status, verification, [], None
        missing = [v.name for v in verification if v.status != "passed"]
        if not missing:
            return status, verification, [], None
        reason = block.get("verification_skipped_reason")
        not_run = [c for c in missing if c not in self.verification]
        if (
            spec.verification.fallback_allowed
            and isinstance(reason, str)
            and reason
            and not_run == missing
        ):
            skipped = [
                v
                if v.status == "passed"
                else VerificationResult(name=v.name, status="skipped", notes=reason)
                for v in verification
            ]
            risk = Risk(severity="medium", summary=f"verification skipped: {reason}")
            return status, skipped, [risk], None
        failed = [c for c in missing if c not in not_run]
        said = [f"failed: {', '.join(failed)}"] if failed else []
        said += [f"never ran: {', '.join(not_run)}"] if not_run else []
        action = "Fix the change so the verification commands pass, or allow a fallback."
        if not_run:
            action = "Run the verification commands with shell.run, and fix the change until "
            action += "they pass (or allow a fallback)."
        error = make_air_error(
            kind=ErrorKind.VERIFICATION_FAILED,
            message="verification " + "; ".join(said),
            retryability="after_change",
            user_action=action,
        )
        return WorkerStatus.FAILED, verification, [], error


class ReviewerRole(AgentLoopRole):
    agent_type = AgentType.REVIEWER
    output_contract = "ReviewerResult"
    prompt_name = "reviewer"


class DebuggerRole(AgentLoopRole):
    agent_type = AgentType.DEBUGGER
    output_contract = "DebuggerResult"
    prompt_name = "debugger"


class CompactorRole(AgentLoopRole):
    agent_type = AgentType.COMPACTOR
    output_contract = "CompactorResult"
    prompt_name = "compactor"


class ExperienceMinerRole(AgentLoopRole):
    agent_type = AgentType.EXPERIENCE_MINER
    output_contract = "ExperienceMinerResult"
    prompt_name = "experience_miner"


_ROLES: dict[TaskType, type[AgentLoopRole]] = {
    TaskType.EXECUTE: ExecutorRole,
    TaskType.DOCS: ExecutorRole,
    TaskType.REVIEW: ReviewerRole,
    TaskType.DEBUG: DebuggerRole,
    TaskType.COMPACT: CompactorRole,
    TaskType.MINE_EXPERIENCE: ExperienceMinerRole,
}


def role_for(start: AgentStartControl) -> AgentLoopRole:
    """The role of a task (SDD §8.3 table; ``docs`` → ExecutorRole)."""
    return _ROLES[start.task_spec.type](start.options)
