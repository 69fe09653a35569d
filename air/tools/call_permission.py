"""The permission side of one tool call: the request it makes and the prompt that answers it.

Owns ``permission_request`` (the ``PermissionRequestContext`` of a call, from its tool's declared
permissions, or its ``PathExtractor``, and its input) and ``ask_person`` (an ``ask_user``
decision put to the person through the prompt broker, or refused by ``FailClosedPrompt`` when
headless, with ``permission.prompt.requested``/``resolved`` recorded and any grant kept by the
engine). ``ToolRegistry`` decides with them; the engine's layers are ``air.security``'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import trio

from air.contracts.ids import JsonObject, new_id
from air.contracts.permission import PermissionAction, PermissionGrantScope
from air.contracts.prompt import FailClosedPrompt, PermissionPrompt
from air.contracts.tool import ToolDefinition
from air.security.engine import PermissionEngine
from air.tools.run import ToolRun

if TYPE_CHECKING:  # built at the first tool call (IMPL-BOOT-12)
    from air.contracts.permission_records import PermissionDecision, PermissionRequestContext
    from air.contracts.tool_runs import ToolExecutionContext

__all__ = ["PathExtractor", "ask_person", "permission_request"]

PathExtractor = Callable[[JsonObject], tuple[list[str], list[str], str | None]]
"""input → (read paths, write paths, command) for the permission request; it may refuse an
input its schema allows (``AirException``: the call ends with that error, nothing is asked)."""

_RESOLVED: dict[PermissionGrantScope, str] = {
    PermissionGrantScope.ONCE: "allow_once",
    PermissionGrantScope.TASK: "allow_task",
    PermissionGrantScope.SESSION: "allow_session",
    PermissionGrantScope.PROJECT: "allow_project",
}


async def ask_person(
    engine: PermissionEngine,
    prompts: PermissionPrompt | None,
    run: ToolRun,
    request: PermissionRequestContext,
    decision: PermissionDecision,
) -> PermissionDecision:
    """Resolve an ``ask_user`` decision: the person's answer (``prompts``), or a refusal when
    there is no one to ask (``prompts`` is None or the run is headless). The resolved decision
    (layer ``6-prompt``) is recorded; an approval is granted at the scope the person chose."""
    evaluation = engine.explain(request)
    items = [i.reason for i in evaluation.pending]
    prompt_id = new_id("prm")
    broker = prompts if prompts is not None and not request.headless else FailClosedPrompt()
    summary = "; ".join(items) if items else decision.reason
    if request.command:
        summary = f"{request.command}: {summary}"
    await run.record(
        "permission.prompt.requested",
        {
            "prompt_id": prompt_id,
            "tool_name": request.tool_name,
            "summary": summary,
            "risk_level": decision.risk_level,
            "tool_run_id": run.tool_run_id,
            "task_id": request.task_id,
            "agent_id": request.agent_id,
        },
    )
    from air.contracts.permission_records import PermissionPromptRequest

    try:
        answer = await broker.ask(
            PermissionPromptRequest(
                prompt_id=prompt_id,
                tool_name=request.tool_name,
                decision=decision,
                items=items,
                command=request.command,
                segments=evaluation.command.segments if evaluation.command else [],
                risk_level=decision.risk_level,
                task_id=request.task_id,
                agent_id=request.agent_id,
            )
        )
    except trio.Cancelled:
        # the call went away (its worker died, its task was cancelled): the prompt is withdrawn
        # as a refusal, so no view keeps asking a question nobody waits for
        with trio.CancelScope(shield=True):
            await run.record(
                "permission.prompt.resolved",
                {"prompt_id": prompt_id, "decision": "deny", "resolved_by": "policy"},
            )
        raise
    await run.record(
        "permission.prompt.resolved",
        {
            "prompt_id": prompt_id,
            "decision": _RESOLVED[answer.scope] if answer.approved else "deny",
            "resolved_by": "headless" if isinstance(broker, FailClosedPrompt) else "user",
        },
    )
    if not answer.approved:
        resolved = decision.model_copy(
            update={
                "action": PermissionAction.DENY,
                "layer": "6-prompt",
                "reason": f"the person declined: {decision.reason}",
            }
        )
    else:
        engine.grant(request, answer.scope)
        resolved = decision.model_copy(
            update={
                "action": PermissionAction.ALLOW,
                "layer": "6-prompt",
                "grant_scope": answer.scope,
            }
        )
    await engine.record(resolved, request, tool_run_id=run.tool_run_id)
    return resolved


def permission_request(
    definition: ToolDefinition,
    paths: PathExtractor | None,
    input: JsonObject,
    ctx: ToolExecutionContext,
) -> PermissionRequestContext:
    """The request a call of ``definition`` with ``input`` puts to the PermissionEngine: the
    paths and command it names (``paths``, else the fields its permissions declare), its cwd
    made absolute in the workspace, and the task's scope from ``ctx``."""
    from air.contracts.permission_records import DeclaredPermissions, PermissionRequestContext

    spec = definition.permissions
    reads: list[str] = []
    writes: list[str] = []
    command: str | None = None
    if paths is not None:
        reads, writes, command = paths(input)
    else:
        for field_name in spec.read_paths.from_input if spec.read_paths else []:
            value = input.get(field_name)
            if isinstance(value, str):
                reads.append(value)
        for field_name in spec.write_paths.from_input if spec.write_paths else []:
            value = input.get(field_name)
            if isinstance(value, str):
                writes.append(value)
        if spec.execute and isinstance(input.get("command"), str):
            command = input["command"]
    cwd = input.get("cwd") if isinstance(input.get("cwd"), str) else None
    if cwd is not None and not cwd.startswith("/"):
        cwd = f"{ctx.workspace_root.rstrip('/')}/{cwd}"
    return PermissionRequestContext(
        session_id=ctx.session_id,
        task_id=ctx.task_id,
        agent_id=ctx.agent_id,
        tool_name=definition.name,
        permission_template=ctx.permission_template,
        project_root=ctx.project_root,
        workspace_root=ctx.workspace_root,
        read_paths=reads,
        write_paths=writes,
        command=command,
        cwd=cwd,
        network=spec.network and bool(input.get("network", True)),
        system_sensitive=spec.system_sensitive,
        write_area=ctx.write_area,
        allowed_paths=ctx.allowed_paths,
        denied_paths=ctx.denied_paths,
        headless=ctx.headless,
        network_granted=ctx.network_granted,
        declared=DeclaredPermissions(
            read=True,
            write=spec.write_paths is not None,
            execute=spec.execute,
            network=spec.network,
            system_sensitive=spec.system_sensitive,
            external=spec.external,
        ),
    )
