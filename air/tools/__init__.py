"""ToolRegistry and the built-in tools (fs, shell, git, project, artifact) (SDD §9.1, §9.4).

``register_builtin_tools(registry)`` registers every built-in tool; side effects reach the disk
or a shell only through ``ToolRegistry.call`` after ``PermissionEngine.evaluate``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from air.tools.fs import register_fs_tools
from air.tools.git import register_git_tools
from air.tools.registry import (
    ArtifactSink,
    EventRecorder,
    HeadlessPromptBroker,
    PromptBroker,
    ToolRegistry,
    ToolRun,
)
from air.tools.shell import SandboxRunner, register_shell_tool

if TYPE_CHECKING:
    from air.tools.registry import PromptRequest, PromptResponse

__all__ = [
    "ArtifactSink",
    "EventRecorder",
    "HeadlessPromptBroker",
    "PromptBroker",
    "PromptRequest",
    "PromptResponse",
    "SandboxRunner",
    "ToolRegistry",
    "ToolRun",
    "register_builtin_tools",
]


def register_builtin_tools(
    registry: ToolRegistry, runner: SandboxRunner | None = None
) -> SandboxRunner:
    """Register fs.*, shell.run, git.*, project.info and artifact.read; return the shell runner."""
    register_fs_tools(registry)
    register_git_tools(registry)
    return register_shell_tool(registry, runner)


def __getattr__(name: str) -> Any:
    """``PromptRequest`` / ``PromptResponse`` from ``air.tools.registry`` at their first use (the
    permission records are not built before a run's first model request; IMPL-BOOT-12)."""
    if name not in ("PromptRequest", "PromptResponse"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from air.tools import registry

    value = getattr(registry, name)
    globals()[name] = value
    return value
