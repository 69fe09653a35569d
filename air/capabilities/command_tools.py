"""The implementation a project or user capability brings: tools that run a declared command.

Owns ``command_registrar``: the Registrar of such a manifest (its commands are checked by
``air.capabilities.registry.command_problems``): each tool runs its command, each placeholder
filled with its shell-quoted input (``air.capabilities.command_template``: one word, never
more shell, never an option where a word of its own would be one), in the same bubblewrap
sandbox as ``shell.run``. An input the command would read as an option is refused before the
PermissionEngine is asked. Every definition it registers is ``external``: the PermissionEngine
cannot see what the command does, so every call asks unless a policy rule allows it; an
approval or enablement never changes that (IMPL-CAP-1, IMPL-CAP-2).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from air.capabilities.registry import Registrar
from air.contracts.error import AirException, ErrorKind
from air.contracts.ids import JsonObject
from air.contracts.tool import ToolDefinition
from air.tools.registry import ToolRegistry
from air.tools.run import ToolRun
from air.tools.shell import SandboxRunner, run_sandboxed_command

__all__ = ["command_registrar"]

COMMAND_TIMEOUT_S = 120.0


def command_registrar(
    commands: Mapping[str, str], sandbox: SandboxRunner | None = None
) -> Registrar:
    """The Registrar of a manifest whose tools run ``commands`` (tool name -> template)."""
    runner = sandbox or SandboxRunner()

    def register(registry: ToolRegistry, definitions: Sequence[ToolDefinition]) -> object:
        for definition in definitions:
            permissions = definition.permissions.model_copy(
                update={"execute": True, "external": "unmarked"}
            )
            declared = definition.model_copy(update={"permissions": permissions})
            command = _command_of(declared.name, commands[declared.name])

            def checked(
                input: JsonObject, command: Callable[[JsonObject], str] = command
            ) -> tuple[list[str], list[str], str | None]:
                command(input)  # refused here, before the PermissionEngine asks anyone
                return [], [], None

            async def executor(
                input: JsonObject, run: ToolRun, command: Callable[[JsonObject], str] = command
            ) -> Any:
                return await run_sandboxed_command(command(input), run, runner, COMMAND_TIMEOUT_S)

            registry.register_streaming(declared, executor, paths=checked)
        return None

    return register


def _command_of(name: str, template: str) -> Callable[[JsonObject], str]:
    """Tool ``name``'s command for an input: ``template`` filled, or a ``validation_error``."""
    from air.capabilities.command_template import OptionInput, fill, read_template

    slots, _ = read_template(template)  # a template with problems is never registered

    def command(input: JsonObject) -> str:
        try:
            return fill(template, slots, input)
        except OptionInput as exc:
            raise AirException.of(
                kind=ErrorKind.VALIDATION_ERROR,
                message=f"invalid input for {name}: {exc}",
                user_action="Pass a value that is no option (it starts with '-'), or put `--` "
                "before its placeholder in the capability's command.",
            ) from None

    return command
