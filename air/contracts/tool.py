"""Tool contracts: definitions, execution context, result envelopes and diagnostics.

Owns: ``ToolCategory``, ``ToolPermissionSpec``, ``ToolDefinition``, ``ToolExecutionContext``,
``ToolResultEnvelope``, ``ToolEvent``, ``ToolRunStatus`` and the diagnostics symbols merged here by
SDD §3 (``Diagnostic``, ``DiagnosticSeverity``) (contracts §12, §21).
``ToolExecutionContext``, ``ToolResultEnvelope``, ``ToolEvent`` and ``Diagnostic`` live in
``air.contracts.tool_runs``, public from here through a module ``__getattr__`` (IMPL-BOOT-12).
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from air.contracts.exports import lazy_export
from air.contracts.ids import Contract, JsonObject
from air.contracts.permission import PathPolicy

if TYPE_CHECKING:
    from air.contracts.tool_runs import (
        Diagnostic,
        ToolEvent,
        ToolExecutionContext,
        ToolResultEnvelope,
    )

__all__ = [
    "Diagnostic",
    "DiagnosticSeverity",
    "ToolCategory",
    "ToolDefinition",
    "ToolEvent",
    "ToolExecutionContext",
    "ToolPermissionSpec",
    "ToolResultEnvelope",
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


class ToolRunStatus(StrEnum):
    RUNNING = "running"
    OK = "ok"
    ERROR = "error"
    CANCELLED = "cancelled"


ToolResultStatus = Literal["ok", "error", "denied", "blocked", "cancelled"]


class ToolPermissionSpec(Contract):
    read_paths: PathPolicy | None = None
    write_paths: PathPolicy | None = None
    execute: bool = False
    network: bool = False
    system_sensitive: bool = False


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


_LATE = dict.fromkeys(
    ("Diagnostic", "ToolEvent", "ToolExecutionContext", "ToolResultEnvelope"),
    "tool_runs",
)
"""The public names of this module that ``air.contracts.tool_runs`` holds."""


def __getattr__(name: str) -> Any:
    """A name of ``_LATE`` from ``air.contracts.tool_runs``, cached here afterwards."""
    return lazy_export("air.contracts", _LATE, globals(), name, owner=__name__)
