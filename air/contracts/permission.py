"""Permission contracts: what a tool call asks for and what the PermissionEngine decides.

Owns: ``PathCategory`` (8), ``CommandCategory`` (10), ``PermissionAction`` (6),
``PermissionGrantScope``, ``PathPolicy``, ``PermissionRequestContext``, ``PermissionDecision``,
``PermissionRecordResult``, ``PathRiskClassification``, ``CommandRiskAnalysis`` (contracts §13;
category names IMPL, see docs/decisions.md).

Also owns the permission-prompt interface (IMPL-SPINE-5): ``PermissionPrompt`` is what asks the
person about an ``ask_user`` decision (the console implements it; the headless path uses
``FailClosedPrompt``, which refuses every question), with ``PermissionPromptRequest`` (the
tool, the decision, the pending items, the command's segments and the risk) and
``PermissionPromptResponse`` (allow once / task / session / project, or deny).

The enums, ``RiskLevel``, ``PathPolicy`` (a tool definition's), ``PermissionAnswer`` and the
prompt interface are defined here; the records of a request, its analysis and its decision live
in ``air.contracts.permission_records``, public from here through a module ``__getattr__``: a
run builds them at its first permission check, not before its first model request
(IMPL-BOOT-12).
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import Field

from air.contracts.exports import lazy_export
from air.contracts.ids import Contract, empty_list

if TYPE_CHECKING:
    from air.contracts.permission_records import (
        CommandRiskAnalysis,
        CommandSegment,
        DeclaredPermissions,
        PathRiskClassification,
        PermissionDecision,
        PermissionPromptRequest,
        PermissionPromptResponse,
        PermissionRecordResult,
        PermissionRequestContext,
    )

__all__ = [
    "CommandCategory",
    "CommandRiskAnalysis",
    "CommandSegment",
    "DeclaredPermissions",
    "FailClosedPrompt",
    "PathCategory",
    "PathPolicy",
    "PathRiskClassification",
    "PermissionAction",
    "PermissionAnswer",
    "PermissionDecision",
    "PermissionGrantScope",
    "PermissionPrompt",
    "PermissionPromptRequest",
    "PermissionPromptResponse",
    "PermissionRecordResult",
    "PermissionRequestContext",
    "RiskLevel",
]


class PathCategory(StrEnum):
    PROJECT_SOURCE = "project_source"
    PROJECT_BUILD_OUTPUT = "project_build_output"
    PROJECT_GIT_INTERNAL = "project_git_internal"
    AIR_INTERNAL = "air_internal"
    OUTSIDE_PROJECT = "outside_project"
    SYSTEM_SENSITIVE = "system_sensitive"
    CREDENTIALS = "credentials"
    UNKNOWN = "unknown"


class CommandCategory(StrEnum):
    """Ordered from least to most risky; a compound command takes its riskiest segment's."""

    READ_ONLY = "read_only"
    BUILD_TEST = "build_test"
    FILE_MUTATION = "file_mutation"
    VCS_MUTATION = "vcs_mutation"
    PACKAGE_INSTALL = "package_install"
    NETWORK = "network"
    PROCESS_CONTROL = "process_control"
    DESTRUCTIVE = "destructive"
    PRIVILEGED = "privileged"
    OPAQUE = "opaque"
    """Could not be analysed (dynamic, obfuscated, unparseable): treated as the highest risk."""


class PermissionAction(StrEnum):
    ALLOW = "allow"
    ANNOUNCE_THEN_RUN = "announce_then_run"
    ASK_USER = "ask_user"
    DENY = "deny"
    BLOCK = "block"
    REFUSE = "refuse"


class PermissionGrantScope(StrEnum):
    ONCE = "once"
    TASK = "task"
    SESSION = "session"
    PROJECT = "project"


RiskLevel = Literal["none", "low", "medium", "high", "critical"]


class PathPolicy(Contract):
    """Paths a tool may touch: globs relative to the project root, or ``input:<field>``."""

    globs: list[str] = Field(default_factory=empty_list)
    from_input: list[str] = Field(default_factory=empty_list)
    """Names of input fields that hold paths (e.g. ``["path"]``)."""


PermissionAnswer = Literal["allow_once", "allow_task", "allow_session", "allow_project", "deny"]
"""The person's answer to a prompt (the console's choices; ``UiCommand.decision``)."""


class PermissionPrompt(Protocol):
    """Asks the person (the console implements it). Must answer; a refusal is ``deny``."""

    async def ask(self, request: PermissionPromptRequest) -> PermissionPromptResponse: ...


class FailClosedPrompt:
    """The headless answer: nobody is there to ask, so every question is denied."""

    async def ask(self, request: PermissionPromptRequest) -> PermissionPromptResponse:
        from air.contracts.permission_records import PermissionPromptResponse

        return PermissionPromptResponse(approved=False)


_LATE = dict.fromkeys(
    (
        "CommandRiskAnalysis",
        "CommandSegment",
        "DeclaredPermissions",
        "PathRiskClassification",
        "PermissionDecision",
        "PermissionPromptRequest",
        "PermissionPromptResponse",
        "PermissionRecordResult",
        "PermissionRequestContext",
    ),
    "permission_records",
)
"""The public names of this module that ``air.contracts.permission_records`` holds."""


def __getattr__(name: str) -> Any:
    """A name of ``_LATE`` from ``air.contracts.permission_records``, cached here afterwards."""
    return lazy_export("air.contracts", _LATE, globals(), name, owner=__name__)
