"""The tools an agent file may give a task: a subset of its role's, never more (IMPL-AGENTFILE-1).

Owns ``role_tools`` (the built-in tools each worker role has: every one for the executor and
the debugger; for the read-only roles, the reviewer template's, only the tools that write no
path) and ``check_agent_tools`` (fail closed: an unknown tool name, or one the task's role
lacks, is an ``AirException``, never ignored). The parent enforces the list again on every
tool call of the worker (``air.supervision.worker_tools``): a worker cannot widen it.
"""

from __future__ import annotations

import functools

from air.contracts.error import AirException, ErrorKind
from air.contracts.runtime import AgentType
from air.contracts.task import AGENT_TYPE_FOR_TASK, TaskSpec
from air.contracts.tool import ToolDefinition

__all__ = ["check_agent_tools", "role_tools"]

_READ_ONLY_ROLES = frozenset({AgentType.REVIEWER, AgentType.COMPACTOR, AgentType.EXPERIENCE_MINER})
"""The roles under the reviewer permission template (``air.supervision.worker_run.TEMPLATE``)."""


@functools.cache
def _builtin() -> tuple[ToolDefinition, ...]:
    """The built-in tools' definitions (the same registration a runtime makes; no I/O)."""
    from air.security.engine import PermissionEngine
    from air.tools import ToolRegistry, register_builtin_tools

    registry = ToolRegistry(engine=PermissionEngine(), recorder=None, artifacts=None)  # type: ignore[arg-type]
    register_builtin_tools(registry)
    return tuple(registry.list())


def role_tools(agent_type: AgentType) -> list[str]:
    """The names of the built-in tools a worker of ``agent_type`` has, in registration order."""
    return [
        d.name
        for d in _builtin()
        if agent_type not in _READ_ONLY_ROLES or d.permissions.write_paths is None
    ]


def check_agent_tools(spec: TaskSpec, where: str) -> None:
    """Refuse a task whose agent file lists a tool its role does not have.

    Args:
        spec: the task, with its ``agent`` resolved.
        where: the agent file (or batch file) named in the message.

    Raises:
        AirException: ``validation_error`` naming the tool, the role and what the role has.
    """
    agent = spec.agent
    if agent is None or agent.tools is None:
        return
    role = AGENT_TYPE_FOR_TASK[spec.type]
    allowed = role_tools(role)
    known = {d.name for d in _builtin()}
    for name in agent.tools:
        if name in allowed:
            continue
        why = "is not a tool air knows" if name not in known else f"is not a tool of the {role}"
        raise AirException.of(
            kind=ErrorKind.VALIDATION_ERROR,
            message=f"{where}: tools: {name!r} {why} (task {spec.id!r} runs as {role}); "
            "an agent file's tools only narrow its role's",
            user_action=f"Keep tools within the {role}'s: {', '.join(allowed)}.",
            metadata={"file": where, "field": "tools", "tool": name, "role": str(role)},
        )
