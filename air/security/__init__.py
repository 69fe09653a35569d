"""PermissionEngine, PathClassifier, CommandRiskAnalyzer and SecretRedactor (SDD §9.2).

Pure policy code: it imports only ``air.contracts`` and does no I/O beyond ``realpath``,
``lstat``, ``stat`` and reading the two permission policy files.

Re-exports nothing: each name is imported from its module (``air.security.engine``,
``air.security.redact``, ...; IMPL-STRUCT-1), so ``air.security.redact``, which the log handler
needs at start-up, is imported without the command analyzer, the engine and the policy
(pydantic contracts, yaml).
"""
