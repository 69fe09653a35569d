"""PermissionEngine, PathClassifier, CommandRiskAnalyzer and SecretRedactor (SDD §9.2).

Pure policy code: it imports only ``air.contracts`` and does no I/O beyond ``realpath``/``lstat``
and reading the two permission policy files.

The names below are re-exported lazily (IMPL-BOOT-5): ``air.security.redact``, which the log
handler needs at start-up, is imported without the command analyzer, the engine and the policy
(pydantic contracts, yaml); each module is imported on its first use, as it always was.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from air.contracts.exports import lazy_export

if TYPE_CHECKING:
    from air.security.commands import CommandRiskAnalyzer, riskiest
    from air.security.engine import Evaluation, PermissionEngine
    from air.security.paths import PathClassifier, is_within
    from air.security.policy import PermissionPolicy, PolicyRule, load_policy, parse_policy
    from air.security.redact import REDACTED, SecretRedactor, looks_secret_name

__all__ = [
    "REDACTED",
    "CommandRiskAnalyzer",
    "Evaluation",
    "PathClassifier",
    "PermissionEngine",
    "PermissionPolicy",
    "PolicyRule",
    "SecretRedactor",
    "is_within",
    "load_policy",
    "looks_secret_name",
    "parse_policy",
    "riskiest",
]

_HOMES = {
    "CommandRiskAnalyzer": "commands",
    "riskiest": "commands",
    "Evaluation": "engine",
    "PermissionEngine": "engine",
    "PathClassifier": "paths",
    "is_within": "paths",
    "PermissionPolicy": "policy",
    "PolicyRule": "policy",
    "load_policy": "policy",
    "parse_policy": "policy",
    "REDACTED": "redact",
    "SecretRedactor": "redact",
    "looks_secret_name": "redact",
}


def __getattr__(name: str) -> Any:
    """A re-exported name, imported from its module on first use and cached here."""
    return lazy_export(__name__, _HOMES, globals(), name)
