"""WorkspaceExecutor: the seam between deciding a tool call and doing it (IMPL-LAUNCH-5).

Owns: the ``WorkspaceExecutor`` protocol and ``LocalWorkspaceExecutor``. The ToolRegistry
decides in the parent — schema check, PermissionEngine, prompts, the ``tool.*`` record, the
redaction — and only then hands the call to its workspace executor, which does it: the fs,
shell (through ``air.tools.sandbox``), git and cpp executors that touch a workspace. The local
executor runs them in this process; one beside a workspace on another host would implement
the same two methods, receiving the decided call and reaching back only through the
``ToolRun`` it is given (progress, events, artifacts — all recorded by the parent). Model keys,
the PermissionEngine and the event log never cross this seam.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from air.contracts.error import AirException, ErrorKind
from air.contracts.ids import JsonObject

if TYPE_CHECKING:
    from air.tools.run import ToolRun

__all__ = ["LocalWorkspaceExecutor", "WorkspaceExecutor", "WorkspaceToolFn"]

WorkspaceToolFn = Callable[[JsonObject, "ToolRun"], Awaitable[Any]]
"""One tool's implementation: input and run handle → output (``run.stream`` for progress)."""


class WorkspaceExecutor(Protocol):
    """Does tool calls the parent has already decided."""

    def install(self, name: str, fn: WorkspaceToolFn) -> None:
        """Make tool ``name`` available (the registry calls this as it registers the tool)."""
        ...

    async def execute(self, name: str, input: JsonObject, run: ToolRun) -> Any:
        """Do one decided call of tool ``name`` and return its output.

        Raises:
            AirException, OSError: the call failed (the registry records ``tool.failed``).
        """
        ...


class LocalWorkspaceExecutor:
    """Runs the installed tool functions in this process, next to a local workspace."""

    def __init__(self) -> None:
        self._tools: dict[str, WorkspaceToolFn] = {}

    def install(self, name: str, fn: WorkspaceToolFn) -> None:
        self._tools[name] = fn

    def names(self) -> list[str]:
        """The installed tools."""
        return list(self._tools)

    async def execute(self, name: str, input: JsonObject, run: ToolRun) -> Any:
        fn = self._tools.get(name)
        if fn is None:
            raise AirException.of(
                kind=ErrorKind.SYSTEM_ERROR,
                message=f"tool {name} is not installed in this workspace executor",
                user_action="Report this as a bug in air.",
            )
        return await fn(input, run)
