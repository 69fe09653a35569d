"""Tool and provider routing for one worker (issue #11 item 6).

Owns: ``serve_tool`` — one ``tool.call``, served by the worker's own read loop, which is its
serving loop (no Trio task per call; IMPL-LAUNCH-3): the run's hard, grace or stall end
cancels the call in flight, which answers nothing more. Serving:
``provider.complete`` (the internal streaming tool: a ``ProviderCompletionInput`` the parent
builds from the run's ``Conversation``, which keeps the turns so far and takes only what is new
— model, limits and identity are the parent's — streamed as ``tool.stream``; past the task's
budget, ``turn_budget_breach``, the attempt ends instead: IMPL-BUDGET-1) or the
tool router (``ToolRegistry.call`` / ``call_streaming``), a ``shell.run`` verification record
(runner invariant 25), then the output cap (50 KB / 2,000 lines, the full text in an artifact)
before ``tool.result`` goes back.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from air.contracts.error import AirError, AirException, ErrorKind, Retryability, make_air_error
from air.contracts.ids import new_id
from air.contracts.ipc import ToolCallPayload
from air.supervision.conversation import Conversation, ConversationError
from air.supervision.worker_checks import artifact, cap_text
from air.supervision.worker_run import TEMPLATE, End, Supervisor, WorkerRun, err, send

if TYPE_CHECKING:
    from air.contracts.tool_runs import ToolExecutionContext, ToolResultEnvelope

__all__ = ["cap", "serve_tool", "turn_budget_breach"]


def _context(run: WorkerRun) -> ToolExecutionContext:
    if run.ctx is None:
        from air.contracts.tool_runs import (
            ToolExecutionContext,  # at the first tool call (IMPL-BOOT-12)
        )

        req = run.request
        scope = req.task_spec.scope
        run.ctx = ToolExecutionContext(
            session_id=req.session_id,
            task_id=req.task_spec.id,
            agent_id=req.agent_id,
            project_root=req.project_root,
            workspace_root=req.workspace.path,
            permission_template=TEMPLATE[run.agent_type],
            write_area=scope.write_area,
            allowed_paths=scope.allowed_paths,
            denied_paths=scope.denied_paths,
            headless=req.headless,
        )
    return run.ctx


async def serve_tool(sup: Supervisor, run: WorkerRun, call_id: str, call: ToolCallPayload) -> None:
    agent = run.request.task_spec.agent
    if call.name == "provider.complete":
        env = await _serve_provider(sup, run, call_id, call.input)
    elif agent is not None and agent.tools is not None and call.name not in agent.tools:
        env = _outside_agent_tools(call.name, agent.name, agent.tools)
    else:
        env = await _call_tool(sup, run, call_id, call, run.ctx or _context(run))
        command = str(call.input.get("command", "")) if call.name == "shell.run" else None
        if command is not None and command in (run.request.task_spec.verification.commands or ()):
            # only what the verification check reads: a worker's other commands (as many as it
            # sends, each up to 128 KiB) are not the parent's to keep (IMPL-BUDGET-1)
            out = env.output if isinstance(env.output, dict) else {}
            run.verified[command] = env.status == "ok" and out.get("exit_code") == 0
        env = cap(sup, run, env)
    await send(run, "tool.result", env, correlation_id=call_id)


async def _call_tool(
    sup: Supervisor, run: WorkerRun, call_id: str, call: ToolCallPayload, ctx: ToolExecutionContext
) -> ToolResultEnvelope:
    from air.contracts.tool_runs import ToolResultEnvelope

    try:
        if sup.tool_streams is None:
            return await sup.tools(call.name, dict(call.input), ctx)
        final: ToolResultEnvelope | None = None
        async with sup.tool_streams(call.name, dict(call.input), ctx) as items:
            async for item in items:
                if isinstance(item, ToolResultEnvelope):
                    final = item
                else:
                    await send(
                        run,
                        "tool.stream",
                        {"event": item.model_dump(mode="json")},
                        correlation_id=call_id,
                    )
        if final is None:
            raise AirException(
                err(ErrorKind.TOOL_ERROR, f"tool {call.name} ended without a result")
            )
        return final
    except AirException as exc:
        return ToolResultEnvelope(
            tool_run_id=new_id("tr"), tool_name=call.name, status="error", error=exc.error
        )


def _outside_agent_tools(name: str, agent: str, tools: list[str]) -> ToolResultEnvelope:
    """A call to a tool the task's agent file does not list: denied by the parent, whatever the
    worker offered its model (IMPL-AGENTFILE-1; the list only narrows the role's tools)."""
    from air.contracts.tool_runs import ToolResultEnvelope

    error = err(
        ErrorKind.PERMISSION_DENIED,
        f"tool {name} is not among the tools of agent {agent!r}: {', '.join(tools) or 'none'}",
    )
    return ToolResultEnvelope(
        tool_run_id=new_id("tr"), tool_name=name, status="denied", error=error
    )


def _provider_error(run_id: str, error: Any) -> ToolResultEnvelope:
    from air.contracts.tool_runs import ToolResultEnvelope

    return ToolResultEnvelope(
        tool_run_id=run_id, tool_name="provider.complete", status="error", error=error
    )


def _conversation(sup: Supervisor, run: WorkerRun) -> Conversation:
    """The run's conversation, made at its first turn with the fields the parent decides."""
    if run.conversation is None:
        req = run.request
        model_ref = req.task_spec.constraints.model_id or sup.model
        provider_id, _, model_id = model_ref.partition("/")
        if not model_id:
            provider_id, model_id = sup.model.partition("/")[0], model_ref
        max_tokens = sup.config.max_tokens
        run.conversation = Conversation(
            {
                # the parent owns the model's limits: models.yaml's max_output_tokens,
                # unless SupervisionConfig.max_tokens caps it
                **({"max_tokens": max_tokens} if max_tokens else {}),
                "provider_id": provider_id,
                "model_id": model_id,
                "session_id": req.session_id,
                "task_id": req.task_spec.id,
                "agent_id": req.agent_id,
            }
        )
    return run.conversation


def turn_budget_breach(run: WorkerRun, grace_turns: int) -> AirError | None:
    """Why the worker may not have another model turn this attempt, or None while it may.

    The worker stops itself at its task's budget (``max_turns``, ``max_cost_usd``), then takes
    at most ``grace_turns`` more to wrap up and one round to repair an invalid final answer
    (``air.roles.loop``; runner-contract invariants 14 and 20). The parent, which makes the
    calls and pays for them, holds every worker to that (IMPL-BUDGET-1): a worker whose loop
    runs away — or that never counted — is ended, not served, past it.
    """
    limits = run.request.task_spec.constraints
    allowed = limits.max_turns + grace_turns + 1
    why = f"max_turns {limits.max_turns}"
    if run.cost_reached_at is not None and run.cost_reached_at + grace_turns + 1 < allowed:
        allowed = run.cost_reached_at + grace_turns + 1
        why = f"max_cost_usd {limits.max_cost_usd} reached at turn {run.cost_reached_at}"
    if run.model_turns < allowed:
        return None
    return make_air_error(
        kind=ErrorKind.BUDGET_EXCEEDED,
        message=f"the worker asked for model turn {run.model_turns + 1}; its task allows "
        f"{allowed} ({why}, then {grace_turns} grace turns and one repair)",
        retryability=Retryability.NEVER,
        user_action="The worker did not stop at its budget: see its stderr log artifact.",
    )


def _count_turn(run: WorkerRun, cost_usd: float | None) -> None:
    run.model_cost_usd += cost_usd or 0.0
    max_cost = run.request.task_spec.constraints.max_cost_usd
    if run.cost_reached_at is None and max_cost is not None and run.model_cost_usd >= max_cost:
        run.cost_reached_at = run.model_turns


async def _serve_provider(
    sup: Supervisor, run: WorkerRun, call_id: str, input: dict[str, Any]
) -> ToolResultEnvelope:
    run_id = new_id("tr")
    breach = turn_budget_breach(run, sup.config.grace_turns)
    if breach is not None:
        run.stop(End("protocol_error", breach, False))  # ends the read loop: nothing served
        return _provider_error(run_id, breach)
    run.model_turns += 1
    try:
        request = _conversation(sup, run).turn(input)
    except ValidationError as exc:
        return _provider_error(
            run_id,
            err(
                ErrorKind.VALIDATION_ERROR,
                f"invalid provider.complete input: {exc.errors()[0]['msg']}",
            ),
        )
    except ConversationError as exc:
        return _provider_error(
            run_id, err(ErrorKind.VALIDATION_ERROR, f"invalid provider.complete input: {exc}")
        )
    try:
        async for ev in sup.provider.complete(request):
            if ev.type == "message_stop":
                _count_turn(run, ev.usage.cost_usd)
                # imported once the first reply is in, not before the first request (IMPL-BOOT-12)
                from air.contracts.tool_runs import ToolResultEnvelope

                return ToolResultEnvelope(
                    tool_run_id=run_id,
                    tool_name="provider.complete",
                    status="ok",
                    output={
                        "content": [
                            b.model_dump(mode="json", exclude_none=True) for b in ev.content
                        ],
                        "stop_reason": ev.stop_reason.value,
                        "usage": ev.usage.model_dump(mode="json"),
                    },
                )
            if ev.type == "error":
                return _provider_error(run_id, ev.error)
            await send(
                run, "tool.stream", {"event": ev.model_dump(mode="json")}, correlation_id=call_id
            )
    except AirException as exc:
        return _provider_error(run_id, exc.error)
    return _provider_error(
        run_id,
        err(
            ErrorKind.PROVIDER_ERROR,
            "the provider stream ended without message_stop",
            transient=True,
        ),
    )


def cap(sup: Supervisor, run: WorkerRun, env: ToolResultEnvelope) -> ToolResultEnvelope:
    """Cut a tool's output to the configured size; the full text goes to an artifact."""
    cfg = sup.config
    out = env.output
    if out is None or isinstance(out, (int, float, bool)):
        return env
    if isinstance(out, str) and len(out) * 4 <= cfg.max_result_bytes:
        if out.count("\n") < cfg.max_result_lines:
            return env
    text = out if isinstance(out, str) else json.dumps(out, ensure_ascii=False, default=str)
    capped, cut = cap_text(text, cfg.max_result_bytes, cfg.max_result_lines)
    if not cut:
        return env
    ref = artifact(sup, run, f"{env.tool_name}-output", text, tool_run_id=env.tool_run_id)
    return env.model_copy(
        update={"output": capped, "truncated": True, "artifacts": [*env.artifacts, ref]}
    )
