"""Tool contracts: definitions, execution context, result envelopes and diagnostics.

Owns: ``ToolCategory``, ``ToolPermissionSpec``, ``ToolDefinition``, ``ToolRunStatus`` and
``DiagnosticSeverity`` (contracts §12, §21). ``ToolExecutionContext``, ``ToolResultEnvelope``,
``ToolEvent`` and ``Diagnostic`` are ``air.contracts.tool_runs``' (IMPL-BOOT-12).
"""

from enum import StrEnum
from typing import Literal

from pydantic import Field

from air.contracts.ids import Contract, JsonObject
from air.contracts.permission import PathPolicy

__all__ = [
    "DiagnosticSeverity",
    "ExternalTool",
    "ToolCategory",
    "ToolDefinition",
    "ToolPermissionSpec",
    "ToolResultStatus",
    "ToolRunStatus",
]


class ToolCategory(StrEnum):
    FILESYSTEM = "filesystem"
    SHELL = "shell"
    BUILD = "build"
    TEST = "test"
    DEBUG = "debug"
    STATIC_ANALYSIS = "static_analysis"
    GUI = "gui"
    NETWORK = "network"
    MEMORY = "memory"
    PROJECT = "project"
    INTERNAL = "internal"
    MCP = "mcp"
    """A tool an MCP server serves (``air.mcp``)."""


class ToolRunStatus(StrEnum):
    RUNNING = "running"
    OK = "ok"
    ERROR = "error"
    CANCELLED = "cancelled"


ExternalTool = Literal["read_only_hint", "unmarked"]
"""An external tool as its server marks it: ``read_only_hint`` (the server says it only reads:
a hint, trusted only by a rule with ``category: read_only``) or ``unmarked``."""

ToolResultStatus = Literal["ok", "error", "denied", "blocked", "cancelled"]


class ToolPermissionSpec(Contract):
    read_paths: PathPolicy | None = None
    write_paths: PathPolicy | None = None
    execute: bool = False
    network: bool = False
    system_sensitive: bool = False
    external: ExternalTool | None = None
    """A tool another program serves (an MCP server): air cannot see what it does, so every
    call asks unless a rule allows it (IMPL-MCP-2)."""


class ToolDefinition(Contract):
    name: str
    version: int = 1
    description: str
    input_schema: JsonObject
    output_schema: JsonObject = Field(default_factory=dict)
    category: ToolCategory
    permissions: ToolPermissionSpec = Field(default_factory=ToolPermissionSpec)
    streaming: bool = False


class DiagnosticSeverity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"
