"""PermissionEngine, PathClassifier, CommandRiskAnalyzer and SecretRedactor (SDD §9.2).

Pure policy code: it imports only ``air.contracts`` and does no I/O beyond ``realpath``/``lstat``
and reading the two permission policy files.
"""

from __future__ import annotations

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
