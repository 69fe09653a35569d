"""The implementation a project or user capability brings: tools that run a declared command.

Owns ``command_registrar``: the Registrar of such a manifest (its commands are checked by
``air.capabilities.registry.command_problems``): each tool runs its command, placeholders
filled with the shell-quoted inputs, in the same bubblewrap sandbox as ``shell.run``. Every
definition it registers is ``external``: the PermissionEngine cannot see what the command
does, so every call asks unless a policy rule allows it; an approval or enablement never
changes that (IMPL-CAP-1).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from air.capabilities.registry import COMMAND_PLACEHOLDER, Registrar
from air.contracts.ids import JsonObject
from air.contracts.tool import ToolDefinition
from air.tools.registry import ToolRegistry
from air.tools.run import ToolRun
from air.tools.shell import SandboxRunner, run_sandboxed_command

__all__ = ["command_registrar", "fill_command"]

COMMAND_TIMEOUT_S = 120.0


def fill_command(template: str, values: JsonObject) -> str:
    """``template`` with each ``{name}`` replaced by the shell-quoted input (empty when absent):
    an input is one word of the command, never more shell."""
    import shlex  # at a capability tool's first call, not before the first request (IMPL-BOOT-8)

    def one(match: re.Match[str]) -> str:
        value = values.get(match.group(1))
        return shlex.quote("" if value is None else str(value))

    return COMMAND_PLACEHOLDER.sub(one, template)


def command_registrar(
    commands: Mapping[str, str], sandbox: SandboxRunner | None = None
) -> Registrar:
    """The Registrar of a manifest whose tools run ``commands`` (tool name -> template)."""
    runner = sandbox or SandboxRunner()

    def register(registry: ToolRegistry, definitions: Sequence[ToolDefinition]) -> object:
        for definition in definitions:
            template = commands[definition.name]
            permissions = definition.permissions.model_copy(
                update={"execute": True, "external": "unmarked"}
            )
            declared = definition.model_copy(update={"permissions": permissions})

            async def executor(input: JsonObject, run: ToolRun, template: str = template) -> Any:
                command = fill_command(template, input)
                return await run_sandboxed_command(command, run, runner, COMMAND_TIMEOUT_S)

            registry.register_streaming(declared, executor)
        return None

    return register
