"""PermissionEngine, PathClassifier, CommandRiskAnalyzer and SecretRedactor (SDD §9.2).
"""
