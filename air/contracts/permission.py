"""Permission contracts: what a tool call asks for and what the PermissionEngine decides.

Owns: ``PathCategory`` (8), ``CommandCategory`` (10), ``PermissionAction`` (6),
``PermissionGrantScope``, ``PathPolicy``, ``PermissionRequestContext``, ``PermissionDecision``,
``PermissionRecordResult``, ``PathRiskClassification``, ``CommandRiskAnalysis`` (contracts §13;
category names IMPL, see docs/decisions.md).

Only the enums, ``RiskLevel``, ``PathPolicy`` (a tool definition's) and ``PermissionAnswer`` are
defined here; the records of a request, its analysis and its decision are
``air.contracts.permission_records``'s, the prompt interface ``air.contracts.prompt``'s: a run
builds the records at its first permission check, not before its first model request
(IMPL-BOOT-12).
"""

from enum import StrEnum
from typing import Literal

from pydantic import Field

from air.contracts.ids import Contract, empty_list

__all__ = [
    "CommandCategory",
    "PathCategory",
    "PathPolicy",
    "PermissionAction",
    "PermissionAnswer",
    "PermissionGrantScope",
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
