"""ToolRegistry and the built-in tools (fs, shell, git, project, artifact) (SDD §9.1, §9.4).

``register_builtin_tools(registry)`` registers every built-in tool; side effects reach the disk
or a shell only through ``ToolRegistry.call`` after ``PermissionEngine.evaluate``.
"""

from __future__ import annotations

from air.tools.fs import register_fs_tools
from air.tools.git import register_git_tools
from air.tools.registry import HeadlessPromptBroker, PromptBroker, ToolRegistry
from air.tools.run import ArtifactSink, EventRecorder, ToolRun
from air.tools.shell import SandboxRunner, register_shell_tool

__all__ = [
    "ArtifactSink",
    "EventRecorder",
    "HeadlessPromptBroker",
    "PromptBroker",
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
