"""Project and session lifecycle: ProjectStore (locate / initialize / open) and SessionManager
(open_session / close_session) (SDD §6), the project's trust (``trust``), and the project's
knowledge outbox over the session's log (``knowledge``: KnowledgeService, its recovery; it
refreshes the trust of the rule files it writes, which ``air.artifacts`` may not import).
"""
